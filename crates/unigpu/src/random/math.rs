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
    /// 1/d for d in [1 + √½, 1 + √2]: a linear start (relative error below
    /// 0.015) and Newton steps e → e², three for f32.
    fn recip_f32(d: f32) -> f32 {
        let mut r = 0.9850615f32 - 0.239016f32 * d;
        r = r + r * (1.0f32 - d * r);
        r = r + r * (1.0f32 - d * r);
        r = r + r * (1.0f32 - d * r);
        r
    }

    /// ln(u) for u in [2^-31, 1]: u = m·2^e with m in [√½, √2) from u's
    /// bits (its exponent field and its significand under exponent 0,
    /// then one halving), ln m = 2 atanh(s), s = (m − 1)/(m + 1),
    /// |s| < 0.172, as an odd series to s^11.
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
        let p = 0.33333334f32
            + s2 * (0.2f32 + s2 * (0.14285715f32 + s2 * (0.11111111f32 + s2 * 0.09090909f32)));
        let lnm = (s + s) + (s + s) * (s2 * p);
        let ef = e as f32;
        ef * 0.6931381f32 + (ef * 9.0580006e-6f32 + lnm)
    }

    /// √a for a = 0 or a in [2^-30, 2^8): a = x · 4^j with x in [¼, 1)
    /// from a's bits (x keeps a's significand under exponent -2 or -1,
    /// whichever leaves an even power to take out, and k = 2^j), 1/√x
    /// from a quadratic start (relative error below 0.03) and three Newton
    /// steps, then x · (1/√x) · k.
    fn sqrt_f32(a: f32) -> f32 {
        if a == 0.0f32 {
            return 0.0f32;
        }
        let b = a.to_bits();
        let exp = b >> 23u32;
        let x_exp = 126u32 - (exp & 1u32);
        let x = f32::from_bits((b & 0x007f_ffffu32) | (x_exp << 23u32));
        let k = f32::from_bits(((exp + 254u32 - x_exp) >> 1u32) << 23u32);
        let mut y = 2.628649f32 + x * (-3.1339707f32 + x * 1.5231842f32);
        y = y * (1.5f32 - 0.5f32 * x * y * y);
        y = y * (1.5f32 - 0.5f32 * x * y * y);
        y = y * (1.5f32 - 0.5f32 * x * y * y);
        x * y * k
    }

    /// sin x for |x| ≤ π/4: Taylor to x^11.
    fn sin_poly_f32(x: f32) -> f32 {
        let x2 = x * x;
        let p = -0.16666667f32
            + x2 * (0.008333334f32
                + x2 * (-0.0001984127f32 + x2 * (2.7557319e-6f32 + x2 * -2.5052108e-8f32)));
        x + x * (x2 * p)
    }

    /// cos x for |x| ≤ π/4: Taylor to x^12.
    fn cos_poly_f32(x: f32) -> f32 {
        let x2 = x * x;
        let p = 0.041666668f32
            + x2 * (-0.0013888889f32
                + x2 * (2.4801588e-5f32 + x2 * (-2.7557319e-7f32 + x2 * 2.0876756e-9f32)));
        1.0f32 + x2 * (-0.5f32 + x2 * p)
    }

    /// The quadrant (0..=3) nearest a 24-bit phase p (a fraction p/2^24 of a turn).
    fn quadrant24(p: u32) -> u32 {
        (((p >> 21u32) + 1u32) >> 1u32) & 3u32
    }
}
