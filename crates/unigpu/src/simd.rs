//! Run-time SIMD dispatch for the CPU's loops, shared by the CPU backend's
//! built-in ops and the CPU form of `#[unigpu::kernel]` kernels, and the
//! f32 math functions that vectorise under it (a leaf file: it names no
//! handle, so backends may use it).

/// Runs `f` compiled for the widest SIMD this CPU has (AVX-512, AVX2 or
/// the SSE2 baseline), chosen at run time by pulp, so LLVM vectorises the
/// loops inlined into it that wide while the binary stays portable (no
/// `target-cpu=native`, no `unsafe` here). Where SSE4.1 is there, `floor`,
/// `ceil`, `round` and `trunc` also become one instruction, not a libm
/// call per element. Rust never contracts to FMA nor reassociates, so
/// every width gives the same bits.
#[inline(always)]
pub fn simd<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

/// The kernel language's f32 `exp`, `exp2`, `ln`, `log2` and `tanh`
/// on the CPU, in branch-free f32 arithmetic that LLVM vectorises eight
/// lanes wide under AVX2, where libm's `expf` & co. are a call per
/// element that keeps the whole loop scalar (exp ran at 0.35× numpy's
/// speed on 2 cores), and an earlier form computed in f64 ran four lanes
/// wide (exp at 0.49× numpy's speed on 2 cores).
///
/// No `mul_add`: where the CPU lacks FMA it is a libm call per element;
/// plain `*` and `+` round the same way at every SIMD width. Every result
/// is the correctly rounded one or its neighbour (within 1 ulp): checked
/// over every f32 of each function's range when written (the unit tests
/// below draw 200,000 a function), subnormal inputs and results
/// included. The special values are C's, checked against libm by the
/// tests below and by kernel_lang.rs. The polynomials' coefficients are
/// least-squares fits at Chebyshev nodes (near minimax), rounded to f32.
pub mod math {
    use std::f32::consts::{LN_2, LOG2_E, SQRT_2};

    /// Adding then subtracting 1.5·2^23 rounds an f32 below 2^22 to the
    /// nearest integer, which then sits in the low bits of the sum (SSE2
    /// has no vector round, and `as i32` saturates, which does not
    /// vectorise).
    const SHIFTER: f32 = 12_582_912.0;

    /// ln 2 in two parts: 16 bits, so `k · LN2_HI` is exact for the
    /// |k| ≤ 151 that occur here, and the rest.
    const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
    const LN2_LO: f32 = (std::f64::consts::LN_2 - 0.693_145_751_953_125) as f32;

    /// 2^k for an integer k in [-126, 127], from its bit pattern.
    #[inline(always)]
    fn pow2(k: i32) -> f32 {
        f32::from_bits((k.wrapping_add(127) as u32) << 23)
    }

    /// The nearest integer to `v` (|v| < 2^22), as f32 and i32.
    #[inline(always)]
    fn nearest(v: f32) -> (f32, i32) {
        let shifted = v + SHIFTER;
        let k = (shifted.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
        (shifted - SHIFTER, k)
    }

    /// p · 2^k for k in [-152, 130], as two powers of two that are each a
    /// normal f32, so only the last product rounds (into a subnormal or
    /// to infinity where the result is one).
    #[inline(always)]
    fn scale(p: f32, k: i32) -> f32 {
        let half = k >> 1;
        p * pow2(half) * pow2(k - half)
    }

    /// e^r for |r| ≤ ln2/2: 1 + r + r²·q(r), q of degree 5 (relative
    /// error 2^-29 before rounding), the small terms summed first.
    #[inline(always)]
    fn exp_reduced(r: f32) -> f32 {
        const Q: [f32; 6] = [
            0.5,
            0.166_666_66,
            0.041_666_224,
            0.008_333_442,
            0.001_394_934_5,
            0.000_198_254_27,
        ];
        let mut q = Q[5];
        for c in Q[..5].iter().rev() {
            q = q * r + c;
        }
        1.0 + (r + r * r * q)
    }

    /// e^x: x = k·ln2 + r (Cody and Waite's two-part reduction, exact but
    /// for the last subtraction), e^r by its polynomial, times 2^k.
    #[inline(always)]
    pub fn exp(x: f32) -> f32 {
        // e^-104 is below half the least f32 subnormal and e^89 above the
        // largest f32, so the clamp changes no result (NaN passes).
        let x = x.clamp(-104.0, 89.0);
        let (kf, k) = nearest(x * LOG2_E);
        let r = (x - kf * LN2_HI) - kf * LN2_LO;
        scale(exp_reduced(r), k)
    }

    /// 2^x: x = k + r exactly, 2^r = e^(r·ln2).
    #[inline(always)]
    pub fn exp2(x: f32) -> f32 {
        let x = x.clamp(-151.0, 129.0);
        let (kf, k) = nearest(x);
        scale(exp_reduced((x - kf) * LN_2), k)
    }

    /// For x > 0 finite (other inputs give junk the callers replace):
    /// x = 2^e · (1 + f) with 1 + f in [√½, √2), and ln(1 + f) =
    /// f - h + s·(h + R) with h = f²/2, s = f/(2 + f) and R = z·p(z),
    /// z = s², from ln(1 + f) = 2 atanh(s) = 2s + s·R (since 2s = f - s·f).
    /// f is exact and the rest is small beside it, so the sum's roundings
    /// stay below an ulp. Returns (e, the ln(1 + f) parts).
    #[inline(always)]
    fn ln_parts(x: f32) -> (f32, f32, f32, f32) {
        // A subnormal x is scaled by 2^23 into the normal range first.
        let subnormal = x < f32::MIN_POSITIVE;
        let x = if subnormal { x * 8_388_608.0 } else { x };
        let bits = x.to_bits();
        let mut e = ((bits >> 23) as i32) - 127 - if subnormal { 23 } else { 0 };
        let mut m = f32::from_bits((bits & 0x007f_ffff) | (127 << 23));
        let big = m > SQRT_2;
        m = if big { m * 0.5 } else { m };
        e += big as i32;
        let f = m - 1.0;
        let h = 0.5 * f * f;
        let s = f / (2.0 + f);
        let z = s * s;
        let r = z * (0.666_666_6 + z * (0.400_003_64 + z * (0.285_354_1 + z * 0.236_191_9)));
        (e as f32, f, h, s * (h + r))
    }

    /// The value of a logarithm at x ≤ 0, +inf or NaN (C's), else `v`.
    #[inline(always)]
    fn log_special(x: f32, v: f32) -> f32 {
        if x > 0.0 && x < f32::INFINITY {
            v
        } else if x == 0.0 {
            f32::NEG_INFINITY
        } else if x == f32::INFINITY {
            x
        } else {
            f32::NAN
        }
    }

    /// ln x (-inf at ±0, NaN below 0): e·ln2 in two parts, the low one
    /// added to the small terms.
    #[inline(always)]
    pub fn ln(x: f32) -> f32 {
        let (e, f, h, t) = ln_parts(x);
        log_special(x, e * LN2_HI - ((h - (t + e * LN2_LO)) - f))
    }

    /// log2 x = e + ln(1 + f)·log2(e), e exact. ln(1 + f) is f - (h - t)
    /// and the product's large part, f's high 12 bits times log2(e)'s, is
    /// exact: rounding f·log2(e) as one product was 2 ulp off near 1.375.
    #[inline(always)]
    pub fn log2(x: f32) -> f32 {
        const HI: f32 = f32::from_bits(LOG2_E.to_bits() & 0xffff_f000);
        const LO: f32 = (std::f64::consts::LOG2_E - HI as f64) as f32;
        let (e, f, h, t) = ln_parts(x);
        let f_hi = f32::from_bits(f.to_bits() & 0xffff_f000);
        let small = (f - f_hi) * LOG2_E + f_hi * LO - (h - t) * LOG2_E;
        log_special(x, e + (f_hi * HI + small))
    }

    /// tanh x: below 0.625 in magnitude x + x·z·p(z), z = x², p of degree
    /// 5 (relative error 2^-29), where 1 - 2/(e^2|x| + 1) would cancel;
    /// above, that with `exp`; x's sign.
    #[inline(always)]
    pub fn tanh(x: f32) -> f32 {
        // tanh(10) rounds to 1 in f32.
        let a = x.abs().min(10.0);
        let z = a * a;
        let p = -0.333_333_3
            + z * (0.133_332_06
                + z * (-0.053_946_704
                    + z * (0.021_700_501 + z * (-0.008_177_093 + z * 0.002_142_803_7))));
        let small = a + a * z * p;
        let big = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
        let t = if a < 0.625 { small } else { big };
        if x.is_nan() { x } else { t.copysign(x) }
    }
}

#[cfg(test)]
mod tests {
    use super::math;

    /// Ulps between two finite f32 of one sign (or both zero).
    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    type Pair = (fn(f32) -> f32, fn(f64) -> f64, &'static str);

    const FUNCTIONS: [Pair; 5] = [
        (math::exp, f64::exp, "exp"),
        (math::exp2, f64::exp2, "exp2"),
        (math::ln, f64::ln, "ln"),
        (math::log2, f64::log2, "log2"),
        (math::tanh, f64::tanh, "tanh"),
    ];

    /// C's values at the edges: NaN, the infinities, both zeros, negative
    /// arguments of the logarithms, overflow, underflow to subnormals and
    /// to zero, tanh's saturation. The reference is libm's f64 function
    /// rounded to f32, exact at each of these.
    #[test]
    fn special_values_are_cs() {
        let inputs = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            -1.0,
            1.0,
            f32::MIN_POSITIVE / 8.0, // subnormal
            f32::MAX,
            89.0,
            -104.0,
            -90.0,  // e^-90: an f32 subnormal
            -149.5, // 2^-149.5: rounds to the least subnormal or 0
            128.0,
            20.0,
            -1e-30,
        ];
        for (ours, reference, name) in FUNCTIONS {
            for x in inputs {
                let (got, want) = (ours(x), reference(x as f64) as f32);
                let same = (got.is_nan() && want.is_nan())
                    || (got == want && got.is_sign_negative() == want.is_sign_negative());
                assert!(same, "{name}({x:e}) = {got:e}, C's is {want:e}");
            }
        }
    }

    /// Random finite inputs over each function's range, subnormals
    /// included: within 1 ulp of the correctly rounded result (libm's f64
    /// function rounded once, whose own error is far below an f32 ulp).
    #[test]
    fn random_inputs_are_within_one_ulp() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (ours, reference, name) in FUNCTIONS {
            for _ in 0..200_000 {
                let bits = next() as u32;
                let x = f32::from_bits(bits);
                let x = match name {
                    "exp" => (x.to_bits() % 200_000) as f32 / 1000.0 - 104.0,
                    "exp2" => (x.to_bits() % 280_000) as f32 / 1000.0 - 150.0,
                    // Half over [-20, 20], half below 0.625 in magnitude
                    // (log-uniform), where tanh takes its polynomial.
                    "tanh" if bits & 1 == 0 => (x.to_bits() % 40_000) as f32 / 1000.0 - 20.0,
                    "tanh" => f32::from_bits((bits % 0x3f20_0000) | (bits & 0x8000_0000)),
                    // Any positive finite f32, subnormals included.
                    _ => f32::from_bits(bits & 0x7f7f_ffff),
                };
                let (got, want) = (ours(x), reference(x as f64) as f32);
                assert!(
                    ulps(got, want) <= 1,
                    "{name}({x:e}) = {got:e}, the correctly rounded result is {want:e}"
                );
            }
        }
    }
}
