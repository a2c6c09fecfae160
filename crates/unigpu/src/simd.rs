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
/// on the CPU, in branch-free f64 arithmetic that LLVM vectorises, where
/// libm's `expf` & co. are a call per element that keeps the whole loop
/// scalar (exp ran at 0.35× numpy's speed on 2 cores).
///
/// Each computes in f64 to a relative error near 2^-40 and rounds once
/// to f32, so a result is the correctly rounded one or its neighbour
/// (within 1 ulp; kernel_ulp.rs measures them) at every input, subnormal
/// ones included (an f32 subnormal is a normal f64). The special values
/// are C's, checked against libm by kernel_lang.rs.
pub mod math {
    use std::f64::consts::{LN_2, LOG2_E};

    /// Adding then subtracting 1.5·2^52 rounds an f64 below 2^51 to the
    /// nearest integer, which then sits in the low bits of the sum (SSE2
    /// has no vector round, and `as i64` saturates, which does not
    /// vectorise).
    const SHIFTER: f64 = 6_755_399_441_055_744.0;

    /// ln 2 in two parts: 32 bits, so `k · LN2_HI` is exact for |k| < 2^20,
    /// and the rest.
    const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

    /// 2^k for an integer k in [-1022, 1023], from its bit pattern.
    #[inline(always)]
    fn pow2(k: i64) -> f64 {
        f64::from_bits((k.wrapping_add(1023) as u64) << 52)
    }

    /// The nearest integer to `v` (|v| < 2^51), as f64 and i64.
    #[inline(always)]
    fn nearest(v: f64) -> (f64, i64) {
        let shifted = v + SHIFTER;
        let k = (shifted.to_bits() as i64).wrapping_sub(SHIFTER.to_bits() as i64);
        (shifted - SHIFTER, k)
    }

    /// e^r for |r| ≤ ln2/2 + a little: Taylor to r^11 (the next term is
    /// below 2^-45 relative).
    #[inline(always)]
    fn exp_reduced(r: f64) -> f64 {
        const C: [f64; 12] = [
            1.0,
            1.0,
            1.0 / 2.0,
            1.0 / 6.0,
            1.0 / 24.0,
            1.0 / 120.0,
            1.0 / 720.0,
            1.0 / 5040.0,
            1.0 / 40320.0,
            1.0 / 362_880.0,
            1.0 / 3_628_800.0,
            1.0 / 39_916_800.0,
        ];
        let mut p = C[11];
        for c in C[..11].iter().rev() {
            p = p * r + c;
        }
        p
    }

    /// e^t in f64 for t clamped by the caller to where e^t is a normal
    /// f64 (NaN passes): t = k·ln2 + r, e^r by its series, times 2^k as
    /// two powers of two (each a normal f64 for |k| up to 2044). A
    /// subnormal intermediate would cost a microcode assist per lane.
    #[inline(always)]
    fn exp64(t: f64) -> f64 {
        let (kf, k) = nearest(t * LOG2_E);
        let r = (t - kf * LN2_HI) - kf * LN2_LO;
        let (k1, k2) = (k >> 1, k - (k >> 1));
        exp_reduced(r) * pow2(k1) * pow2(k2)
    }

    /// ln x for x > 0 finite (other inputs give junk the callers replace):
    /// x = 2^e · m with m in [√½, √2), ln m = 2 atanh(s), s = (m-1)/(m+1),
    /// |s| ≤ 0.172, by its series to s^13.
    #[inline(always)]
    fn ln64(x: f64) -> f64 {
        const MANTISSA: u64 = (1 << 52) - 1;
        let bits = x.to_bits();
        let mut e = ((bits >> 52) as i64) - 1023;
        let mut m = f64::from_bits((bits & MANTISSA) | (1023 << 52));
        let big = m > std::f64::consts::SQRT_2;
        m = if big { m * 0.5 } else { m };
        e += big as i64;
        let f = m - 1.0;
        let s = f / (2.0 + f);
        let z = s * s;
        let r = z
            * (2.0 / 3.0
                + z * (2.0 / 5.0
                    + z * (2.0 / 7.0 + z * (2.0 / 9.0 + z * (2.0 / 11.0 + z * (2.0 / 13.0))))));
        e as f64 * LN_2 + (2.0 * s + s * r)
    }

    /// e^x.
    #[inline(always)]
    pub fn exp(x: f32) -> f32 {
        // e^-104 is below half the least f32 subnormal and e^89 above the
        // largest f32, so the clamp changes no result.
        exp64((x as f64).clamp(-110.0, 90.0)) as f32
    }

    /// 2^x.
    #[inline(always)]
    pub fn exp2(x: f32) -> f32 {
        let t = (x as f64).clamp(-160.0, 130.0);
        let (kf, k) = nearest(t);
        let (k1, k2) = (k >> 1, k - (k >> 1));
        (exp_reduced((t - kf) * LN_2) * pow2(k1) * pow2(k2)) as f32
    }

    /// The value of a logarithm at x ≤ 0, +inf or NaN (C's), else `v`.
    #[inline(always)]
    fn log_special(x: f32, v: f64) -> f32 {
        if x > 0.0 && x < f32::INFINITY {
            v as f32
        } else if x == 0.0 {
            f32::NEG_INFINITY
        } else if x == f32::INFINITY {
            x
        } else {
            f32::NAN
        }
    }

    /// ln x (-inf at ±0, NaN below 0).
    #[inline(always)]
    pub fn ln(x: f32) -> f32 {
        log_special(x, ln64(x as f64))
    }

    /// log2 x.
    #[inline(always)]
    pub fn log2(x: f32) -> f32 {
        log_special(x, ln64(x as f64) * LOG2_E)
    }

    /// tanh x: 1 - 2/(e^2|x| + 1) with x's sign, and x - x³/3 below 2^-10
    /// where that difference would cancel.
    #[inline(always)]
    pub fn tanh(x: f32) -> f32 {
        let v = x as f64;
        // tanh(20) rounds to 1 in f32.
        let a = v.abs().min(20.0);
        let big = 1.0 - 2.0 / (exp64(2.0 * a) + 1.0);
        let small = a - a * a * a / 3.0;
        let t = if a < 1.0 / 1024.0 { small } else { big };
        if x.is_nan() { x } else { t.copysign(v) as f32 }
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
                    // Half over [-20, 20], half below 2^-9 in magnitude
                    // (log-uniform), where tanh takes its short series.
                    "tanh" if bits & 1 == 0 => (x.to_bits() % 40_000) as f32 / 1000.0 - 20.0,
                    "tanh" => f32::from_bits((bits % 0x3b00_0000) | (bits & 0x8000_0000)),
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
