//! matmul of row-major random shapes (odd ones, k = 0 now and then) on any
//! float type, every entry against a compensated f64 dot held to the op
//! tests' bound.

use rand::Rng;
use rand::rngs::StdRng;

use super::{Step, StepResult, refusable, verdict};
use crate::soak::check::first_outside;
use crate::soak::tolerance::{self, accurate_dot};
use crate::soak::values::{SoakFloat, any_bits, float_dtype, small, with_float_dtype};

pub fn run(step: &mut Step) -> StepResult {
    let dtype = float_dtype(&mut step.rng);
    let may_refuse = dtype == unigpu::DType::F64 && step.target.may_refuse_f64();
    with_float_dtype!(dtype, T => refusable(may_refuse, || matmul::<T>(step)))
}

/// One dimension: mostly small and odd, now and then past the vulkan
/// kernel's 128-wide tiles.
fn dim(rng: &mut StdRng) -> usize {
    match rng.random_range(0..10) {
        0 => rng.random_range(129..=200),
        _ => rng.random_range(1..=64),
    }
}

fn matmul<T: SoakFloat>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let (m, n) = (dim(&mut step.rng), dim(&mut step.rng));
    let k = if step.rng.random_bool(0.03) {
        0
    } else {
        dim(&mut step.rng)
    };
    let (ha, hb) = (
        small::<T>(&mut step.rng, m * k),
        small::<T>(&mut step.rng, k * n),
    );
    let stream = step.any_stream()?;
    let (a, b) = (ctx.upload(&ha)?, ctx.upload(&hb)?);
    // c starts as garbage: every entry must be written.
    let mut c = ctx.upload(&any_bits::<T>(&mut step.rng, m * n))?;
    ctx.ops_on(&stream).matmul(&a, &b, &mut c, (m, k, n))?;
    let got: Vec<f64> = c.download()?.iter().map(|v| v.to_f64()).collect();

    let a: Vec<f64> = ha.iter().map(|v| v.to_f64()).collect();
    let b: Vec<f64> = hb.iter().map(|v| v.to_f64()).collect();
    let mut expected = Vec::with_capacity(m * n);
    let mut bounds = Vec::with_capacity(m * n);
    for i in 0..m {
        let row = &a[i * k..(i + 1) * k];
        for j in 0..n {
            let col = (0..k).map(|p| b[p * n + j]);
            let want = accurate_dot(row.iter().copied().zip(col.clone()));
            let abs = accurate_dot(row.iter().map(|v| v.abs()).zip(col.map(f64::abs)));
            expected.push(want);
            bounds.push(tolerance::matmul::<T>(
                matches!(
                    step.target.backend,
                    unigpu::Backend::Cuda | unigpu::Backend::Torch
                ),
                k,
                want,
                abs,
            ));
        }
    }
    let difference = first_outside(&expected, &got, |i, _| bounds[i]);
    Ok(verdict(difference, || {
        (format!("matmul {}", T::DTYPE), format!("m={m} k={k} n={n}"))
    }))
}
