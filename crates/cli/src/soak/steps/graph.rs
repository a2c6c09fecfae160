//! A graph captured once (relu, scale, add; on the u32 path the mix
//! kernel) and replayed several times with new input uploaded between
//! replays, each replay's result checked. A backend that refuses capture
//! says `Unsupported`, which counts as unsupported, not a failure.

use rand::Rng;
use unigpu::{DType, Graph, Grid};

use super::{Outcome, Step, StepResult, is_unsupported, verdict};
use crate::soak::check::first_unequal;
use crate::soak::target::WGSL_BLOCK;
use crate::soak::values::{SoakFloat, any_bits, float_dtype, length, small, with_float_dtype};

pub fn run(step: &mut Step) -> StepResult {
    if step.rng.random_bool(0.25) {
        kernel_graph(step)
    } else {
        let dtype = float_dtype(&mut step.rng);
        with_float_dtype!(dtype, T => op_graph::<T>(step))
    }
}

/// The graph, or the backend's refusal to capture it (the refusal is
/// `Unsupported`, on the capture or on work it records, f64 on an adapter
/// without it for one); any other error is an error.
fn captured(graph: unigpu::Result<Graph>) -> unigpu::Result<Result<Graph, Outcome>> {
    match graph {
        Ok(g) => Ok(Ok(g)),
        Err(e) if is_unsupported(&e) => Ok(Err(Outcome::Unsupported(e.to_string()))),
        Err(e) => Err(e),
    }
}

/// `z = alpha * relu(x) + b`, replayed with new `x` each time.
fn op_graph<T: SoakFloat>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let n = length(&mut step.rng);
    let replays = step.rng.random_range(2..=5);
    let alpha = small::<T>(&mut step.rng, 1)[0];
    let hb = small::<T>(&mut step.rng, n);
    let mut x = ctx.upload(&small::<T>(&mut step.rng, n))?;
    let b = ctx.upload(&hb)?;
    let mut y = ctx.alloc::<T>(n)?;
    let mut z = ctx.alloc::<T>(n)?;
    let stream = ctx.create_stream()?;
    let graph = match captured(stream.capture(|s| {
        let ops = ctx.ops_on(s);
        ops.relu(&x, &mut y)?;
        ops.scale(alpha, &mut y)?;
        ops.add(&y, &b, &mut z)
    }))? {
        Ok(graph) => graph,
        Err(refused) => return Ok(refused),
    };
    for replay in 1..=replays {
        let hx = small::<T>(&mut step.rng, n);
        x.upload_from(&hx)?;
        graph.launch(&stream)?;
        let got = z.download()?;
        let expected: Vec<T> = hx
            .iter()
            .zip(&hb)
            .map(|(&x, &b)| {
                let relu = if x.to_f64() > 0.0 {
                    x
                } else {
                    T::from_f64(0.0)
                };
                let scaled = T::from_acc(alpha.to_acc() * relu.to_acc());
                T::from_acc(scaled.to_acc() + b.to_acc())
            })
            .collect();
        if let Some(d) = first_unequal(&expected, &got) {
            return Ok(verdict(Some(d), || {
                (
                    format!("graph replay {replay} of {replays} {}", T::DTYPE),
                    format!("n={n} nodes={}", graph.len()),
                )
            }));
        }
    }
    Ok(Outcome::Passed)
}

/// The mix kernel captured with a copy before it: `y = x0; y = a*x + (y ^ i)`.
fn kernel_graph(step: &mut Step) -> StepResult {
    let kernels = match &step.target.kernels {
        Ok(k) => k.clone(),
        Err(e) => return Err(e.clone()),
    };
    let ctx = &step.target.ctx;
    let n = length(&mut step.rng);
    let n32 = n as u32; // lengths fit in u32 (values::MAX_LEN)
    let replays = step.rng.random_range(2..=5);
    let a: u32 = step.rng.random();
    let h0 = any_bits::<u32>(&mut step.rng, n);
    let mut x = ctx.upload(&any_bits::<u32>(&mut step.rng, n))?;
    let start = ctx.upload(&h0)?;
    let mut y = ctx.alloc::<u32>(n)?;
    let stream = ctx.create_stream()?;
    let grid = Grid::for_elems_with_block(n, WGSL_BLOCK);
    let graph = match captured(stream.capture(|s| {
        s.copy(&start, &mut y)?;
        s.launch(&kernels.mix, grid, (a, &x, &mut y, n32))
    }))? {
        Ok(graph) => graph,
        Err(refused) => return Ok(refused),
    };
    for replay in 1..=replays {
        let hx = any_bits::<u32>(&mut step.rng, n);
        x.upload_from(&hx)?;
        graph.launch(&stream)?;
        let got = y.download()?;
        let expected: Vec<u32> = hx
            .iter()
            .zip(&h0)
            .enumerate()
            .map(|(i, (x, y))| a.wrapping_mul(*x).wrapping_add(y ^ i as u32))
            .collect();
        if let Some(d) = first_unequal(&expected, &got) {
            return Ok(verdict(Some(d), || {
                (
                    format!(
                        "graph replay {replay} of {replays} (copy + soak_mix) {}",
                        DType::U32
                    ),
                    format!("n={n} nodes={}", graph.len()),
                )
            }));
        }
    }
    Ok(Outcome::Passed)
}
