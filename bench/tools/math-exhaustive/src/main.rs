//! Every f32 of each function's range through `unigpu::simd::math` (the
//! file itself, compiled here alone), under the same SIMD dispatch as the
//! kernels, against libm's f64 function rounded to f32. Prints the
//! largest distance in ulps and how many results are not the correctly
//! rounded one; exits 1 if any is more than 1 ulp away.

#[path = "../../../../crates/unigpu/src/simd.rs"]
#[allow(dead_code)]
mod simd;

use rayon::prelude::*;
use simd::math;

/// Distance in representable f32 values (0 for two NaNs).
fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    let key = |v: f32| {
        let b = v.to_bits() as i32 as i64;
        if b < 0 { -(b & 0x7fff_ffff) } else { b }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// The worst distance, its input and the count not correctly rounded.
fn check(ours: fn(f32) -> f32, reference: fn(f64) -> f64, lo: f32, hi: f32) -> (u64, f32, u64) {
    const BLOCK: u32 = 1 << 20;
    (0..=u32::MAX / BLOCK)
        .into_par_iter()
        .map(|b| {
            let inputs: Vec<f32> = (0..BLOCK).map(|i| f32::from_bits(b * BLOCK + i)).collect();
            let mut got = vec![0f32; inputs.len()];
            simd::simd(
                #[inline(always)]
                || {
                    for (o, &x) in got.iter_mut().zip(&inputs) {
                        *o = ours(x);
                    }
                },
            );
            let mut worst = (0, 0.0, 0);
            for (&x, &g) in inputs.iter().zip(&got) {
                if x >= lo && x <= hi {
                    let d = ulps(g, reference(x as f64) as f32);
                    worst.2 += (d > 0) as u64;
                    if d > worst.0 {
                        (worst.0, worst.1) = (d, x);
                    }
                }
            }
            worst
        })
        .reduce(
            || (0, 0.0, 0),
            |a, b| {
                let (d, at) = if b.0 > a.0 { (b.0, b.1) } else { (a.0, a.1) };
                (d, at, a.2 + b.2)
            },
        )
}

type Case = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f32, f32);

fn main() {
    let cases: [Case; 5] = [
        ("exp", math::exp, f64::exp, -104.0, 89.0),
        ("exp2", math::exp2, f64::exp2, -151.0, 129.0),
        ("ln", math::ln, f64::ln, 0.0, f32::MAX),
        ("log2", math::log2, f64::log2, 0.0, f32::MAX),
        ("tanh", math::tanh, f64::tanh, -20.0, 20.0),
    ];
    let only = std::env::args().nth(1);
    let mut failed = false;
    for (name, ours, reference, lo, hi) in cases {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let (d, at, missed) = check(ours, reference, lo, hi);
        println!(
            "{name} on [{lo:e}, {hi:e}]: max {d} ulp (at {at:e}); {missed} results not correctly rounded"
        );
        failed |= d > 1;
    }
    std::process::exit(failed as i32);
}
