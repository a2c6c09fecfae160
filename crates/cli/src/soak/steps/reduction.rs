//! sum, dot and max on any float type, against compensated f64 sums held
//! to the op tests' bound; max exactly. max of an empty array must be an
//! error.

use rand::Rng;

use super::{Outcome, Step, StepResult, refusable, verdict};
use crate::soak::check::{Difference, first_outside};
use crate::soak::tolerance::{self, accurate_dot, accurate_sum};
use crate::soak::values::{SoakFloat, float_dtype, length, small, with_float_dtype};

pub fn run(step: &mut Step) -> StepResult {
    let dtype = float_dtype(&mut step.rng);
    let may_refuse = dtype == unigpu::DType::F64 && step.target.may_refuse_f64();
    with_float_dtype!(dtype, T => refusable(may_refuse, || reduce::<T>(step)))
}

fn reduce<T: SoakFloat>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let backend = step.target.backend;
    let n = length(&mut step.rng);
    let (hx, hy) = (small::<T>(&mut step.rng, n), small::<T>(&mut step.rng, n));
    let stream = step.any_stream()?;
    let ops = ctx.ops_on(&stream);
    let (x, y) = (ctx.upload(&hx)?, ctx.upload(&hy)?);
    let xs: Vec<f64> = hx.iter().map(|v| v.to_f64()).collect();
    let ys: Vec<f64> = hy.iter().map(|v| v.to_f64()).collect();
    let sizes = || format!("n={n}");
    let (op, expected, got, tol) = match step.rng.random_range(0..3) {
        0 => {
            let want = accurate_sum(xs.iter().copied());
            let abs = accurate_sum(xs.iter().map(|v| v.abs()));
            let tol = tolerance::reduction::<T>(backend, n, want, abs);
            ("sum", want, ops.sum(&x)?.to_f64(), tol)
        }
        1 => {
            let want = accurate_dot(xs.iter().copied().zip(ys.iter().copied()));
            let abs = accurate_dot(xs.iter().map(|v| v.abs()).zip(ys.iter().map(|v| v.abs())));
            let tol = tolerance::reduction::<T>(backend, n, want, abs);
            ("dot", want, ops.dot(&x, &y)?.to_f64(), tol)
        }
        _ if n == 0 => {
            return Ok(match ops.max(&x) {
                Err(_) => Outcome::Passed,
                Ok(v) => verdict(
                    Some(Difference {
                        index: 0,
                        len: 0,
                        expected: "an error (max of an empty array)".into(),
                        got: format!("{v:?}"),
                        tolerance: None,
                    }),
                    || (format!("max {}", T::DTYPE), sizes()),
                ),
            });
        }
        _ => {
            let want = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            ("max", want, ops.max(&x)?.to_f64(), 0.0)
        }
    };
    Ok(verdict(
        first_outside(&[expected], &[got], |_, _| tol),
        || (format!("{op} {}", T::DTYPE), sizes()),
    ))
}
