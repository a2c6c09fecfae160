//! The element-wise built-in ops (add, sub, mul, axpy, scale, relu,
//! sigmoid, tanh) on any float type, on the default stream or a new one.
//! All but sigmoid and tanh are one rounding of the op done in `T::Acc`,
//! so they are checked exactly; the two transcendentals to the op tests'
//! bound.

use rand::Rng;

use super::{Step, StepResult, refusable, verdict};
use crate::soak::check::{first_outside, first_unequal};
use crate::soak::tolerance;
use crate::soak::values::{SoakFloat, float_dtype, length, small, with_float_dtype};

pub fn run(step: &mut Step) -> StepResult {
    let dtype = float_dtype(&mut step.rng);
    let may_refuse = dtype == unigpu::DType::F64 && step.target.may_refuse_f64();
    with_float_dtype!(dtype, T => refusable(may_refuse, || elementwise::<T>(step)))
}

const OPS: [&str; 8] = [
    "add", "sub", "mul", "axpy", "scale", "relu", "sigmoid", "tanh",
];

fn elementwise<T: SoakFloat>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let n = length(&mut step.rng);
    let op = OPS[step.rng.random_range(0..OPS.len())];
    let stream = step.any_stream()?;
    let ops = ctx.ops_on(&stream);
    let (ha, hb) = (small::<T>(&mut step.rng, n), small::<T>(&mut step.rng, n));
    let alpha = small::<T>(&mut step.rng, 1)[0];
    let a = ctx.upload(&ha)?;
    // The output starts as other data: every element must be written.
    let mut out = ctx.upload(&hb)?;
    let b = ctx.upload(&hb)?;
    let acc = |x: T| x.to_acc();
    let exact = |f: &dyn Fn(T, T) -> T::Acc| -> Vec<T> {
        ha.iter()
            .zip(&hb)
            .map(|(&x, &y)| T::from_acc(f(x, y)))
            .collect()
    };
    let expected: Vec<T> = match op {
        "add" => {
            ops.add(&a, &b, &mut out)?;
            exact(&|x, y| acc(x) + acc(y))
        }
        "sub" => {
            ops.sub(&a, &b, &mut out)?;
            exact(&|x, y| acc(x) - acc(y))
        }
        "mul" => {
            ops.mul(&a, &b, &mut out)?;
            exact(&|x, y| acc(x) * acc(y))
        }
        "axpy" => {
            // `out` holds hb: out = alpha * a + out.
            ops.axpy(alpha, &a, &mut out)?;
            let once = step.target.rounding.axpy_rounds_once(T::DTYPE);
            exact(&|x, y| {
                if once {
                    num_traits::Float::mul_add(acc(alpha), acc(x), acc(y))
                } else {
                    acc(alpha) * acc(x) + acc(y)
                }
            })
        }
        "scale" => {
            ops.copy(&a, &mut out)?;
            ops.scale(alpha, &mut out)?;
            exact(&|x, _| acc(alpha) * acc(x))
        }
        _ => return transcendental(step, op, &ha, &a, &mut out, &stream),
    };
    let got = out.download()?;
    Ok(verdict(first_unequal(&expected, &got), || {
        (format!("{op} {}", T::DTYPE), format!("n={n}"))
    }))
}

/// relu (exact, but either sign of zero), sigmoid and tanh (a few ulps).
fn transcendental<T: SoakFloat>(
    step: &Step,
    op: &str,
    hx: &[T],
    x: &unigpu::GpuArray<T>,
    out: &mut unigpu::GpuArray<T>,
    stream: &unigpu::Stream,
) -> StepResult {
    let ops = step.target.ctx.ops_on(stream);
    let xs: Vec<f64> = hx.iter().map(|v| v.to_f64()).collect();
    let (expected, rel): (Vec<f64>, f64) = match op {
        "relu" => {
            ops.relu(x, out)?;
            (xs.iter().map(|v| v.max(0.0)).collect(), 0.0)
        }
        "sigmoid" => {
            ops.sigmoid(x, out)?;
            let want = xs.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
            (want, tolerance::transcendental::<T>())
        }
        _ => {
            ops.tanh(x, out)?;
            (
                xs.iter().map(|v| v.tanh()).collect(),
                tolerance::transcendental::<T>(),
            )
        }
    };
    let got: Vec<f64> = out.download()?.iter().map(|v| v.to_f64()).collect();
    let difference = first_outside(&expected, &got, |_, e| rel * e.abs() + T::TINY);
    Ok(verdict(difference, || {
        (format!("{op} {}", T::DTYPE), format!("n={}", hx.len()))
    }))
}
