//! A small pipeline: random depth, batch length and batch count, computing
//! `alpha * relu(x)` on its compute stream; every batch's output checked.

use rand::Rng;

use super::{Outcome, Step, StepResult, refusable, verdict};
use crate::soak::check::first_unequal;
use crate::soak::values::{SoakFloat, float_dtype, small, with_float_dtype};

pub fn run(step: &mut Step) -> StepResult {
    let dtype = float_dtype(&mut step.rng);
    let may_refuse = dtype == unigpu::DType::F64 && step.target.may_refuse_f64();
    with_float_dtype!(dtype, T => refusable(may_refuse, || pipeline::<T>(step)))
}

fn pipeline<T: SoakFloat>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let depth = step.rng.random_range(1..=3);
    let batch_len = match step.rng.random_range(0..4) {
        0 => step.rng.random_range(1..=9),
        _ => step.rng.random_range(1..=1 << 16),
    };
    let batches = step.rng.random_range(1..=6);
    let alpha = small::<T>(&mut step.rng, 1)[0];
    let inputs: Vec<Vec<T>> = (0..batches)
        .map(|_| small::<T>(&mut step.rng, batch_len))
        .collect();
    let mut outputs = vec![vec![T::default(); batch_len]; batches];
    let mut p = ctx.pipeline::<T>(depth, batch_len)?;
    p.run(&inputs, &mut outputs, |s, x, y| {
        let ops = ctx.ops_on(s);
        ops.relu(x, y)?;
        ops.scale(alpha, y)
    })?;
    for (batch, (input, got)) in inputs.iter().zip(&outputs).enumerate() {
        let expected: Vec<T> = input
            .iter()
            .map(|&x| {
                let relu = if x.to_f64() > 0.0 {
                    x
                } else {
                    T::from_f64(0.0)
                };
                T::from_acc(alpha.to_acc() * relu.to_acc())
            })
            .collect();
        if let Some(d) = first_unequal(&expected, got) {
            return Ok(verdict(Some(d), || {
                (
                    format!("pipeline batch {batch} {}", T::DTYPE),
                    format!("depth={depth} batch_len={batch_len} batches={batches}"),
                )
            }));
        }
    }
    Ok(Outcome::Passed)
}
