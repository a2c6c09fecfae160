//! The f32 helpers of Box–Muller (random.rs), once as
//! `#[unigpu::device]` functions for the kernels and once as plain Rust
//! (`host`) for the CPU backend's native normal loop (cpu.rs), so both
//! run the same operations. A file of their own so that cpu.rs reads
//! them without importing random.rs, which attaches cpu.rs's loop.

/// Each function as a device function and in `host` (none of them can
/// overflow an integer, so Rust's checked arithmetic agrees with the
/// kernel language's wrapping).
macro_rules! device_and_host {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ident),*) -> $ret:ident $body:block)*) => {
        $($(#[$doc])* #[unigpu::device] fn $name($($arg: $ty),*) -> $ret $body)*
        // The kernels' source as written: `x = x * k` where Rust's style
        // is `x *= k`, exact powers of two in all their digits, and
        // constants as literals (the kernel language has no `consts`).
        #[allow(clippy::assign_op_pattern, clippy::excessive_precision, clippy::approx_constant)]
        pub(crate) mod host {
            $(#[inline(always)] pub(crate) fn $name($($arg: $ty),*) -> $ret $body)*
        }
    };
}

device_and_host! {
    /// 1/d for d in [1 + √½, 1 + √2]: a quadratic start (relative error
    /// below 0.0015, a least-squares fit at Chebyshev nodes) and two
    /// Newton steps e → e² in fma form (error below 10^-11 before
    /// rounding).
    fn recip_f32(d: f32) -> f32 {
        let mut r = d.mul_add(d.mul_add(0.11598972f32, -0.7188184f32), 1.4740458f32);
        r = r.mul_add((-d).mul_add(r, 1.0f32), r);
        r = r.mul_add((-d).mul_add(r, 1.0f32), r);
        r
    }

    /// ln(u) for u in [2^-31, 1]: u = m·2^e with m in [√½, √2) from u's
    /// bits (its exponent field and its significand under exponent 0,
    /// then one halving), ln m = 2 atanh(s), s = (m − 1)/(m + 1),
    /// |s| < 0.172, as s (1 + s² q(s²)) with q a quadratic fitted at
    /// Chebyshev nodes (relative error 2.6·10^-9 before rounding).
    fn ln_unit_f32(u: f32) -> f32 {
        let b = u.to_bits();
        let mut e = ((b >> 23u32) as i32) - 127i32;
        let mut m = f32::from_bits((b & 0x007f_ffffu32) | 0x3f80_0000u32);
        // √2 in f32, 2 · 0.70710677 exactly: m ends in [0.70710677, 1.4142135).
        if m >= 1.4142135f32 {
            m = m * 0.5f32;
            e = e + 1i32;
        }
        let f = m - 1.0f32;
        let s = f * recip_f32(m + 1.0f32);
        let s2 = s * s;
        let p = s2.mul_add(s2.mul_add(0.14790449f32, 0.19994377f32), 0.33333343f32);
        let t = s + s;
        let lnm = t.mul_add(s2 * p, t);
        let ef = e as f32;
        // ln 2 in two parts, the first with few enough bits that e times
        // it is exact.
        ef.mul_add(0.6931381f32, ef.mul_add(9.0580006e-6f32, lnm))
    }

    /// √a for a = 0 or a in [2^-30, 2^8): a = x · 4^j with x in [¼, 1)
    /// from a's bits (x keeps a's significand under exponent -2 or -1,
    /// whichever leaves an even power to take out, and k = 2^j), 1/√x
    /// from a cubic start (relative error below 0.0092) and two Newton
    /// steps (below 2.5·10^-8), then x · (1/√x) · k.
    fn sqrt_f32(a: f32) -> f32 {
        if a == 0.0f32 {
            return 0.0f32;
        }
        let b = a.to_bits();
        let exp = b >> 23u32;
        let x_exp = 126u32 - (exp & 1u32);
        let x = f32::from_bits((b & 0x007f_ffffu32) | (x_exp << 23u32));
        let k = f32::from_bits(((exp + 254u32 - x_exp) >> 1u32) << 23u32);
        let mut y =
            x.mul_add(x.mul_add(x.mul_add(-2.2240102f32, 5.8140693f32), -5.664022f32), 3.06903f32);
        let h = 0.5f32 * x;
        y = y * (h * y).mul_add(-y, 1.5f32);
        y = y * (h * y).mul_add(-y, 1.5f32);
        x * y * k
    }

    /// sin x for |x| ≤ π/4: x + x³ q(x²), q a quadratic fitted at
    /// Chebyshev nodes (absolute error 4.5·10^-9 before rounding).
    fn sin_poly_f32(x: f32) -> f32 {
        let x2 = x * x;
        let p = x2.mul_add(x2.mul_add(-0.00019493497f32, 0.008331958f32), -0.16666651f32);
        (x * x2).mul_add(p, x)
    }

    /// cos x for |x| ≤ π/4: 1 − x²/2 + x⁴ q(x²), q a quadratic fitted at
    /// Chebyshev nodes (absolute error 3.2·10^-10 before rounding).
    fn cos_poly_f32(x: f32) -> f32 {
        let x2 = x * x;
        let p = x2.mul_add(x2.mul_add(2.4435853e-5f32, -0.0013887342f32), 0.041666646f32);
        x2.mul_add(x2.mul_add(p, -0.5f32), 1.0f32)
    }

    /// The quadrant (0..=3) nearest a 24-bit phase p (a fraction p/2^24 of a turn).
    fn quadrant24(p: u32) -> u32 {
        (((p >> 21u32) + 1u32) >> 1u32) & 3u32
    }
}
