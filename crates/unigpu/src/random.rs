//! Random numbers from a counter-based generator (Philox 4×32-10), the
//! same bits on every backend (docs/random.md).
//!
//! One source, written with `#[unigpu::kernel]`, runs on cpu, cuda,
//! torch and vulkan. Each invocation computes one Philox block (four u32
//! words) and turns it into the elements that block feeds. Everything
//! past Philox uses only `+ - *`, `mul_add` (f32 only), comparisons,
//! integer and bit operations and exact conversions (integers below 2^24
//! to f32, u32 to f64), which the kernel language rounds the same way on
//! every backend (`+ - *` correctly and never contracted, `mul_add` once,
//! emulated where a Vulkan adapter's fma rounds twice: docs/kernels.md);
//! f32's Box–Muller is written with `mul_add` because fewer instructions
//! is its speed on a GPU (0.79x torch.randn with separate products and
//! sums on an H200). Its `/`, `sqrt`, `ln`, `sin` and `cos`
//! are not bit-identical across backends (docs/kernels.md, "Math
//! functions: ulp bounds"), so the logarithm, square root, sine and cosine
//! that Box–Muller needs are written as device functions from range
//! reduction and polynomials (random/math.rs).
//!
//! The mapping (what the tests check bit for bit against a host reference
//! written independently in `tests/random.rs`):
//!
//! - key = (seed & 0xffffffff, seed >> 32); block `b` is the Philox output
//!   for counter = (b & 0xffffffff, b >> 32, 0, 0), four words w0..w3.
//! - A call starts at block `ceil(offset / 4)` (the offset counts u32
//!   words), uses `ceil(len / per_block)` blocks, and leaves the offset at
//!   the word after its last block, so consecutive calls never share a
//!   word.
//! - Uniform [0, 1): f32 takes `w >> 8` (24 bits) × 2^-24, one word an
//!   element (4 a block); f16 `w >> 21` × 2^-11 and bf16 `w >> 24` × 2^-8
//!   (as many bits as their significand holds, so rounding never gives
//!   1.0); f64 `((w0 >> 11) · 2^32 + w1)` × 2^-53 from two words (2 a
//!   block: words (w0, w1) and (w2, w3)).
//! - Normal: Box–Muller. f32 (and f16/bf16, computed in f32): words
//!   (w0, w1) give elements 0 and 1, (w2, w3) elements 2 and 3;
//!   u = (wa + 1) × 2^-32 in (0, 1] (in f32: (wa >> 8)·256 + (wa & 255),
//!   then + 1, each sum rounded to nearest), the angle 2π (wb >> 8) 2^-24,
//!   z0 = √(−2 ln u) cos θ, z1 = √(−2 ln u) sin θ, element = mean + std · z
//!   (mean and std rounded to f32; one fma). f64: (w0, w1) give u = (53 bits + 1) ×
//!   2^-53, (w2, w3) the angle's top 53 bits; 2 elements a block.
//! - randint in [low, high): r = high − low; i32 takes 64 bits (w0·2^32 +
//!   w1, then w2·2^32 + w3: 2 a block) and gives low + ⌊W·r / 2^64⌋
//!   (multiply-shift, no rejection: each value's probability is within
//!   2^-64·r ≤ 2^-32 of 1/r); i64 takes all 128 bits of a block and gives
//!   low + ⌊W·r / 2^128⌋ (within 2^-64 of 1/r).

mod cpu;
#[macro_use]
mod math;

use crate::{
    AnyArray, Context, DType, Element, Error, GpuArray, Grid, IntoShape, Result, bf16, f16,
};

// ---------------------------------------------------------------- device code

/// The high 64 bits of a 64×64-bit product (i64 randint only, which needs
/// 64-bit integers anyway).
#[unigpu::device]
fn mulhi64(a: u64, b: u64) -> u64 {
    let al = a & 0xffffffffu64;
    let ah = a >> 32u64;
    let bl = b & 0xffffffffu64;
    let bh = b >> 32u64;
    let p0 = al * bl;
    let p1 = al * bh;
    let p2 = ah * bl;
    let p3 = ah * bh;
    let mid = (p0 >> 32u64) + (p1 & 0xffffffffu64) + (p2 & 0xffffffffu64);
    p3 + (p1 >> 32u64) + (p2 >> 32u64) + (mid >> 32u64)
}

/// ⌊(hi·2^32 + lo) · r / 2^64⌋, below `r`.
#[unigpu::device]
fn scale64(hi: u32, lo: u32, r: u32) -> u32 {
    let h = mul_hi(lo, r);
    let l = hi * r;
    let t = l + h;
    let mut carry = 0u32;
    if t < l {
        carry = 1u32;
    }
    mul_hi(hi, r) + carry
}

/// The angle from that quadrant's centre, in radians (|x| ≤ π/4): the
/// signed remainder is below 2^21, so its conversion is exact.
#[unigpu::device]
fn rem_angle24(p: u32) -> f32 {
    let q = ((p >> 21u32) + 1u32) >> 1u32;
    let r = (p - (q << 22u32)) as i32;
    r as f32 * 3.7450704e-7f32
}

/// Philox 4×32-10 and the element code, once for f32, f16 and bf16: each
/// invocation fills four elements from its block; `bits` and `scale` are
/// the type's (24, 2^-24 for f32).
///
/// Every kernel below repeats the same ten rounds: a device function
/// returns one value, and one that gave a single word would run the ten
/// rounds once per word, four times the work. The counter is (block low,
/// block high, 0, 0) with block = (blo, bhi) + the invocation, carried
/// into the high word; the key is bumped after every round (after the
/// last it is unused), which is Random123's schedule.
#[unigpu::kernel(T = [f32, f16, bf16])]
fn philox_uniform<T>(
    out: &mut [T],
    key0: u32,
    key1: u32,
    blo: u32,
    bhi: u32,
    bits: u32,
    scale: f32,
) {
    let j = global_id().x;
    let n = out.len();
    let i = j * 4;
    if i < n {
        let mut c0 = blo + j as u32;
        let mut c1 = bhi;
        if c0 < blo {
            c1 = c1 + 1u32;
        }
        let mut c2 = 0u32;
        let mut c3 = 0u32;
        let mut k0 = key0;
        let mut k1 = key1;
        let mut round = 0u32;
        while round < 10u32 {
            let h0 = mul_hi(0xD2511F53u32, c0);
            let l0 = 0xD2511F53u32 * c0;
            let h1 = mul_hi(0xCD9E8D57u32, c2);
            let l1 = 0xCD9E8D57u32 * c2;
            c0 = h1 ^ c1 ^ k0;
            c1 = l1;
            c2 = h0 ^ c3 ^ k1;
            c3 = l0;
            k0 = k0 + 0x9E3779B9u32;
            k1 = k1 + 0xBB67AE85u32;
            round = round + 1u32;
        }
        let sh = 32u32 - bits;
        out[i] = (c0 >> sh) as f32 * scale;
        if i + 1 < n {
            out[i + 1] = (c1 >> sh) as f32 * scale;
        }
        if i + 2 < n {
            out[i + 2] = (c2 >> sh) as f32 * scale;
        }
        if i + 3 < n {
            out[i + 3] = (c3 >> sh) as f32 * scale;
        }
    }
}

/// f64 uniforms: two a block, 53 bits each.
#[unigpu::kernel]
fn philox_uniform_f64(out: &mut [f64], key0: u32, key1: u32, blo: u32, bhi: u32) {
    let j = global_id().x;
    let n = out.len();
    let i = j * 2;
    if i < n {
        let mut c0 = blo + j as u32;
        let mut c1 = bhi;
        if c0 < blo {
            c1 = c1 + 1u32;
        }
        let mut c2 = 0u32;
        let mut c3 = 0u32;
        let mut k0 = key0;
        let mut k1 = key1;
        let mut round = 0u32;
        while round < 10u32 {
            let h0 = mul_hi(0xD2511F53u32, c0);
            let l0 = 0xD2511F53u32 * c0;
            let h1 = mul_hi(0xCD9E8D57u32, c2);
            let l1 = 0xCD9E8D57u32 * c2;
            c0 = h1 ^ c1 ^ k0;
            c1 = l1;
            c2 = h0 ^ c3 ^ k1;
            c3 = l0;
            k0 = k0 + 0x9E3779B9u32;
            k1 = k1 + 0xBB67AE85u32;
            round = round + 1u32;
        }
        out[i] = ((c0 >> 11u32) as f64 * 4294967296.0f64 + c1 as f64) * 1.1102230246251565e-16f64;
        if i + 1 < n {
            out[i + 1] =
                ((c2 >> 11u32) as f64 * 4294967296.0f64 + c3 as f64) * 1.1102230246251565e-16f64;
        }
    }
}

/// Normals (Box–Muller) for f32, f16 and bf16, computed in f32: four a block.
#[unigpu::kernel(T = [f32, f16, bf16])]
fn philox_normal<T>(out: &mut [T], key0: u32, key1: u32, blo: u32, bhi: u32, mean: f32, std: f32) {
    let j = global_id().x;
    let n = out.len();
    let i = j * 4;
    if i < n {
        let mut c0 = blo + j as u32;
        let mut c1 = bhi;
        if c0 < blo {
            c1 = c1 + 1u32;
        }
        let mut c2 = 0u32;
        let mut c3 = 0u32;
        let mut k0 = key0;
        let mut k1 = key1;
        let mut round = 0u32;
        while round < 10u32 {
            let h0 = mul_hi(0xD2511F53u32, c0);
            let l0 = 0xD2511F53u32 * c0;
            let h1 = mul_hi(0xCD9E8D57u32, c2);
            let l1 = 0xCD9E8D57u32 * c2;
            c0 = h1 ^ c1 ^ k0;
            c1 = l1;
            c2 = h0 ^ c3 ^ k1;
            c3 = l0;
            k0 = k0 + 0x9E3779B9u32;
            k1 = k1 + 0xBB67AE85u32;
            round = round + 1u32;
        }
        // Two pairs: (c0, c1) → elements i, i + 1; (c2, c3) → i + 2, i + 3.
        let mut pair = 0u32;
        while pair < 2u32 {
            let mut wa = c0;
            let mut wb = c1;
            if pair == 1u32 {
                wa = c2;
                wb = c3;
            }
            // u in (0, 1] from all 32 bits: exact below 2^-8 (where the
            // tail of the normal comes from: |z| reaches 6.66, not the
            // 5.77 of 24 bits), rounded to nearest above. Both parts
            // convert exactly (below 2^24).
            let u = (((wa >> 8u32) as f32).mul_add(256.0f32, (wa & 255u32) as f32) + 1.0f32)
                * 2.3283064e-10f32;
            let radius = sqrt_f32(-2.0f32 * ln_unit_f32(u));
            let p = wb >> 8u32;
            let q = quadrant24(p);
            let x = rem_angle24(p);
            let sx = sin_poly_f32(x);
            let cx = cos_poly_f32(x);
            let mut s = sx;
            let mut c = cx;
            if q == 1u32 {
                s = cx;
                c = -sx;
            } else if q == 2u32 {
                s = -sx;
                c = -cx;
            } else if q == 3u32 {
                s = -cx;
                c = sx;
            }
            let e = i + 2 * pair as usize;
            if e < n {
                out[e] = std.mul_add(radius * c, mean);
            }
            if e + 1 < n {
                out[e + 1] = std.mul_add(radius * s, mean);
            }
            pair = pair + 1u32;
        }
    }
}

/// 1/d for d in [1 + √½, 1 + √2], as `recip_f32` with four Newton steps.
#[unigpu::device]
fn recip_f64(d: f64) -> f64 {
    let mut r = 0.9850615000483447f64 - 0.23901599922648414f64 * d;
    r = r + r * (1.0f64 - d * r);
    r = r + r * (1.0f64 - d * r);
    r = r + r * (1.0f64 - d * r);
    r = r + r * (1.0f64 - d * r);
    r
}

/// ln(u) for u in [2^-63, 1], as `ln_unit_f32` with the series to s^23.
#[unigpu::device]
fn ln_unit_f64(u: f64) -> f64 {
    let mut m = u;
    let mut e = 0i32;
    if m < 2.3283064365386963e-10f64 {
        m = m * 4294967296.0f64;
        e = e - 32i32;
    }
    if m < 1.52587890625e-5f64 {
        m = m * 65536.0f64;
        e = e - 16i32;
    }
    if m < 0.00390625f64 {
        m = m * 256.0f64;
        e = e - 8i32;
    }
    if m < 0.0625f64 {
        m = m * 16.0f64;
        e = e - 4i32;
    }
    if m < 0.25f64 {
        m = m * 4.0f64;
        e = e - 2i32;
    }
    if m < 0.5f64 {
        m = m * 2.0f64;
        e = e - 1i32;
    }
    if m < 0.7071067811865476f64 {
        m = m * 2.0f64;
        e = e - 1i32;
    }
    let f = m - 1.0f64;
    let s = f * recip_f64(m + 1.0f64);
    let s2 = s * s;
    let mut p = 0.043478260869565216f64; // 1/23
    p = 0.047619047619047616f64 + s2 * p; // 1/21
    p = 0.05263157894736842f64 + s2 * p;
    p = 0.058823529411764705f64 + s2 * p;
    p = 0.06666666666666667f64 + s2 * p;
    p = 0.07692307692307693f64 + s2 * p;
    p = 0.09090909090909091f64 + s2 * p;
    p = 0.1111111111111111f64 + s2 * p;
    p = 0.14285714285714285f64 + s2 * p;
    p = 0.2f64 + s2 * p;
    p = 0.3333333333333333f64 + s2 * p;
    let lnm = (s + s) + (s + s) * (s2 * p);
    let ef = e as f64;
    ef * 0.6931471803691238f64 + (ef * 1.9082149292705877e-10f64 + lnm)
}

/// √a for a = 0 or a in [2^-62, 2^8), as `sqrt_f32` with four Newton steps.
#[unigpu::device]
fn sqrt_f64(a: f64) -> f64 {
    if a == 0.0f64 {
        return 0.0f64;
    }
    let mut x = a;
    let mut k = 1.0f64;
    if x >= 16.0f64 {
        x = x * 0.0625f64;
        k = k * 4.0f64;
    }
    if x >= 4.0f64 {
        x = x * 0.25f64;
        k = k * 2.0f64;
    }
    if x >= 1.0f64 {
        x = x * 0.25f64;
        k = k * 2.0f64;
    }
    if x < 2.3283064365386963e-10f64 {
        x = x * 4294967296.0f64;
        k = k * 1.52587890625e-5f64;
    }
    if x < 1.52587890625e-5f64 {
        x = x * 65536.0f64;
        k = k * 0.00390625f64;
    }
    if x < 0.00390625f64 {
        x = x * 256.0f64;
        k = k * 0.0625f64;
    }
    if x < 0.0625f64 {
        x = x * 16.0f64;
        k = k * 0.25f64;
    }
    if x < 0.25f64 {
        x = x * 4.0f64;
        k = k * 0.5f64;
    }
    let mut y = 2.6286490080273532f64 + x * (-3.133970819265514f64 + x * 1.5231841742872192f64);
    y = y * (1.5f64 - 0.5f64 * x * y * y);
    y = y * (1.5f64 - 0.5f64 * x * y * y);
    y = y * (1.5f64 - 0.5f64 * x * y * y);
    y = y * (1.5f64 - 0.5f64 * x * y * y);
    x * y * k
}

/// sin x for |x| ≤ π/4: Taylor to x^19.
#[unigpu::device]
fn sin_poly_f64(x: f64) -> f64 {
    let x2 = x * x;
    let mut p = -8.22063524662433e-18f64;
    p = 2.8114572543455206e-15f64 + x2 * p;
    p = -7.647163731819816e-13f64 + x2 * p;
    p = 1.6059043836821613e-10f64 + x2 * p;
    p = -2.505210838544172e-08f64 + x2 * p;
    p = 2.7557319223985893e-06f64 + x2 * p;
    p = -0.0001984126984126984f64 + x2 * p;
    p = 0.008333333333333333f64 + x2 * p;
    p = -0.16666666666666666f64 + x2 * p;
    x + x * (x2 * p)
}

/// cos x for |x| ≤ π/4: Taylor to x^20.
#[unigpu::device]
fn cos_poly_f64(x: f64) -> f64 {
    let x2 = x * x;
    let mut p = 4.110317623312165e-19f64;
    p = -1.5619206968586225e-16f64 + x2 * p;
    p = 4.779477332387385e-14f64 + x2 * p;
    p = -1.1470745597729725e-11f64 + x2 * p;
    p = 2.08767569878681e-09f64 + x2 * p;
    p = -2.755731922398589e-07f64 + x2 * p;
    p = 2.48015873015873e-05f64 + x2 * p;
    p = -0.001388888888888889f64 + x2 * p;
    p = 0.041666666666666664f64 + x2 * p;
    1.0f64 + x2 * (-0.5f64 + x2 * p)
}

/// f64 normals: two a block, (w0, w1) the radius's 53 bits, (w2, w3) the
/// angle's.
#[unigpu::kernel]
fn philox_normal_f64(
    out: &mut [f64],
    key0: u32,
    key1: u32,
    blo: u32,
    bhi: u32,
    mean: f64,
    std: f64,
) {
    let j = global_id().x;
    let n = out.len();
    let i = j * 2;
    if i < n {
        let mut c0 = blo + j as u32;
        let mut c1 = bhi;
        if c0 < blo {
            c1 = c1 + 1u32;
        }
        let mut c2 = 0u32;
        let mut c3 = 0u32;
        let mut k0 = key0;
        let mut k1 = key1;
        let mut round = 0u32;
        while round < 10u32 {
            let h0 = mul_hi(0xD2511F53u32, c0);
            let l0 = 0xD2511F53u32 * c0;
            let h1 = mul_hi(0xCD9E8D57u32, c2);
            let l1 = 0xCD9E8D57u32 * c2;
            c0 = h1 ^ c1 ^ k0;
            c1 = l1;
            c2 = h0 ^ c3 ^ k1;
            c3 = l0;
            k0 = k0 + 0x9E3779B9u32;
            k1 = k1 + 0xBB67AE85u32;
            round = round + 1u32;
        }
        let u = ((c0 >> 11u32) as f64 * 4294967296.0f64 + c1 as f64 + 1.0f64)
            * 1.1102230246251565e-16f64;
        let radius = sqrt_f64(-2.0f64 * ln_unit_f64(u));
        // The angle: the nearest quadrant from the top bits, the signed
        // remainder (below 2^50 in magnitude, exact) in radians.
        let q = ((c2 >> 29u32) + 1u32) >> 1u32;
        let rhi = (c2 - (q << 30u32)) as i32;
        let x = (rhi as f64 * 2097152.0f64 + (c3 >> 11u32) as f64) * 6.975736996017264e-16f64;
        let sx = sin_poly_f64(x);
        let cx = cos_poly_f64(x);
        let mut s = sx;
        let mut c = cx;
        let qq = q & 3u32;
        if qq == 1u32 {
            s = cx;
            c = -sx;
        } else if qq == 2u32 {
            s = -sx;
            c = -cx;
        } else if qq == 3u32 {
            s = -cx;
            c = sx;
        }
        out[i] = mean + std * (radius * c);
        if i + 1 < n {
            out[i + 1] = mean + std * (radius * s);
        }
    }
}

/// i32 in [low, low + range): two a block, 64 bits each, multiply-shift.
#[unigpu::kernel]
fn philox_randint_i32(
    out: &mut [i32],
    key0: u32,
    key1: u32,
    blo: u32,
    bhi: u32,
    low: i32,
    range: u32,
) {
    let j = global_id().x;
    let n = out.len();
    let i = j * 2;
    if i < n {
        let mut c0 = blo + j as u32;
        let mut c1 = bhi;
        if c0 < blo {
            c1 = c1 + 1u32;
        }
        let mut c2 = 0u32;
        let mut c3 = 0u32;
        let mut k0 = key0;
        let mut k1 = key1;
        let mut round = 0u32;
        while round < 10u32 {
            let h0 = mul_hi(0xD2511F53u32, c0);
            let l0 = 0xD2511F53u32 * c0;
            let h1 = mul_hi(0xCD9E8D57u32, c2);
            let l1 = 0xCD9E8D57u32 * c2;
            c0 = h1 ^ c1 ^ k0;
            c1 = l1;
            c2 = h0 ^ c3 ^ k1;
            c3 = l0;
            k0 = k0 + 0x9E3779B9u32;
            k1 = k1 + 0xBB67AE85u32;
            round = round + 1u32;
        }
        out[i] = low + scale64(c0, c1, range) as i32;
        if i + 1 < n {
            out[i + 1] = low + scale64(c2, c3, range) as i32;
        }
    }
}

/// i64 in [low, low + range): one a block, all 128 bits, multiply-shift.
#[unigpu::kernel]
fn philox_randint_i64(
    out: &mut [i64],
    key0: u32,
    key1: u32,
    blo: u32,
    bhi: u32,
    low: i64,
    range: u64,
) {
    let j = global_id().x;
    let n = out.len();
    if j < n {
        let mut c0 = blo + j as u32;
        let mut c1 = bhi;
        if c0 < blo {
            c1 = c1 + 1u32;
        }
        let mut c2 = 0u32;
        let mut c3 = 0u32;
        let mut k0 = key0;
        let mut k1 = key1;
        let mut round = 0u32;
        while round < 10u32 {
            let h0 = mul_hi(0xD2511F53u32, c0);
            let l0 = 0xD2511F53u32 * c0;
            let h1 = mul_hi(0xCD9E8D57u32, c2);
            let l1 = 0xCD9E8D57u32 * c2;
            c0 = h1 ^ c1 ^ k0;
            c1 = l1;
            c2 = h0 ^ c3 ^ k1;
            c3 = l0;
            k0 = k0 + 0x9E3779B9u32;
            k1 = k1 + 0xBB67AE85u32;
            round = round + 1u32;
        }
        // W = w1·2^64 + w0; ⌊W·r / 2^128⌋ = hi(w1·r) + the carry of
        // lo(w1·r) + hi(w0·r).
        let w1 = ((c0 as u64) << 32u64) | c1 as u64;
        let w0 = ((c2 as u64) << 32u64) | c3 as u64;
        let a0 = w1 * range;
        let t = a0 + mulhi64(w0, range);
        let mut carry = 0u64;
        if t < a0 {
            carry = 1u64;
        }
        out[j] = low + (mulhi64(w1, range) + carry) as i64;
    }
}

// ----------------------------------------------------------------- host side

/// A Philox 4×32-10 stream: a seed and an offset (in u32 words). Every
/// call fills an array from the blocks at the offset and moves the offset
/// past them, so two calls never use the same numbers; the same seed,
/// offset, length and type give the same bits on every backend.
///
/// ```
/// let ctx = unigpu::Context::new(unigpu::Backend::Cpu, 0)?;
/// let mut rng = unigpu::random::Generator::new(42);
/// let u = rng.uniform::<f32>(&ctx, 10)?;             // [0, 1)
/// let z = rng.normal::<f64>(&ctx, 10, 0.0, 1.0)?;    // mean 0, std 1
/// let k = rng.randint::<i32>(&ctx, 10, -5, 5)?;      // [-5, 5)
/// assert_eq!(rng.offset(), 12 + 20 + 20);            // words used, whole blocks
/// # let _ = (u, z, k);
/// # Ok::<(), unigpu::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    offset: u64,
}

impl Generator {
    /// A stream for `seed`, at offset 0.
    pub fn new(seed: u64) -> Generator {
        Generator { seed, offset: 0 }
    }

    /// The seed (Philox's key: low word, high word).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The offset in u32 words: the next call starts at the first whole
    /// block (4 words) at or after it.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Moves the stream to `offset` (u32 words; see [`Generator::offset`]).
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
    }

    /// An array of `shape` (a length, or `[rows, cols]` …) of numbers
    /// uniform in [0, 1), in row-major order (docs/random.md says which
    /// bits).
    pub fn uniform<T: RandomFloat>(
        &mut self,
        ctx: &Context,
        shape: impl IntoShape,
    ) -> Result<GpuArray<T>> {
        let mut out = ctx.alloc::<T>(shape)?;
        self.uniform_into(&mut out)?;
        Ok(out)
    }

    /// Fills `out` (a contiguous array) with numbers uniform in [0, 1).
    pub fn uniform_into<T: RandomFloat>(&mut self, out: &mut GpuArray<T>) -> Result<()> {
        let key = self.key();
        self.fill(
            out.len(),
            T::UNIFORM_PER_BLOCK,
            "uniform",
            |block, blocks| T::launch_uniform(out, key, block, blocks),
        )
    }

    /// An array of `shape` of normal numbers of mean `mean` and standard
    /// deviation `std` (Box–Muller; for f32, f16 and bf16 computed in f32,
    /// `mean` and `std` rounded to f32). `mean` must be finite and `std`
    /// finite and not negative.
    pub fn normal<T: RandomFloat>(
        &mut self,
        ctx: &Context,
        shape: impl IntoShape,
        mean: f64,
        std: f64,
    ) -> Result<GpuArray<T>> {
        check_normal(mean, std)?;
        let mut out = ctx.alloc::<T>(shape)?;
        self.normal_into(&mut out, mean, std)?;
        Ok(out)
    }

    /// Fills `out` (a contiguous array) with normal numbers of mean `mean`
    /// and standard deviation `std`.
    pub fn normal_into<T: RandomFloat>(
        &mut self,
        out: &mut GpuArray<T>,
        mean: f64,
        std: f64,
    ) -> Result<()> {
        check_normal(mean, std)?;
        let key = self.key();
        self.fill(out.len(), T::NORMAL_PER_BLOCK, "normal", |block, blocks| {
            T::launch_normal(out, key, block, blocks, mean, std)
        })
    }

    /// An array of `shape` of integers uniform in [low, high)
    /// (multiply-shift, no rejection; docs/random.md gives its bias
    /// bound). `low < high`.
    pub fn randint<T: RandomInt>(
        &mut self,
        ctx: &Context,
        shape: impl IntoShape,
        low: T,
        high: T,
    ) -> Result<GpuArray<T>> {
        T::range(low, high)?;
        let mut out = ctx.alloc::<T>(shape)?;
        self.randint_into(&mut out, low, high)?;
        Ok(out)
    }

    /// Fills `out` (a contiguous array) with integers uniform in [low, high).
    pub fn randint_into<T: RandomInt>(
        &mut self,
        out: &mut GpuArray<T>,
        low: T,
        high: T,
    ) -> Result<()> {
        let range = T::range(low, high)?;
        let key = self.key();
        self.fill(out.len(), T::PER_BLOCK, "randint", |block, blocks| {
            T::launch_randint(out, key, block, blocks, low, range)
        })
    }

    fn key(&self) -> [u32; 2] {
        [self.seed as u32, (self.seed >> 32) as u32]
    }

    /// Runs `launch` on the blocks for `len` elements at `per_block` a
    /// block (the first block, how many) and, once it has succeeded,
    /// moves the offset past them: a call that fails (a strided array, a
    /// type the adapter lacks) uses nothing, and no elements use nothing.
    /// The block counter has 64 bits: a call that would run past its end
    /// is an error, not a wrap onto numbers already given.
    fn fill(
        &mut self,
        len: usize,
        per_block: usize,
        call: &str,
        launch: impl FnOnce(u64, usize) -> Result<()>,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let blocks = len.div_ceil(per_block);
        let first = self.offset.div_ceil(4);
        let end = first
            .checked_add(blocks as u64)
            .and_then(|end| end.checked_mul(4))
            .ok_or_else(|| {
                args(
                    call,
                    format!(
                        "the stream ends before {len} more numbers (offset {})",
                        self.offset
                    ),
                )
            })?;
        launch(first, blocks)?;
        self.offset = end;
        Ok(())
    }
}

fn args(call: &str, message: String) -> Error {
    Error::KernelArgs {
        kernel: format!("Generator::{call}"),
        message,
    }
}

fn check_normal(mean: f64, std: f64) -> Result<()> {
    if !mean.is_finite() {
        return Err(args("normal", format!("mean must be finite, got {mean}")));
    }
    if !(std.is_finite() && std >= 0.0) {
        return Err(args(
            "normal",
            format!("std must be finite and at least 0, got {std}"),
        ));
    }
    Ok(())
}

/// The block's counter words (low, high).
fn split(block: u64) -> (u32, u32) {
    (block as u32, (block >> 32) as u32)
}

mod sealed {
    pub trait Sealed {}
}

/// The float types the generator fills: f32, f64, f16, bf16.
pub trait RandomFloat: Element + sealed::Sealed {
    #[doc(hidden)]
    const UNIFORM_PER_BLOCK: usize;
    #[doc(hidden)]
    const NORMAL_PER_BLOCK: usize;
    #[doc(hidden)]
    fn launch_uniform(
        out: &mut GpuArray<Self>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
    ) -> Result<()>;
    #[doc(hidden)]
    fn launch_normal(
        out: &mut GpuArray<Self>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
        mean: f64,
        std: f64,
    ) -> Result<()>;
}

/// f32, f16, bf16: the generic kernels, with the type's bits.
macro_rules! random_f32_like {
    ($($t:ty => $bits:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl RandomFloat for $t {
            const UNIFORM_PER_BLOCK: usize = 4;
            const NORMAL_PER_BLOCK: usize = 4;
            fn launch_uniform(out: &mut GpuArray<$t>, key: [u32; 2], block: u64, blocks: usize) -> Result<()> {
                let ctx = out.context().clone();
                let (blo, bhi) = split(block);
                let bits: u32 = $bits;
                let scale = 1.0f32 / (1u32 << bits) as f32;
                philox_uniform::kernel::<$t>(&ctx)?
                    .launch(&ctx, Grid::for_elems(blocks), (out, key[0], key[1], blo, bhi, bits, scale))
            }
            fn launch_normal(out: &mut GpuArray<$t>, key: [u32; 2], block: u64, blocks: usize, mean: f64, std: f64) -> Result<()> {
                let ctx = out.context().clone();
                let (blo, bhi) = split(block);
                let kernel = philox_normal::kernel::<$t>(&ctx)?;
                let grid = Grid::for_elems(blocks);
                let args = (out, key[0], key[1], blo, bhi, mean as f32, std as f32);
                if <$t as Element>::DTYPE == DType::F32 && ctx.backend() == crate::Backend::Cpu {
                    // The native loop (random/cpu.rs): the same numbers.
                    return ctx.launch(&(*kernel).clone().with_cpu(cpu::normal_f32), grid, args);
                }
                kernel.launch(&ctx, grid, args)
            }
        }
    )*};
}
random_f32_like!(f32 => 24, f16 => 11, bf16 => 8);

impl sealed::Sealed for f64 {}
impl RandomFloat for f64 {
    const UNIFORM_PER_BLOCK: usize = 2;
    const NORMAL_PER_BLOCK: usize = 2;
    fn launch_uniform(
        out: &mut GpuArray<f64>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
    ) -> Result<()> {
        let ctx = out.context().clone();
        let (blo, bhi) = split(block);
        philox_uniform_f64::kernel(&ctx)?.launch(
            &ctx,
            Grid::for_elems(blocks),
            (out, key[0], key[1], blo, bhi),
        )
    }
    fn launch_normal(
        out: &mut GpuArray<f64>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
        mean: f64,
        std: f64,
    ) -> Result<()> {
        let ctx = out.context().clone();
        let (blo, bhi) = split(block);
        philox_normal_f64::kernel(&ctx)?.launch(
            &ctx,
            Grid::for_elems(blocks),
            (out, key[0], key[1], blo, bhi, mean, std),
        )
    }
}

/// The integer types `randint` fills: i32, i64.
pub trait RandomInt: Element + Copy + std::fmt::Display + sealed::Sealed {
    #[doc(hidden)]
    const PER_BLOCK: usize;
    /// high − low as an unsigned count, or the error for low ≥ high.
    #[doc(hidden)]
    fn range(low: Self, high: Self) -> Result<u64>;
    #[doc(hidden)]
    fn launch_randint(
        out: &mut GpuArray<Self>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
        low: Self,
        range: u64,
    ) -> Result<()>;
}

fn check_range<T: std::fmt::Display + PartialOrd>(low: T, high: T) -> Result<()> {
    if low < high {
        Ok(())
    } else {
        Err(args(
            "randint",
            format!("low ({low}) must be below high ({high})"),
        ))
    }
}

impl sealed::Sealed for i32 {}
impl RandomInt for i32 {
    const PER_BLOCK: usize = 2;
    fn range(low: i32, high: i32) -> Result<u64> {
        check_range(low, high)?;
        Ok(high.wrapping_sub(low) as u32 as u64)
    }
    fn launch_randint(
        out: &mut GpuArray<i32>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
        low: i32,
        range: u64,
    ) -> Result<()> {
        let ctx = out.context().clone();
        let (blo, bhi) = split(block);
        philox_randint_i32::kernel(&ctx)?.launch(
            &ctx,
            Grid::for_elems(blocks),
            (out, key[0], key[1], blo, bhi, low, range as u32),
        )
    }
}

impl sealed::Sealed for i64 {}
impl RandomInt for i64 {
    const PER_BLOCK: usize = 1;
    fn range(low: i64, high: i64) -> Result<u64> {
        check_range(low, high)?;
        Ok(high.wrapping_sub(low) as u64)
    }
    fn launch_randint(
        out: &mut GpuArray<i64>,
        key: [u32; 2],
        block: u64,
        blocks: usize,
        low: i64,
        range: u64,
    ) -> Result<()> {
        let ctx = out.context().clone();
        let (blo, bhi) = split(block);
        philox_randint_i64::kernel(&ctx)?.launch(
            &ctx,
            Grid::for_elems(blocks),
            (out, key[0], key[1], blo, bhi, low, range),
        )
    }
}

/// The generator for the bindings (C, Python), which name the element
/// type at run time.
impl Generator {
    /// [`Generator::uniform`] of `dtype` (f32, f64, f16 or bf16).
    pub fn uniform_any(
        &mut self,
        ctx: &Context,
        dtype: DType,
        shape: &[usize],
    ) -> Result<AnyArray> {
        let shape = shape.to_vec();
        Ok(match dtype {
            DType::F32 => self.uniform::<f32>(ctx, shape)?.into(),
            DType::F64 => self.uniform::<f64>(ctx, shape)?.into(),
            DType::F16 => self.uniform::<f16>(ctx, shape)?.into(),
            DType::BF16 => self.uniform::<bf16>(ctx, shape)?.into(),
            other => return Err(not_random(other, "uniform", "f32, f64, f16 and bf16")),
        })
    }

    /// [`Generator::normal`] of `dtype` (f32, f64, f16 or bf16).
    pub fn normal_any(
        &mut self,
        ctx: &Context,
        dtype: DType,
        shape: &[usize],
        mean: f64,
        std: f64,
    ) -> Result<AnyArray> {
        let shape = shape.to_vec();
        Ok(match dtype {
            DType::F32 => self.normal::<f32>(ctx, shape, mean, std)?.into(),
            DType::F64 => self.normal::<f64>(ctx, shape, mean, std)?.into(),
            DType::F16 => self.normal::<f16>(ctx, shape, mean, std)?.into(),
            DType::BF16 => self.normal::<bf16>(ctx, shape, mean, std)?.into(),
            other => return Err(not_random(other, "normal", "f32, f64, f16 and bf16")),
        })
    }

    /// [`Generator::randint`] of `dtype` (i32 or i64; `low` and `high`
    /// must fit it).
    pub fn randint_any(
        &mut self,
        ctx: &Context,
        dtype: DType,
        shape: &[usize],
        low: i64,
        high: i64,
    ) -> Result<AnyArray> {
        let shape = shape.to_vec();
        let narrow = |v: i64| {
            i32::try_from(v).map_err(|_| Error::KernelArgs {
                kernel: "Generator::randint".into(),
                message: format!("{v} does not fit in i32"),
            })
        };
        Ok(match dtype {
            DType::I32 => self
                .randint::<i32>(ctx, shape, narrow(low)?, narrow(high)?)?
                .into(),
            DType::I64 => self.randint::<i64>(ctx, shape, low, high)?.into(),
            other => return Err(not_random(other, "randint", "i32 and i64")),
        })
    }
}

fn not_random(dtype: DType, what: &str, takes: &str) -> Error {
    Error::KernelArgs {
        kernel: format!("Generator::{what}"),
        message: format!("{dtype} arrays: {what} makes {takes}"),
    }
}
