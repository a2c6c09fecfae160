//! `unigpu::random::Generator`: every element, on every backend, bit for
//! bit the host reference below, which is written from the published
//! Philox 4×32-10 algorithm (checked against Random123's known answers)
//! and the mapping docs/random.md states, without calling the library.

mod common;

use rand::Rng;
use unigpu::random::{Generator, RandomFloat, RandomInt};
use unigpu::{Context, Error, bf16, f16};

// ------------------------------------------------------------- Philox, host

/// Philox 4×32-10 (Salmon et al. 2011): ten rounds of two 32×32→64
/// multiplies, the key bumped by the Weyl constants between rounds.
fn philox(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut x0, mut x1, mut x2, mut x3] = ctr;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(0x9E37_79B9);
            k1 = k1.wrapping_add(0xBB67_AE85);
        }
        let p0 = 0xD251_1F53u64 * x0 as u64;
        let p1 = 0xCD9E_8D57u64 * x2 as u64;
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        (x0, x1, x2, x3) = (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0);
    }
    [x0, x1, x2, x3]
}

/// The words of block `b` for `seed`.
fn block(seed: u64, b: u64) -> [u32; 4] {
    philox(
        [b as u32, (b >> 32) as u32, 0, 0],
        [seed as u32, (seed >> 32) as u32],
    )
}

/// Random123's kat_vectors, the three philox4x32 10 lines (counter, key,
/// expected).
#[test]
fn philox_reference_gives_random123_known_answers() {
    let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        (
            [0; 4],
            [0; 2],
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
        ),
        (
            [u32::MAX; 4],
            [u32::MAX; 2],
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
        ),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
        ),
    ];
    for (ctr, key, want) in kat {
        assert_eq!(philox(ctr, key), want, "counter {ctr:08x?} key {key:08x?}");
    }
}

/// Word `w` of the stream (block w / 4, word w % 4).
fn word(seed: u64, w: u64) -> u32 {
    block(seed, w / 4)[(w % 4) as usize]
}

// ---------------------------------------------------- the math, host copies

// Box–Muller's logarithm, square root, sine and cosine as docs/random.md
// states them: range reduction by exact scalings, then polynomials, in
// + - * (f64) and + - * and one-rounding fma (f32) only, in this order
// (so the kernels' results are these bits).

/// c[0] + x (c[1] + x (c[2] + ...)), each step one fma.
fn horner32(x: f32, c: &[f32]) -> f32 {
    c.iter()
        .rev()
        .copied()
        .reduce(|p, ci| x.mul_add(p, ci))
        .unwrap()
}

fn recip32(d: f32) -> f32 {
    let mut r = horner32(d, &[1.474_045_8, -0.718_818_4, 0.115_989_72]);
    for _ in 0..2 {
        let e = (-d).mul_add(r, 1.0);
        r = r.mul_add(e, r);
    }
    r
}

fn ln32(u: f32) -> f32 {
    let (mut m, mut e) = (u, 0i32);
    for (lim, mul, de) in [
        (1.525_878_9e-5f32, 65536.0f32, 16),
        (0.003_906_25, 256.0, 8),
        (0.0625, 16.0, 4),
        (0.25, 4.0, 2),
        (0.5, 2.0, 1),
    ] {
        if m < lim {
            m *= mul;
            e -= de;
        }
    }
    if m < std::f32::consts::FRAC_1_SQRT_2 {
        m *= 2.0;
        e -= 1;
    }
    let s = (m - 1.0) * recip32(m + 1.0);
    let s2 = s * s;
    let p = horner32(s2, &[0.333_333_43, 0.199_943_77, 0.147_904_49]);
    let lnm = (2.0 * s).mul_add(s2 * p, 2.0 * s);
    let ef = e as f32;
    ef.mul_add(0.693_138_1, ef.mul_add(9.058_001e-6, lnm))
}

fn sqrt32(a: f32) -> f32 {
    if a == 0.0 {
        return 0.0;
    }
    let (mut x, mut k) = (a, 1.0f32);
    for (lim, mul, dk) in [
        (16.0f32, 0.0625f32, 4.0f32),
        (4.0, 0.25, 2.0),
        (1.0, 0.25, 2.0),
    ] {
        if x >= lim {
            x *= mul;
            k *= dk;
        }
    }
    for (lim, mul, dk) in [
        (1.525_878_9e-5f32, 65536.0f32, 0.003_906_25f32),
        (0.003_906_25, 256.0, 0.0625),
        (0.0625, 16.0, 0.25),
        (0.25, 4.0, 0.5),
    ] {
        if x < lim {
            x *= mul;
            k *= dk;
        }
    }
    let mut y = horner32(x, &[3.069_03, -5.664_022, 5.814_069_3, -2.224_010_2]);
    for _ in 0..2 {
        y *= (-(0.5 * x * y)).mul_add(y, 1.5);
    }
    x * y * k
}

fn sin32(x: f32) -> f32 {
    let x2 = x * x;
    let p = horner32(x2, &[-0.166_666_51, 0.008_331_958, -0.000_194_934_97]);
    (x * x2).mul_add(p, x)
}

fn cos32(x: f32) -> f32 {
    let x2 = x * x;
    horner32(
        x2,
        &[1.0, -0.5, 0.041_666_646, -0.001_388_734_2, 2.443_585_3e-5],
    )
}

fn recip64(d: f64) -> f64 {
    let mut r = 0.985_061_500_048_344_7 - 0.239_015_999_226_484_14 * d;
    for _ in 0..4 {
        r = r + r * (1.0 - d * r);
    }
    r
}

fn ln64(u: f64) -> f64 {
    let (mut m, mut e) = (u, 0i32);
    for (lim, mul, de) in [
        (2f64.powi(-32), 2f64.powi(32), 32),
        (2f64.powi(-16), 65536.0, 16),
        (2f64.powi(-8), 256.0, 8),
        (0.0625, 16.0, 4),
        (0.25, 4.0, 2),
        (0.5, 2.0, 1),
    ] {
        if m < lim {
            m *= mul;
            e -= de;
        }
    }
    if m < std::f64::consts::FRAC_1_SQRT_2 {
        m *= 2.0;
        e -= 1;
    }
    let s = (m - 1.0) * recip64(m + 1.0);
    let s2 = s * s;
    // 1/3, 1/5, ..., 1/23 as f64, Horner from the highest.
    let mut p = 1.0 / 23.0;
    for d in [21.0, 19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0] {
        p = 1.0 / d + s2 * p;
    }
    let lnm = (s + s) + (s + s) * (s2 * p);
    let ef = e as f64;
    ef * 0.693_147_180_369_123_8 + (ef * 1.908_214_929_270_587_7e-10 + lnm)
}

fn sqrt64(a: f64) -> f64 {
    if a == 0.0 {
        return 0.0;
    }
    let (mut x, mut k) = (a, 1.0f64);
    for (lim, mul, dk) in [(16.0, 0.0625, 4.0), (4.0, 0.25, 2.0), (1.0, 0.25, 2.0)] {
        if x >= lim {
            x *= mul;
            k *= dk;
        }
    }
    for (lim, mul, dk) in [
        (2f64.powi(-32), 2f64.powi(32), 2f64.powi(-16)),
        (2f64.powi(-16), 65536.0, 2f64.powi(-8)),
        (2f64.powi(-8), 256.0, 0.0625),
        (0.0625, 16.0, 0.25),
        (0.25, 4.0, 0.5),
    ] {
        if x < lim {
            x *= mul;
            k *= dk;
        }
    }
    let mut y =
        2.628_649_008_027_353_2 + x * (-3.133_970_819_265_514 + x * 1.523_184_174_287_219_2);
    for _ in 0..4 {
        y = y * (1.5 - 0.5 * x * y * y);
    }
    x * y * k
}

/// 1/n! with the sign of the Taylor term, n = 3, 5, ..., 19 (sine) or
/// 4, 6, ..., 20 (cosine), as f64 (each rounded once from the exact
/// factorial).
fn taylor(n: u32) -> f64 {
    let f: f64 = (1..=n as u64).map(|k| k as f64).product();
    let sign = if (n / 2) % 2 == 1 { -1.0 } else { 1.0 };
    sign / f
}

fn sin64(x: f64) -> f64 {
    let x2 = x * x;
    let mut p = taylor(19);
    for n in [17, 15, 13, 11, 9, 7, 5, 3] {
        p = taylor(n) + x2 * p;
    }
    x + x * (x2 * p)
}

fn cos64(x: f64) -> f64 {
    let x2 = x * x;
    let mut p = taylor(20);
    for n in [18, 16, 14, 12, 10, 8, 6, 4] {
        p = taylor(n) + x2 * p;
    }
    1.0 + x2 * (-0.5 + x2 * p)
}

/// (sin θ, cos θ) for θ = q·π/2 + x.
fn by_quadrant<F: std::ops::Neg<Output = F> + Copy>(q: u32, s: F, c: F) -> (F, F) {
    match q & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// Box–Muller, f32: (cos, sin) elements from words (a, b).
fn box_muller32(a: u32, b: u32) -> (f32, f32) {
    // (a >> 8)·256 is exact: one rounding, as the kernels' fma.
    let u = (((a >> 8) as f32 * 256.0 + (a & 255) as f32) + 1.0) * 2f32.powi(-32);
    let radius = sqrt32(-2.0 * ln32(u));
    let p = b >> 8;
    let q = ((p >> 21) + 1) >> 1;
    let x = (p.wrapping_sub(q << 22) as i32) as f32 * (2.0 * std::f32::consts::PI * 2f32.powi(-24));
    let (s, c) = by_quadrant(q, sin32(x), cos32(x));
    (radius * c, radius * s)
}

fn box_muller64(w: [u32; 4]) -> (f64, f64) {
    let u = (((w[0] >> 11) as f64 * 2f64.powi(32) + w[1] as f64) + 1.0) * 2f64.powi(-53);
    let radius = sqrt64(-2.0 * ln64(u));
    let q = ((w[2] >> 29) + 1) >> 1;
    let r = (w[2].wrapping_sub(q << 30) as i32) as f64 * 2f64.powi(21) + (w[3] >> 11) as f64;
    let x = r * (2.0 * std::f64::consts::PI * 2f64.powi(-53));
    let (s, c) = by_quadrant(q, sin64(x), cos64(x));
    (radius * c, radius * s)
}

// ------------------------------------------- the mapping, per element type

/// The host's element `i` of a call starting at `first` block.
trait Reference: RandomFloat + Copy + std::fmt::Debug {
    fn uniform_ref(seed: u64, first: u64, i: usize) -> Self;
    fn normal_ref(seed: u64, first: u64, i: usize, mean: f64, std: f64) -> Self;
    fn bits(self) -> u64;
}

fn f32_uniform(seed: u64, first: u64, i: usize, bits: u32) -> f32 {
    let w = block(seed, first + (i / 4) as u64)[i % 4];
    (w >> (32 - bits)) as f32 * 2f32.powi(-(bits as i32))
}

fn f32_normal(seed: u64, first: u64, i: usize, mean: f64, std: f64) -> f32 {
    let w = block(seed, first + (i / 4) as u64);
    let pair = (i % 4) / 2;
    let (z0, z1) = box_muller32(w[2 * pair], w[2 * pair + 1]);
    let z = if i.is_multiple_of(2) { z0 } else { z1 };
    (std as f32).mul_add(z, mean as f32)
}

impl Reference for f32 {
    fn uniform_ref(seed: u64, first: u64, i: usize) -> f32 {
        f32_uniform(seed, first, i, 24)
    }
    fn normal_ref(seed: u64, first: u64, i: usize, mean: f64, std: f64) -> f32 {
        f32_normal(seed, first, i, mean, std)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Reference for f16 {
    fn uniform_ref(seed: u64, first: u64, i: usize) -> f16 {
        f16::from_f32(f32_uniform(seed, first, i, 11))
    }
    fn normal_ref(seed: u64, first: u64, i: usize, mean: f64, std: f64) -> f16 {
        f16::from_f32(f32_normal(seed, first, i, mean, std))
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Reference for bf16 {
    fn uniform_ref(seed: u64, first: u64, i: usize) -> bf16 {
        bf16::from_f32(f32_uniform(seed, first, i, 8))
    }
    fn normal_ref(seed: u64, first: u64, i: usize, mean: f64, std: f64) -> bf16 {
        bf16::from_f32(f32_normal(seed, first, i, mean, std))
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Reference for f64 {
    fn uniform_ref(seed: u64, first: u64, i: usize) -> f64 {
        let w = block(seed, first + (i / 2) as u64);
        let (a, b) = (w[2 * (i % 2)], w[2 * (i % 2) + 1]);
        ((a >> 11) as f64 * 2f64.powi(32) + b as f64) * 2f64.powi(-53)
    }
    fn normal_ref(seed: u64, first: u64, i: usize, mean: f64, std: f64) -> f64 {
        let (z0, z1) = box_muller64(block(seed, first + (i / 2) as u64));
        mean + std * if i.is_multiple_of(2) { z0 } else { z1 }
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

trait IntReference: RandomInt + std::fmt::Debug + PartialEq {
    fn randint_ref(seed: u64, first: u64, i: usize, low: Self, high: Self) -> Self;
    fn random_bounds(rng: &mut impl Rng) -> (Self, Self);
}

impl IntReference for i32 {
    /// ⌊W·r / 2^64⌋ with W the element's 64 bits (first word high).
    fn randint_ref(seed: u64, first: u64, i: usize, low: i32, high: i32) -> i32 {
        let b = block(seed, first + (i / 2) as u64);
        let w = ((b[2 * (i % 2)] as u128) << 32) | b[2 * (i % 2) + 1] as u128;
        let r = high.wrapping_sub(low) as u32 as u128;
        low.wrapping_add(((w * r) >> 64) as u32 as i32)
    }
    fn random_bounds(rng: &mut impl Rng) -> (i32, i32) {
        random_pair(rng, |rng| rng.random(), |rng| rng.random_range(-1000..1000))
    }
}

impl IntReference for i64 {
    /// ⌊W·r / 2^128⌋ with W all 128 bits of the block (first word highest).
    fn randint_ref(seed: u64, first: u64, i: usize, low: i64, high: i64) -> i64 {
        let b = block(seed, first + i as u64);
        let w = b.iter().fold(0u128, |acc, &x| (acc << 32) | x as u128);
        let r = high.wrapping_sub(low) as u64 as u128;
        // w·r needs 192 bits: split w into halves.
        let (wh, wl) = (w >> 64, w & u64::MAX as u128);
        let top = wh * r + ((wl * r) >> 64);
        low.wrapping_add((top >> 64) as u64 as i64)
    }
    fn random_bounds(rng: &mut impl Rng) -> (i64, i64) {
        random_pair(rng, |rng| rng.random(), |rng| rng.random_range(-1000..1000))
    }
}

/// Bounds drawn from the whole type half the time (wide ranges, where the
/// multiply-shift's high words matter), else small ones.
fn random_pair<T: PartialOrd + Copy, R: Rng>(
    rng: &mut R,
    wide: impl Fn(&mut R) -> T,
    small: impl Fn(&mut R) -> T,
) -> (T, T) {
    loop {
        let (a, b) = if rng.random::<bool>() {
            (wide(rng), wide(rng))
        } else {
            (small(rng), small(rng))
        };
        if a < b {
            return (a, b);
        } else if b < a {
            return (b, a);
        }
    }
}

// -------------------------------------------------------------- the checks

/// A random seed, an offset (any word, not only a block's first) and a
/// length, often not a multiple of 4.
fn random_case() -> (u64, u64, usize) {
    let mut rng = rand::rng();
    let offset = if rng.random::<bool>() {
        rng.random_range(0..1u64 << 20)
    } else {
        rng.random::<u64>() >> 2
    };
    (rng.random(), offset, common::random_len(5000))
}

/// Three random cases, the short lengths 1 to 5 and 7 at random offsets,
/// and a call whose blocks cross 2^32 (the counter's low word carries into
/// its high word partway through).
fn cases() -> Vec<(u64, u64, usize)> {
    let mut all: Vec<_> = (0..3).map(|_| random_case()).collect();
    for n in [1, 2, 3, 4, 5, 7] {
        let (seed, offset, _) = random_case();
        all.push((seed, offset, n));
    }
    let (seed, _, _) = random_case();
    all.push((
        seed,
        ((1u64 << 32) - 3) * 4 - rand::rng().random_range(0..4),
        41,
    ));
    all
}

fn check_floats<T: Reference>(got: &[T], what: &str, want: impl Fn(usize) -> T) {
    for (i, g) in got.iter().enumerate() {
        let w = want(i);
        assert_eq!(
            g.bits(),
            w.bits(),
            "{what} element {i} of {}: {g:?}, the host's {w:?}",
            got.len()
        );
    }
}

fn uniform_case<T: Reference>(ctx: &Context, (seed, offset, n): (u64, u64, usize)) {
    let mut g = Generator::new(seed);
    g.set_offset(offset);
    let first = offset.div_ceil(4);
    let got = g.uniform::<T>(ctx, n).unwrap().download().unwrap();
    check_floats(
        &got,
        &format!("uniform {} seed {seed} offset {offset}", T::DTYPE),
        |i| T::uniform_ref(seed, first, i),
    );
    let per_block = if T::DTYPE == unigpu::DType::F64 { 2 } else { 4 };
    assert_eq!(g.offset(), (first + n.div_ceil(per_block) as u64) * 4);
}

fn normal_case<T: Reference>(ctx: &Context, (seed, offset, n): (u64, u64, usize)) {
    let mut rng = rand::rng();
    let (mean, std) = (rng.random_range(-10.0..10.0), rng.random_range(0.0..5.0));
    let mut g = Generator::new(seed);
    g.set_offset(offset);
    let first = offset.div_ceil(4);
    let got = g
        .normal::<T>(ctx, n, mean, std)
        .unwrap()
        .download()
        .unwrap();
    check_floats(
        &got,
        &format!(
            "normal {} seed {seed} offset {offset} mean {mean} std {std}",
            T::DTYPE
        ),
        |i| T::normal_ref(seed, first, i, mean, std),
    );
}

fn randint_case<T: IntReference>(ctx: &Context, (seed, offset, n): (u64, u64, usize)) {
    let (low, high) = T::random_bounds(&mut rand::rng());
    let mut g = Generator::new(seed);
    g.set_offset(offset);
    let first = offset.div_ceil(4);
    let got = g
        .randint::<T>(ctx, n, low, high)
        .unwrap()
        .download()
        .unwrap();
    for (i, v) in got.iter().enumerate() {
        let want = T::randint_ref(seed, first, i, low, high);
        assert_eq!(
            *v,
            want,
            "randint {} [{low}, {high}) seed {seed} offset {offset}: element {i} of {n}",
            T::DTYPE
        );
    }
}

on_every_backend!(uniform_is_the_host_reference_bit_for_bit, |ctx| {
    for case in cases() {
        uniform_case::<f32>(ctx, case);
        uniform_case::<f16>(ctx, case);
        uniform_case::<bf16>(ctx, case);
        uniform_case::<f64>(ctx, case);
    }
});

on_every_backend!(normal_is_the_host_reference_bit_for_bit, |ctx| {
    for case in cases() {
        normal_case::<f32>(ctx, case);
        normal_case::<f16>(ctx, case);
        normal_case::<bf16>(ctx, case);
        normal_case::<f64>(ctx, case);
    }
});

on_every_backend!(randint_is_the_host_reference_bit_for_bit, |ctx| {
    for case in cases() {
        randint_case::<i32>(ctx, case);
        randint_case::<i64>(ctx, case);
    }
});

on_every_backend!(
    consecutive_calls_continue_the_stream_without_overlap,
    |ctx| {
        let seed = rand::rng().random::<u64>();
        let mut g = Generator::new(seed);
        let n1 = common::random_len(1000);
        let n2 = common::random_len(1000);
        // f32 uniforms take one word each, whole blocks a call.
        let a = g.uniform::<f32>(ctx, n1).unwrap().download().unwrap();
        let b1 = n1.div_ceil(4) as u64;
        assert_eq!(g.offset(), b1 * 4);
        let mut b = ctx.alloc::<f32>(n2).unwrap();
        g.uniform_into(&mut b).unwrap();
        let b = b.download().unwrap();
        check_floats(&a, "first call", |i| f32_uniform(seed, 0, i, 24));
        check_floats(&b, "second call", |i| f32_uniform(seed, b1, i, 24));
        // The second call's first element is the stream's word right after
        // the first call's last block.
        assert_eq!(b[0], (word(seed, b1 * 4) >> 8) as f32 * 2f32.powi(-24));
        // Other calls in between move on the same stream: normal f64 (2 a
        // block), then randint i32 (2 a block).
        let z = g
            .normal::<f64>(ctx, 3, 1.0, 2.0)
            .unwrap()
            .download()
            .unwrap();
        let b2 = b1 + n2.div_ceil(4) as u64;
        check_floats(&z, "third call", |i| f64::normal_ref(seed, b2, i, 1.0, 2.0));
        let k = g.randint::<i32>(ctx, 5, 0, 10).unwrap().download().unwrap();
        for (i, v) in k.iter().enumerate() {
            assert_eq!(*v, i32::randint_ref(seed, b2 + 2, i, 0, 10));
        }
        assert_eq!(g.offset(), (b2 + 2 + 3) * 4);
        // No elements: nothing used.
        let e = g.normal::<f32>(ctx, 0, 0.0, 1.0).unwrap();
        assert_eq!(e.len(), 0);
        assert_eq!(g.offset(), (b2 + 5) * 4);
    }
);

on_every_backend!(shapes_are_filled_in_row_major_order, |ctx| {
    let seed = rand::rng().random::<u64>();
    let mut g = Generator::new(seed);
    let z = g.normal::<f32>(ctx, [3, 5], 0.5, 2.0).unwrap();
    assert_eq!(z.shape(), &[3, 5]);
    check_floats(&z.download().unwrap(), "normal [3, 5]", |i| {
        f32::normal_ref(seed, 0, i, 0.5, 2.0)
    });
    // 15 elements are 4 blocks.
    let k = g.randint::<i64>(ctx, vec![2, 1, 3], -4, 9).unwrap();
    assert_eq!(k.shape(), &[2, 1, 3]);
    for (i, v) in k.download().unwrap().iter().enumerate() {
        assert_eq!(*v, i64::randint_ref(seed, 4, i, -4, 9));
    }
    let mut u = ctx.alloc::<f64>([2, 2]).unwrap();
    g.uniform_into(&mut u).unwrap();
    check_floats(&u.download().unwrap(), "uniform_into [2, 2]", |i| {
        f64::uniform_ref(seed, 10, i)
    });
    assert_eq!(g.offset(), 12 * 4);
});

// A call whose launch fails uses nothing: a strided array (a DLPack
// import of a transposed tensor) is refused by the launch, after the
// arguments were checked.
on_every_backend!(a_refused_launch_leaves_the_offset, |ctx| {
    if ctx.backend() == unigpu::Backend::Vulkan {
        return; // wgpu hands out no buffer address: vulkan arrays do not export
    }
    let mut a = ctx.zeros::<f32>([4, 6]).unwrap();
    let mut tensor = a.to_dlpack(unigpu::DlpackSync::Host).unwrap();
    tensor
        .set_layout(&unigpu::Layout::contiguous(&[4, 6]).transpose(), 4)
        .unwrap();
    let mut b = ctx.from_dlpack(tensor).unwrap();
    let b = b.get_mut::<f32>().unwrap();
    assert!(!b.is_contiguous());
    let mut g = Generator::new(7);
    g.set_offset(40);
    for e in [
        g.normal_into(b, 0.0, 1.0).unwrap_err(),
        g.uniform_into(b).unwrap_err(),
    ] {
        assert!(e.to_string().contains("strided"), "{e}");
    }
    assert_eq!(g.offset(), 40);
});

on_every_backend!(large_samples_have_the_right_moments, |ctx| {
    let n = 1 << 20;
    let mut g = Generator::new(rand::rng().random());
    let moments = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (
            m,
            v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64,
        )
    };
    // Mean and variance within 6 standard errors.
    let u: Vec<f64> = g
        .uniform::<f32>(ctx, n)
        .unwrap()
        .download()
        .unwrap()
        .iter()
        .map(|&x| x as f64)
        .collect();
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    let (m, v) = moments(&u);
    assert!(
        (m - 0.5).abs() < 6.0 * (1.0 / 12.0 / n as f64).sqrt(),
        "uniform mean {m}"
    );
    assert!(
        (v - 1.0 / 12.0).abs() < 6.0 * (1.0 / 180.0 / n as f64).sqrt(),
        "uniform variance {v}"
    );
    for z in [
        g.normal::<f32>(ctx, n, 3.0, 2.0)
            .unwrap()
            .download()
            .unwrap()
            .iter()
            .map(|&x| x as f64)
            .collect::<Vec<_>>(),
        g.normal::<f64>(ctx, n, 3.0, 2.0)
            .unwrap()
            .download()
            .unwrap(),
    ] {
        let (m, v) = moments(&z);
        assert!(
            (m - 3.0).abs() < 6.0 * (4.0 / n as f64).sqrt(),
            "normal mean {m}"
        );
        assert!(
            (v - 4.0).abs() < 6.0 * (2.0 * 16.0 / n as f64).sqrt(),
            "normal variance {v}"
        );
        // Tails: |z| > 3σ about 0.27% of the time.
        let tail = z.iter().filter(|x| (*x - 3.0).abs() > 6.0).count() as f64 / n as f64;
        assert!((tail - 0.0027).abs() < 0.0006, "3-sigma tail {tail}");
    }
    let k = g.randint::<i64>(ctx, n, -3, 4).unwrap().download().unwrap();
    for value in -3..4 {
        let c = k.iter().filter(|&&x| x == value).count() as f64 / n as f64;
        assert!((c - 1.0 / 7.0).abs() < 0.003, "randint {value}: {c}");
    }
});

on_every_backend!(bad_arguments_are_errors, |ctx| {
    let mut g = Generator::new(1);
    let bad = |e: Error, text: &str| match &e {
        Error::KernelArgs { kernel, message } => {
            assert!(kernel.starts_with("Generator::"), "{e}");
            assert!(message.contains(text), "{e}");
        }
        other => panic!("expected KernelArgs, got {other:?}"),
    };
    bad(g.randint::<i32>(ctx, 4, 5, 5).unwrap_err(), "must be below");
    bad(
        g.randint::<i64>(ctx, 4, 6, -1).unwrap_err(),
        "must be below",
    );
    bad(
        g.normal::<f32>(ctx, 4, 0.0, -1.0).unwrap_err(),
        "std must be",
    );
    bad(
        g.normal::<f64>(ctx, 4, 0.0, f64::NAN).unwrap_err(),
        "std must be",
    );
    bad(
        g.normal::<f64>(ctx, 4, 0.0, f64::INFINITY).unwrap_err(),
        "std must be",
    );
    bad(
        g.normal::<f32>(ctx, 4, f64::NAN, 1.0).unwrap_err(),
        "mean must be",
    );
    let mut out = ctx.alloc::<f32>(4).unwrap();
    bad(
        g.normal_into(&mut out, 0.0, -0.5).unwrap_err(),
        "std must be",
    );
    let mut ints = ctx.alloc::<i32>(4).unwrap();
    bad(
        g.randint_into(&mut ints, 0, -1).unwrap_err(),
        "must be below",
    );
    // Failed calls use nothing.
    assert_eq!(g.offset(), 0);
    // The end of the 64-bit block counter.
    g.set_offset(u64::MAX - 3);
    bad(g.uniform::<f32>(ctx, 1).unwrap_err(), "the stream ends");
    assert_eq!(g.offset(), u64::MAX - 3);
});

// ------------------------------------------ the math's accuracy, host only

/// The host copies of the device math against f64 std over their domains:
/// the bounds docs/random.md states (in ulps of the result; absolute near
/// the zeros of ln, sin).
#[test]
fn the_device_math_is_accurate() {
    let mut rng = rand::rng();
    let (mut ln_e, mut sqrt_e, mut sin_e, mut cos_e) = (0f64, 0f64, 0f64, 0f64);
    let (mut ln_e64, mut sqrt_e64, mut sin_e64, mut cos_e64) = (0f64, 0f64, 0f64, 0f64);
    for _ in 0..200_000 {
        // u down to 2^-32, as the kernels make it.
        let u = (rng.random::<u32>() >> rng.random_range(0..32)) as f32 * 2f32.powi(-32)
            + 2f32.powi(-32);
        if u < 1.0 {
            ln_e = ln_e.max(rel(ln32(u) as f64, (u as f64).ln()) / f32::EPSILON as f64);
        }
        let a = rng.random_range(1e-7f32..40.0);
        sqrt_e = sqrt_e.max(rel(sqrt32(a) as f64, (a as f64).sqrt()) / f32::EPSILON as f64);
        let x = rng.random_range(-std::f32::consts::FRAC_PI_4..std::f32::consts::FRAC_PI_4);
        sin_e = sin_e.max((sin32(x) as f64 - (x as f64).sin()).abs() / f32::EPSILON as f64);
        cos_e = cos_e.max(rel(cos32(x) as f64, (x as f64).cos()) / f32::EPSILON as f64);
        let u = ((rng.random::<u64>() >> 11) + 1) as f64 * 2f64.powi(-53);
        if u < 1.0 {
            ln_e64 = ln_e64.max(rel(ln64(u), u.ln()) / f64::EPSILON);
        }
        let a = rng.random_range(1e-16f64..80.0);
        sqrt_e64 = sqrt_e64.max(rel(sqrt64(a), a.sqrt()) / f64::EPSILON);
        let x = rng.random_range(-std::f64::consts::FRAC_PI_4..std::f64::consts::FRAC_PI_4);
        sin_e64 = sin_e64.max((sin64(x) - x.sin()).abs() / f64::EPSILON);
        cos_e64 = cos_e64.max(rel(cos64(x), x.cos()) / f64::EPSILON);
    }
    println!(
        "in units of the type's epsilon (2^-23, 2^-52): f32 ln {ln_e:.2} (relative), sqrt {sqrt_e:.2}, sin {sin_e:.2} (absolute), cos {cos_e:.2}; \
         f64 ln {ln_e64:.2}, sqrt {sqrt_e64:.2}, sin {sin_e64:.2}, cos {cos_e64:.2}"
    );
    for (name, e, bound) in [
        ("f32 ln", ln_e, 3.0),
        ("f32 sqrt", sqrt_e, 3.0),
        ("f32 sin", sin_e, 1.0),
        ("f32 cos", cos_e, 1.0),
        ("f64 ln", ln_e64, 3.0),
        ("f64 sqrt", sqrt_e64, 3.0),
        ("f64 sin", sin_e64, 1.0),
        ("f64 cos", cos_e64, 1.0),
    ] {
        assert!(e <= bound, "{name}: {e} epsilons, over {bound}");
    }
}

/// Whole Box–Muller pairs against f64 std from the same words: the
/// quadrant choice and the angle's scaling, not only the polynomials.
#[test]
fn box_muller_pairs_match_f64_std() {
    let mut rng = rand::rng();
    let (mut e32, mut e64) = (0f64, 0f64);
    for _ in 0..200_000 {
        let w: [u32; 4] = rng.random();
        let u = (((w[0] >> 8) as f32 * 256.0 + (w[0] & 255) as f32) + 1.0) as f64 * 2f64.powi(-32);
        let (r, t) = (
            (-2.0 * u.ln()).sqrt(),
            std::f64::consts::TAU * (w[1] >> 8) as f64 * 2f64.powi(-24),
        );
        let (z0, z1) = box_muller32(w[0], w[1]);
        e32 = e32.max(
            (z0 as f64 - r * t.cos())
                .abs()
                .max((z1 as f64 - r * t.sin()).abs())
                / r.max(1.0),
        );
        let u = (((w[0] >> 11) as u64) << 32 | w[1] as u64) as f64 + 1.0;
        let u = u * 2f64.powi(-53);
        let phase = ((w[2] as u64) << 21 | (w[3] >> 11) as u64) as f64 * 2f64.powi(-53);
        let (r, t) = ((-2.0 * u.ln()).sqrt(), std::f64::consts::TAU * phase);
        let (z0, z1) = box_muller64(w);
        e64 = e64.max((z0 - r * t.cos()).abs().max((z1 - r * t.sin()).abs()) / r.max(1.0));
    }
    println!("Box-Muller: largest error / max(1, radius): f32 {e32:e}, f64 {e64:e}");
    // The smallest u is 2^-32 (f32) and 2^-53 (f64): the tails reach
    // √(64 ln 2) = 6.66 and √(106 ln 2) = 8.57.
    assert!(
        (box_muller32(0, 0).0 - 6.660_437).abs() < 1e-5,
        "{:?}",
        box_muller32(0, 0)
    );
    assert!((box_muller64([0; 4]).0 - (106f64 * 2f64.ln()).sqrt()).abs() < 1e-14);
    assert!(e32 < 4.0 * f32::EPSILON as f64, "f32: {e32:e}");
    // std's own ln, sqrt, sin and cos err by about an ulp each.
    assert!(e64 < 16.0 * f64::EPSILON, "f64: {e64:e}");
}

fn rel(got: f64, want: f64) -> f64 {
    ((got - want) / want).abs()
}
