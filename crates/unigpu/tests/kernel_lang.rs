//! `#[unigpu::kernel]`: the language's later features (fma, pow, round,
//! log, bool/usize parameters, f16/bf16 arrays) run on every backend, each
//! element checked against a host reference written without the macro.
//! (A file of its own beside kernel_macro.rs, which holds the first ones.)

mod common;

use common::{random_len, random_vec};
use unigpu::{Backend, Grid, bf16, f16};

/// Random f32s whose fused and unfused `a * b + c` often differ: a third
/// of the `c`s cancel the product but for its rounding error.
fn fma_inputs(n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (mut a, mut b) = (random_vec::<f32>(n), random_vec::<f32>(n));
    let mut c = random_vec::<f32>(n);
    for i in (0..n).step_by(3) {
        c[i] = -(a[i] * b[i]);
    }
    // Where rounding twice through f64 goes wrong: (1 + 2^-12)^2 is
    // 1 + 2^-11 + 2^-24, half an f32 ulp above 1 + 2^-11, and a `c` far
    // below an f64 ulp decides the f32 rounding; scaled and signed at random.
    let r = random_vec::<u32>(n);
    for i in (1..n).step_by(3).take(200) {
        let (e1, e2) = ((r[i] % 40) as i32 - 20, (r[i] / 40 % 40) as i32 - 20);
        let sign = if r[i] & (1 << 20) != 0 { -1.0 } else { 1.0 };
        let csign = if r[i] & (1 << 21) != 0 { -1.0 } else { 1.0 };
        a[i] = (1.0 + 2f32.powi(-12)) * 2f32.powi(e1);
        b[i] = sign * (1.0 + 2f32.powi(-12)) * 2f32.powi(e2);
        c[i] = csign * 2f32.powi(e1 + e2 - 60 - (r[i] >> 24) as i32 % 20);
    }
    (a, b, c)
}

/// `fma(a, b, c)` and `a.mul_add(b, c)` round once on every backend
/// (vulkan: WGSL's `fma` where the adapter's is fused, else an emulation
/// through f64 chosen when the kernel is built).
#[unigpu::kernel]
fn fused(a: &[f32], b: &[f32], c: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i >= a.len() {
        return;
    }
    out[2 * i] = fma(a[i], b[i], c[i]);
    out[2 * i + 1] = a[i].mul_add(-b[i], c[i]);
}

on_every_backend!(fma_rounds_once_everywhere, |ctx| {
    let k = fused::kernel(ctx).unwrap();
    let n = random_len(1 << 14);
    let (ha, hb, hc) = fma_inputs(n);
    let (a, b, c) = (
        ctx.upload(&ha).unwrap(),
        ctx.upload(&hb).unwrap(),
        ctx.upload(&hc).unwrap(),
    );
    let mut out = ctx.zeros::<f32>(2 * n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&a, &b, &c, &mut out))
        .unwrap();
    let got = out.download().unwrap();
    let mut differ = 0;
    for i in 0..n {
        let want = [ha[i].mul_add(hb[i], hc[i]), ha[i].mul_add(-hb[i], hc[i])];
        differ += usize::from(want[0] != ha[i] * hb[i] + hc[i]);
        for j in 0..2 {
            assert_eq!(
                got[2 * i + j].to_bits(),
                want[j].to_bits(),
                "fma {j} of ({}, {}, {}): {} vs {}",
                ha[i],
                hb[i],
                hc[i],
                got[2 * i + j],
                want[j]
            );
        }
    }
    // The inputs do tell one rounding from two.
    assert!(
        n < 30 || differ > 0,
        "no input where fma differs from a * b + c"
    );
});

#[unigpu::kernel]
fn fused64(a: &[f64], out: &mut [f64]) {
    let i = global_id().x;
    if i < a.len() {
        out[i] = a[i].mul_add(a[i], -1.0);
    }
}

on_every_backend!(
    f64_fma_rounds_once_or_is_refused_naming_the_adapter,
    |ctx| {
        if ctx.backend() == Backend::Vulkan
            && common::detail(ctx, "fma f64").is_none_or(|v| v != "fused")
        {
            let e = fused64::kernel(ctx).unwrap_err().to_string();
            let name = ctx.device_info().unwrap().name;
            assert!(
                e.contains("fused64") && e.contains(&name) && e.contains("fma"),
                "{e}"
            );
            return;
        }
        let k = fused64::kernel(ctx).unwrap();
        let n = random_len(5000);
        // 1 + small: x * x - 1 loses the low bits unless fused.
        let hx: Vec<f64> = random_vec::<f64>(n)
            .iter()
            .map(|v| 1.0 + v * 1e-9)
            .collect();
        let x = ctx.upload(&hx).unwrap();
        let mut out = ctx.zeros::<f64>(n).unwrap();
        k.launch(ctx, Grid::for_elems(n), (&x, &mut out)).unwrap();
        let got = out.download().unwrap();
        for i in 0..n {
            let want = hx[i].mul_add(hx[i], -1.0);
            assert_eq!(got[i].to_bits(), want.to_bits(), "x {}", hx[i]);
        }
    }
);

/// `round` (half away from zero, Rust's), `powf`/`pow`, `log`/`ln` and
/// `x.log(b)`.
#[unigpu::kernel]
fn more_math(x: &[f32], y: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    let k = i * 5;
    out[k] = x[i].round();
    out[k + 1] = x[i].powf(y[i]);
    out[k + 2] = pow(x[i], y[i]);
    out[k + 3] = log(x[i].abs() + 0.5) + (x[i].abs() + 0.5).ln();
    out[k + 4] = (x[i].abs() + 0.5).log(y[i].abs() + 2.0);
}

/// f64 `pow` (its WGSL helper, checked by naga below).
#[unigpu::kernel]
fn pow64(x: &[f64], y: &[f64], out: &mut [f64]) {
    let i = global_id().x;
    if i < x.len() {
        out[i] = x[i].powf(y[i]);
    }
}

on_every_backend!(round_pow_and_log_match_the_host, |ctx| {
    let k = more_math::kernel(ctx).unwrap();
    let n = random_len(3000).max(40);
    let mut hx: Vec<f32> = random_vec::<f32>(n).iter().map(|v| v / 100.0).collect();
    let mut hy: Vec<f32> = random_vec::<f32>(n).iter().map(|v| v / 300.0).collect();
    // Halves (ties round away from zero) and integer exponents of
    // negative bases, then pow's special cases (C's, which Rust follows).
    for i in 0..n / 4 {
        hx[i] = (hx[i] * 8.0).round() / 2.0;
        hy[i] = hy[i].round();
    }
    let inf = f32::INFINITY;
    let special = [
        (-2.0, 3.0),
        (-2.0, 0.5),
        (0.0, -1.0),
        (-0.0, -1.0),
        (-0.0, 3.0),
        (-0.0, 0.5),
        (-inf, 0.5),
        (-inf, 3.0),
        (-inf, -3.0),
        (1.0, f32::NAN),
        (f32::NAN, 0.0),
        (-1.0, inf),
        (0.5, inf),
        (2.0, -inf),
        (-8.0, 1.0 / 3.0),
        (inf, -2.0),
        (2.5, -2.0),
        (-2.5, 2.0),
        (f32::NAN, 2.0),
        (-3.0, 1e30),
        (0.5, -0.5),
        (8388609.0, 1.0),
    ];
    for (j, (a, b)) in special.iter().enumerate() {
        hx[n / 4 + j] = *a;
        hy[n / 4 + j] = *b;
    }
    let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
    let mut out = ctx.zeros::<f32>(5 * n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&x, &y, &mut out))
        .unwrap();
    let got = out.download().unwrap();
    // The CPU's ln in a grid-stride kernel is computed in f64 and rounded
    // once (within 1 ulp of the correctly rounded result, as libm's logf,
    // not bit for bit the same): 4 ulps cover the sum and the ratio of two
    // (pow is libm's); a GPU's libraries are looser.
    let tolerance = match ctx.backend() {
        Backend::Cpu => 4.0 * f32::EPSILON,
        _ => 1e-4,
    };
    for i in 0..n {
        let (v, w) = (hx[i], hy[i]);
        let a = v.abs() + 0.5;
        let want = [
            v.round(),
            v.powf(w),
            v.powf(w),
            a.ln() + a.ln(),
            a.ln() / (w.abs() + 2.0).ln(),
        ];
        for (j, want) in want.iter().enumerate() {
            let g = got[5 * i + j];
            let ok = if want.is_nan() {
                g.is_nan()
            } else if j == 0 || want.is_infinite() || *want == 0.0 {
                // round is exact everywhere, and so are pow's special
                // values (zeros and infinities, with their signs).
                g.to_bits() == want.to_bits()
            } else {
                (g - want).abs() <= tolerance * want.abs().max(1.0)
            };
            assert!(ok, "function {j} of ({v}, {w}): {g} vs {want}");
        }
    }
});

/// `bool` and `usize` values as parameters (passed as u32).
#[unigpu::kernel(workgroup_size = 64)]
fn flags(x: &[f32], flip: bool, offset: usize, out: &mut [f32]) {
    let i = global_id().x;
    if i >= out.len() {
        return;
    }
    let mut v = x[(i + offset) % x.len()];
    if flip && v > 0.0 {
        v = -v;
    }
    out[i] = v;
}

on_every_backend!(bool_and_usize_parameters_match_the_host, |ctx| {
    let k = flags::kernel(ctx).unwrap();
    let n = random_len(4000);
    let hx = random_vec::<f32>(n);
    let x = ctx.upload(&hx).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    for flip in [false, true] {
        let offset = random_len(3 * n);
        k.launch(
            ctx,
            Grid::for_elems_with_block(n, 64),
            (&x, flip, offset, &mut out),
        )
        .unwrap();
        let got = out.download().unwrap();
        for i in 0..n {
            let mut v = hx[(i + offset) % n];
            if flip && v > 0.0 {
                v = -v;
            }
            assert_eq!(
                got[i].to_bits(),
                v.to_bits(),
                "flip {flip}, offset {offset}, {i}"
            );
        }
    }
    // A usize past 32 bits is refused before anything runs.
    let e = k
        .launch(
            ctx,
            Grid::for_elems_with_block(n, 64),
            (&x, true, 1usize << 32, &mut out),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("flags") && e.contains("4294967296"), "{e}");
});

/// Random 16-bit patterns: normals, subnormals, infinities and NaNs.
fn random_halves(n: usize) -> Vec<u16> {
    random_vec::<u32>(n).iter().map(|v| *v as u16).collect()
}

/// f16/bf16 arrays: loaded as f32, computed in f32, stored rounded to
/// nearest even; neighbouring elements written by different invocations
/// (two to a word on vulkan) all land.
#[unigpu::kernel(workgroup_size = 64)]
fn halves(a: &[f16], b: &[bf16], s: f32, out_h: &mut [f16], out_b: &mut [bf16], out_f: &mut [f32]) {
    let i = global_id().x;
    if i >= a.len() {
        return;
    }
    out_f[2 * i] = a[i];
    out_f[2 * i + 1] = b[i];
    out_h[i] = a[i] * s;
    out_h[i] += b[i];
    out_b[i] = b[i] * s;
    out_b[i] -= a[i];
}

/// The f32 bits, with every NaN alike (the backends keep no payload).
fn bits(v: f32) -> u32 {
    if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() }
}

on_every_backend!(f16_and_bf16_arrays_round_like_the_host, |ctx| {
    let k = halves::kernel(ctx).unwrap();
    // Odd lengths too: the last word of a vulkan buffer is half used.
    let n = random_len(5000);
    let ha: Vec<f16> = random_halves(n).into_iter().map(f16::from_bits).collect();
    let hb: Vec<bf16> = random_halves(n).into_iter().map(bf16::from_bits).collect();
    let s = 0.5 + random_vec::<f32>(1)[0].abs() / 300.0;
    let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
    let mut oh = ctx.upload(&vec![f16::from_f32(7.0); n]).unwrap();
    let mut ob = ctx.upload(&vec![bf16::from_f32(7.0); n]).unwrap();
    let mut of = ctx.zeros::<f32>(2 * n).unwrap();
    k.launch(
        ctx,
        Grid::for_elems_with_block(n, 64),
        (&a, &b, s, &mut oh, &mut ob, &mut of),
    )
    .unwrap();
    let (gh, gb, gf) = (
        oh.download().unwrap(),
        ob.download().unwrap(),
        of.download().unwrap(),
    );
    for i in 0..n {
        let (x, y) = (ha[i].to_f32(), hb[i].to_f32());
        assert_eq!(
            bits(gf[2 * i]),
            bits(x),
            "f16 {:#06x} loaded",
            ha[i].to_bits()
        );
        assert_eq!(
            bits(gf[2 * i + 1]),
            bits(y),
            "bf16 {:#06x} loaded",
            hb[i].to_bits()
        );
        let h = f16::from_f32(f16::from_f32(x * s).to_f32() + y);
        let bb = bf16::from_f32(bf16::from_f32(y * s).to_f32() - x);
        assert_eq!(
            bits(gh[i].to_f32()),
            bits(h.to_f32()),
            "f16 out {i}: a {x}, b {y}, s {s}: {} vs {h}",
            gh[i]
        );
        assert_eq!(
            bits(gb[i].to_f32()),
            bits(bb.to_f32()),
            "bf16 out {i}: a {x}, b {y}, s {s}: {} vs {bb}",
            gb[i]
        );
    }
});

/// u8 arrays: loaded as u32, stored as the low 8 bits (wrapping, as
/// `as u8`); neighbouring bytes written by different invocations (four to
/// a word on vulkan) all land, and a read-modify-write of a byte keeps
/// its neighbours.
#[unigpu::kernel(workgroup_size = 64)]
fn bytes(a: &[u8], k: u32, out: &mut [u8], wide: &mut [u32], acc: &mut [u8]) {
    let i = global_id().x;
    if i >= a.len() {
        return;
    }
    wide[i] = a[i];
    out[i] = a[i] * k + 3;
    acc[i] += a[i];
}

on_every_backend!(u8_arrays_wrap_like_the_host, |ctx| {
    let kern = bytes::kernel(ctx).unwrap();
    // Lengths that end anywhere in a word.
    let n = random_len(5000);
    let ha: Vec<u8> = random_vec::<u32>(n).iter().map(|v| *v as u8).collect();
    let hacc: Vec<u8> = random_vec::<u32>(n)
        .iter()
        .map(|v| (*v >> 8) as u8)
        .collect();
    let k = random_vec::<u32>(1)[0];
    let a = ctx.upload(&ha).unwrap();
    let mut out = ctx.upload(&vec![0xa5u8; n]).unwrap();
    let mut wide = ctx.zeros::<u32>(n).unwrap();
    let mut acc = ctx.upload(&hacc).unwrap();
    kern.launch(
        ctx,
        Grid::for_elems_with_block(n, 64),
        (&a, k, &mut out, &mut wide, &mut acc),
    )
    .unwrap();
    let (go, gw, ga) = (
        out.download().unwrap(),
        wide.download().unwrap(),
        acc.download().unwrap(),
    );
    for i in 0..n {
        assert_eq!(gw[i], ha[i] as u32, "u8 {} loaded at {i}", ha[i]);
        let want = (ha[i] as u32).wrapping_mul(k).wrapping_add(3) as u8;
        assert_eq!(go[i], want, "out {i}: a {}, k {k}", ha[i]);
        let sum = (hacc[i] as u32 + ha[i] as u32) as u8;
        assert_eq!(ga[i], sum, "acc {i}: {} + {}", hacc[i], ha[i]);
    }
});

/// `mul_hi(a, b)`: the high word of the u32 product, as u64 arithmetic
/// gives it on the host.
#[unigpu::kernel]
fn high_words(a: &[u32], b: &[u32], out: &mut [u32]) {
    let i = global_id().x;
    if i < out.len() {
        out[i] = mul_hi(a[i], b[i]) ^ mul_hi(a[i], 0xD2511F53u32);
    }
}

on_every_backend!(mul_hi_is_the_high_word, |ctx| {
    let k = high_words::kernel(ctx).unwrap();
    let n = random_len(5000);
    let mut ha = random_vec::<u32>(n);
    let mut hb = random_vec::<u32>(n);
    // The edges: 0, 1 and all ones on either side.
    for (i, (x, y)) in [
        (0, u32::MAX),
        (u32::MAX, u32::MAX),
        (1, u32::MAX),
        (0xffff, 0x10001),
    ]
    .into_iter()
    .enumerate()
    .take(n)
    {
        (ha[i], hb[i]) = (x, y);
    }
    let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
    let mut out = ctx.zeros::<u32>(n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&a, &b, &mut out))
        .unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        let hi = |x: u32, y: u32| ((x as u64 * y as u64) >> 32) as u32;
        let want = hi(ha[i], hb[i]) ^ hi(ha[i], 0xD2511F53);
        assert_eq!(got[i], want, "at {i}: {:#x} * {:#x}", ha[i], hb[i]);
    }
});

/// `x.to_bits()` and `f32::from_bits(u)`: an f32's bits and back, and
/// the exponent field read from them, as Rust's on the host.
#[unigpu::kernel]
fn bit_casts(x: &[f32], u: &[u32], bits: &mut [u32], exps: &mut [u32], floats: &mut [f32]) {
    let i = global_id().x;
    if i < x.len() {
        let b = x[i].to_bits();
        bits[i] = b;
        exps[i] = (b >> 23u32) & 255u32;
        floats[i] = f32::from_bits(u[i]);
    }
}

on_every_backend!(bit_casts_keep_every_bit, |ctx| {
    let k = bit_casts::kernel(ctx).unwrap();
    let n = random_len(5000);
    // Any bits as floats (NaNs, infinities, subnormals, both zeros among
    // them, by chance and at the start), and any u32.
    let mut hx: Vec<f32> = random_vec::<u32>(n)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let hu = random_vec::<u32>(n);
    let edges = [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE / 3.0,
        1.0,
    ];
    for (v, e) in hx.iter_mut().zip(edges) {
        *v = e;
    }
    let (x, u) = (ctx.upload(&hx).unwrap(), ctx.upload(&hu).unwrap());
    let mut bits = ctx.zeros::<u32>(n).unwrap();
    let mut exps = ctx.zeros::<u32>(n).unwrap();
    let mut floats = ctx.zeros::<f32>(n).unwrap();
    k.launch(
        ctx,
        Grid::for_elems(n),
        (&x, &u, &mut bits, &mut exps, &mut floats),
    )
    .unwrap();
    let (gb, ge, gf) = (
        bits.download().unwrap(),
        exps.download().unwrap(),
        floats.download().unwrap(),
    );
    for i in 0..n {
        // A NaN's payload may change on its way through a float
        // register (upload and download do not touch it; the kernel's
        // load may quiet it): the bits are compared for other values.
        let want = hx[i].to_bits();
        if hx[i].is_nan() {
            assert!(
                f32::from_bits(gb[i]).is_nan(),
                "to_bits of NaN {want:#x}: {:#x}",
                gb[i]
            );
        } else {
            assert_eq!(gb[i], want, "to_bits at {i}: {}", hx[i]);
        }
        assert_eq!(ge[i], (want >> 23) & 255, "exponent at {i}: {}", hx[i]);
        let f = f32::from_bits(hu[i]);
        if f.is_nan() {
            assert!(gf[i].is_nan(), "from_bits({:#x}) at {i}: {}", hu[i], gf[i]);
        } else {
            assert_eq!(gf[i].to_bits(), hu[i], "from_bits at {i}");
        }
    }
});

/// Float `%` is Rust's (C's fmod): exact, with the dividend's sign.
#[unigpu::kernel]
fn float_rem(x: &[f32], y: &[f32], out: &mut [f32], xd: &[f64], yd: &[f64], outd: &mut [f64]) {
    let i = global_id().x;
    if i < x.len() {
        out[i] = x[i] % y[i];
        let mut r = xd[i];
        r %= yd[i];
        outd[i] = r;
    }
}

/// Dividends and divisors of random signs and magnitudes 2^-60 .. 2^60
/// (quotients up to 2^120), and the special cases: zero divisors (NaN),
/// infinite dividends (NaN), infinite divisors (the dividend), zeros of
/// either sign, NaN, equal magnitudes (a zero with the dividend's sign).
/// No subnormals: WGSL lets a Vulkan driver flush them.
fn rem_inputs<F: Copy>(n: usize, from: impl Fn(f64) -> F) -> (Vec<F>, Vec<F>) {
    let r = random_vec::<u64>(2 * n);
    let mag = |bits: u64| -> f64 {
        let sign = if bits & 1 == 1 { -1.0 } else { 1.0 };
        let e = (bits >> 1) % 121;
        let m = 1.0 + ((bits >> 8) % (1 << 40)) as f64 / (1u64 << 40) as f64;
        sign * m * 2f64.powi(e as i32 - 60)
    };
    let special = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.5,
        -1.5,
    ];
    let (mut xs, mut ys) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let (mut x, mut y) = (mag(r[2 * i]), mag(r[2 * i + 1]));
        match r[2 * i] >> 60 {
            0 => y = special[(r[2 * i + 1] % 7) as usize],
            1 => x = special[(r[2 * i + 1] % 7) as usize],
            2 => y = -x,
            _ => {}
        }
        xs.push(from(x));
        ys.push(from(y));
    }
    (xs, ys)
}

on_every_backend!(float_rem_is_exact_fmod_everywhere, |ctx| {
    let k = float_rem::kernel(ctx).unwrap();
    let n = random_len(1 << 13).max(64);
    let (hx, hy) = rem_inputs(n, |v| v as f32);
    let (hxd, hyd) = rem_inputs(n, |v| v);
    let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
    let (xd, yd) = (ctx.upload(&hxd).unwrap(), ctx.upload(&hyd).unwrap());
    let mut out = ctx.zeros::<f32>(n).unwrap();
    let mut outd = ctx.zeros::<f64>(n).unwrap();
    k.launch(
        ctx,
        Grid::for_elems(n),
        (&x, &y, &mut out, &xd, &yd, &mut outd),
    )
    .unwrap();
    let (got, gotd) = (out.download().unwrap(), outd.download().unwrap());
    assert_f32_rem(&hx, &hy, &got);
    for i in 0..n {
        let want = hxd[i] % hyd[i];
        assert!(
            gotd[i].to_bits() == want.to_bits() || (gotd[i].is_nan() && want.is_nan()),
            "f64 {} % {}: {} vs {want}",
            hxd[i],
            hyd[i],
            gotd[i]
        );
    }
});

/// f32 `%` alone, apart from the f64 one above (on an H100 the kernel that
/// holds both lost NVIDIA's Vulkan device: this tells the two apart).
#[unigpu::kernel]
fn float_rem32(x: &[f32], y: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < x.len() {
        out[i] = x[i] % y[i];
    }
}

on_every_backend!(f32_rem_alone_is_exact_fmod, |ctx| {
    let k = float_rem32::kernel(ctx).unwrap();
    let n = random_len(1 << 13).max(64);
    let (hx, hy) = rem_inputs(n, |v| v as f32);
    let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
    let mut out = ctx.zeros::<f32>(n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&x, &y, &mut out))
        .unwrap();
    assert_f32_rem(&hx, &hy, &out.download().unwrap());
});

/// Every element is Rust's `x % y` to the bit (its NaN payload is not
/// promised: any NaN).
fn assert_f32_rem(hx: &[f32], hy: &[f32], got: &[f32]) {
    for i in 0..got.len() {
        let want = hx[i] % hy[i];
        assert!(
            got[i].to_bits() == want.to_bits() || (got[i].is_nan() && want.is_nan()),
            "f32 {} % {}: {} vs {want}",
            hx[i],
            hy[i],
            got[i]
        );
    }
}

/// Every emitted WGSL passes naga's validator (the vulkan backend's own
/// check, run here without an adapter), the emulated-fma forms included.
#[cfg(feature = "vulkan")]
#[test]
fn every_emitted_wgsl_validates() {
    let wide = naga::valid::Capabilities::FLOAT64 | naga::valid::Capabilities::SHADER_INT64;
    for (name, src, caps) in [
        (fused::NAME, fused::WGSL, naga::valid::Capabilities::empty()),
        (fused::NAME, fused::WGSL_FMA_EMULATED, wide),
        (fused64::NAME, fused64::WGSL, wide),
        (
            more_math::NAME,
            more_math::WGSL,
            naga::valid::Capabilities::empty(),
        ),
        (flags::NAME, flags::WGSL, naga::valid::Capabilities::empty()),
        (float_rem::NAME, float_rem::WGSL, wide),
        (pow64::NAME, pow64::WGSL, wide),
        (
            halves::NAME,
            halves::WGSL,
            naga::valid::Capabilities::empty(),
        ),
        (bytes::NAME, bytes::WGSL, naga::valid::Capabilities::empty()),
        (
            high_words::NAME,
            high_words::WGSL,
            naga::valid::Capabilities::empty(),
        ),
    ] {
        let module = naga::front::wgsl::parse_str(src)
            .unwrap_or_else(|e| panic!("{name}: {}\n{src}", e.emit_to_string(src)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name}: {}\n{src}", e.emit_to_string(src)));
    }
    assert!(fused64::WGSL_FMA_EMULATED.is_empty());
}

/// The CUDA form converts f16/bf16 without cuda_fp16.h and passes a bool
/// as a u32.
#[test]
fn the_cuda_form_needs_no_fp16_header() {
    let src = halves::CUDA;
    assert!(!src.contains("#include"), "{src}");
    assert!(src.contains("cvt.rn.f16.f32"), "{src}");
    assert!(
        flags::CUDA.contains("unsigned int p_flip, unsigned int p_offset"),
        "{}",
        flags::CUDA
    );
}

/// f64 `exp` and `sin`, which Vulkan's SPIR-V has in f32 only.
#[unigpu::kernel]
fn exp_sin64(x: &[f64], out: &mut [f64]) {
    let i = global_id().x;
    if i < x.len() {
        out[i] = x[i].exp() + x[i].sin();
    }
}

// On vulkan the kernel is refused when it is built, naming the function
// (NVIDIA's driver lost the device on such a kernel, lavapipe's f64 exp
// was 18 % off); elsewhere it runs, within a few ulps of the host's libm.
on_every_backend!(
    f64_transcendental_math_runs_or_is_refused_on_vulkan,
    |ctx| {
        if ctx.backend() == unigpu::Backend::Vulkan {
            match exp_sin64::kernel(ctx) {
                Err(unigpu::Error::Unsupported { what, .. }) => {
                    assert!(
                        what.contains("calls exp on f64") && what.contains("exp_sin64"),
                        "{what}"
                    )
                }
                other => panic!("an f64 exp kernel on vulkan: {:?}", other.map(|_| ())),
            }
            return;
        }
        let k = exp_sin64::kernel(ctx).unwrap();
        let n = random_len(3000);
        let hx: Vec<f64> = random_vec::<f64>(n)
            .iter()
            .map(|v| if v.is_finite() { v % 20.0 } else { 0.25 })
            .collect();
        let x = ctx.upload(&hx).unwrap();
        let mut out = ctx.zeros::<f64>(n).unwrap();
        k.launch(ctx, Grid::for_elems(n), (&x, &mut out)).unwrap();
        let got = out.download().unwrap();
        for i in 0..n {
            let want = hx[i].exp() + hx[i].sin();
            let scale = hx[i].exp() + hx[i].sin().abs();
            assert!(
                (got[i] - want).abs() <= scale * 1e-15,
                "exp({0}) + sin({0}): {1} vs {want}",
                hx[i],
                got[i]
            );
        }
    }
);

/// Each invocation's subgroup sum, max and min, and where it is: its
/// subgroup's size, the subgroup's index in the workgroup, its lane.
/// Invocations past the data take part with values that change nothing.
#[unigpu::kernel(workgroup_size = 64)]
fn subgroup_ops(
    x: &[f32],
    k: &[i32],
    u: &[u32],
    sums: &mut [f32],
    maxs: &mut [f32],
    mins: &mut [i32],
    usums: &mut [u32],
    place: &mut [u32],
) {
    let i = global_id().x;
    let mut v = 0.0f32;
    let mut m = -3.4028235e38f32;
    let mut c = 2147483647i32;
    let mut w = 0u32;
    if i < x.len() {
        v = x[i];
        m = x[i];
        c = k[i];
        w = u[i];
    }
    let s = subgroup_add(v);
    let mx = subgroup_max(m);
    let mn = subgroup_min(c);
    let us = subgroup_add(w);
    if i < x.len() {
        sums[i] = s;
        maxs[i] = mx;
        mins[i] = mn;
        usums[i] = us;
        place[3 * i] = subgroup_size() as u32;
        place[3 * i + 1] = subgroup_id() as u32;
        place[3 * i + 2] = subgroup_invocation_id() as u32;
    }
}

on_every_backend!(subgroup_operations_combine_each_subgroup, |ctx| {
    let kern = subgroup_ops::kernel(ctx).unwrap();
    let n = random_len(5000);
    let hx = random_vec::<f32>(n);
    let hk = random_vec::<i32>(n);
    let hu = random_vec::<u32>(n);
    let (x, k, u) = (
        ctx.upload(&hx).unwrap(),
        ctx.upload(&hk).unwrap(),
        ctx.upload(&hu).unwrap(),
    );
    let mut sums = ctx.zeros::<f32>(n).unwrap();
    let mut maxs = ctx.zeros::<f32>(n).unwrap();
    let mut mins = ctx.zeros::<i32>(n).unwrap();
    let mut usums = ctx.zeros::<u32>(n).unwrap();
    let mut place = ctx.zeros::<u32>(3 * n).unwrap();
    kern.launch(
        ctx,
        Grid::new((n.div_ceil(64) as u32, 1, 1), (64, 1, 1)),
        (
            &x, &k, &u, &mut sums, &mut maxs, &mut mins, &mut usums, &mut place,
        ),
    )
    .unwrap();
    let (gs, gm, gn, gu, gp) = (
        sums.download().unwrap(),
        maxs.download().unwrap(),
        mins.download().unwrap(),
        usums.download().unwrap(),
        place.download().unwrap(),
    );
    let size = gp[0];
    assert!(size.is_power_of_two() && size <= 64, "subgroup size {size}");
    match ctx.backend() {
        Backend::Cpu => assert_eq!(size, 1, "the CPU's subgroups are of one"),
        Backend::Cuda | Backend::Torch => assert_eq!(size, 32, "a CUDA warp"),
        _ => {}
    }
    // The subgroups, from where each invocation says it is: every
    // (workgroup, subgroup, lane) once, and the size the same everywhere.
    let mut members: std::collections::BTreeMap<(usize, u32), Vec<usize>> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for i in 0..n {
        let (sz, id, lane) = (gp[3 * i], gp[3 * i + 1], gp[3 * i + 2]);
        assert_eq!(sz, size, "subgroup size at {i}");
        assert!(
            lane < size && id < 64 / size,
            "place at {i}: subgroup {id}, lane {lane}"
        );
        assert!(
            seen.insert((i / 64, id, lane)),
            "two invocations at {i}'s place"
        );
        members.entry((i / 64, id)).or_default().push(i);
    }
    for (key, m) in &members {
        let sum: f64 = m.iter().map(|&i| f64::from(hx[i])).sum();
        let scale: f64 = m.iter().map(|&i| f64::from(hx[i]).abs()).sum();
        let max = m.iter().map(|&i| hx[i]).fold(f32::NEG_INFINITY, f32::max);
        let min = m.iter().map(|&i| hk[i]).min().unwrap();
        let usum = m.iter().fold(0u32, |a, &i| a.wrapping_add(hu[i]));
        for &i in m {
            // The order of a float sum's additions is the backend's: a
            // few roundings of the running total.
            assert!(
                (f64::from(gs[i]) - sum).abs() <= 1e-5 * scale + 1e-30,
                "sum at {i} (subgroup {key:?}): {} against {sum}",
                gs[i]
            );
            assert_eq!(
                gs[i].to_bits(),
                gs[m[0]].to_bits(),
                "one sum per subgroup, at {i}"
            );
            assert_eq!(gm[i], max, "max at {i} (subgroup {key:?})");
            assert_eq!(gn[i], min, "min at {i} (subgroup {key:?})");
            assert_eq!(gu[i], usum, "u32 sum at {i} (subgroup {key:?})");
        }
    }
});

/// A subgroup a row: the loop over rows goes by `subgroup_id()`, the same
/// across a subgroup, so it may hold subgroup operations (not a barrier).
#[unigpu::kernel(workgroup_size = 64)]
fn subgroup_row_sums(x: &[u32], sums: &mut [u32], rows: u32, len: u32) {
    let lane = subgroup_invocation_id();
    let size = subgroup_size();
    let per_group = 64 / size;
    let n = len as usize;
    let mut row = workgroup_id().x * per_group + subgroup_id();
    while row < rows as usize {
        let mut s = 0u32;
        let mut j = lane;
        while j < n {
            s += x[row * n + j];
            j += size;
        }
        let total = subgroup_add(s);
        if lane == 0 {
            sums[row] = total;
        }
        row += num_workgroups().x * per_group;
    }
}

on_every_backend!(subgroup_rows_reach_their_operations_together, |ctx| {
    let kern = subgroup_row_sums::kernel(ctx).unwrap();
    let (rows, len) = (random_len(300), random_len(100));
    let hx = random_vec::<u32>(rows * len);
    let x = ctx.upload(&hx).unwrap();
    let mut sums = ctx.zeros::<u32>(rows).unwrap();
    // Fewer workgroups than rows need: each takes several rounds.
    let groups = rows.div_ceil(8).max(1) as u32;
    kern.launch(
        ctx,
        Grid::new((groups, 1, 1), (64, 1, 1)),
        (&x, &mut sums, rows as u32, len as u32),
    )
    .unwrap();
    let got = sums.download().unwrap();
    for r in 0..rows {
        let want = hx[r * len..(r + 1) * len]
            .iter()
            .fold(0u32, |a, &v| a.wrapping_add(v));
        assert_eq!(got[r], want, "row {r} of {rows} (rows of {len})");
    }
});
