//! A chain of small ops captured once into a graph and replayed, against
//! the same chain launched op by op; the answers are checked against the
//! host, and the per-op times printed.
//!
//!     cargo run --release -p unigpu --example 09_graphs
//!
//! On the cuda backend a replay is one `cuGraphLaunch`; on the CPU backend
//! it submits the recorded jobs again. The torch backend cannot capture.

use std::time::Instant;

use unigpu::{Context, GpuArray, Stream};

const OPS_PER_STEP: usize = 4;
const STEPS: usize = 500;

/// One step, four small element-wise ops: x = relu(0.5 x + b) - 0.5 b.
fn step(
    ctx: &Context,
    s: &Stream,
    x: &mut GpuArray<f32>,
    b: &GpuArray<f32>,
    t: &mut GpuArray<f32>,
) -> unigpu::Result<()> {
    let ops = ctx.ops_on(s);
    ops.scale(0.5, x)?;
    ops.add(x, b, t)?;
    ops.relu(t, x)?;
    ops.axpy(-0.5, b, x)
}

fn host_step(x: &mut [f32], b: &[f32]) {
    for (x, &b) in x.iter_mut().zip(b) {
        let t = 0.5 * *x + b;
        *x = (-0.5f32).mul_add(b, t.max(0.0));
    }
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n = 1 << 12;
    let x0: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let b0: Vec<f32> = (0..n)
        .map(|i| ((i * 104_729) % 997) as f32 / 997.0 - 0.5)
        .collect();
    let s = ctx.create_stream()?;
    let b = ctx.upload(&b0)?;
    let mut t = ctx.zeros::<f32>(n)?;

    // Op by op.
    let mut x = ctx.upload(&x0)?;
    ctx.sync()?;
    let start = Instant::now();
    for _ in 0..STEPS {
        step(&ctx, &s, &mut x, &b, &mut t)?;
    }
    s.sync()?;
    let eager = start.elapsed();
    let eager_result = x.download()?;

    // Captured once, replayed.
    let mut y = ctx.upload(&x0)?;
    ctx.sync()?;
    let graph = match s.capture(|s| step(&ctx, s, &mut y, &b, &mut t)) {
        Ok(graph) => graph,
        Err(e) => {
            println!("this backend cannot capture graphs: {e}");
            return Ok(());
        }
    };
    let start = Instant::now();
    for _ in 0..STEPS {
        graph.launch(&s)?;
    }
    s.sync()?;
    let replayed = start.elapsed();

    let mut want = x0.clone();
    for _ in 0..STEPS {
        host_step(&mut want, &b0);
    }
    for (name, got) in [("op by op", eager_result), ("graph", y.download()?)] {
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
            .fold(
                0.0f32,
                |a, e| if e.is_nan() { f32::INFINITY } else { a.max(e) },
            );
        assert!(worst < 1e-4, "{name}: relative error {worst}");
    }
    let per_op = |d: std::time::Duration| d.as_secs_f64() * 1e6 / (STEPS * OPS_PER_STEP) as f64;
    println!(
        "{} ops of {n} f32 on {}: op by op {:.2} µs/op, graph of {} nodes {:.2} µs/op; results match the host",
        STEPS * OPS_PER_STEP,
        ctx.backend(),
        per_op(eager),
        graph.len(),
        per_op(replayed)
    );
    Ok(())
}
