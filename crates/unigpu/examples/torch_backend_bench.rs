//! Figures of the torch backend, printed as `key value` lines for
//! bench/runners/ratios.py, which divides them by torch's own figures from
//! bench/anchors/torch_ops.py measured in the same run (bench/runners/run_gpu.sh).
//!
//!     LIBTORCH_USE_PYTORCH=1 cargo run --release -p unigpu --features torch --example torch_backend_bench

use std::time::Instant;

use unigpu::{Backend, Context, bf16};

/// Values in [-0.5, 0.5) that vary like torch.rand's do (constant inputs
/// draw less power and would flatter matmul).
fn spread(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(2_654_435_761) % 1000) as f32 / 1000.0 - 0.5)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn out(key: &str, value: f64) {
    println!("{key} {value:.4}");
}

/// Milliseconds per call of `f`, timed with events on the default stream.
fn timed(ctx: &Context, reps: usize, mut f: impl FnMut()) -> unigpu::Result<f64> {
    f();
    let start = ctx.default_stream().record_timed()?;
    for _ in 0..reps {
        f();
    }
    let end = ctx.default_stream().record_timed()?;
    Ok(start.elapsed_ms(&end)? as f64 / reps as f64)
}

fn main() -> unigpu::Result<()> {
    let ctx = match Context::new(Backend::Torch, 0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("no torch GPU here: {e}");
            return Ok(());
        }
    };
    let ops = ctx.ops();

    let n = 1 << 26;
    let x = ctx.upload(&spread(n))?;
    let mut y = ctx.zeros::<f32>(n)?;
    let ms = timed(&ctx, 20, || ops.axpy(2.0, &x, &mut y).expect("axpy"))?;
    out(
        "unigpu_torchbe_axpy_f32_GBps",
        3.0 * 4.0 * n as f64 / (ms * 1e-3) / 1e9,
    );

    let m = 4096;
    let host = spread(m * m);
    let a = ctx.upload(&host)?;
    let mut c = ctx.zeros::<f32>(m * m)?;
    let ms = timed(&ctx, 10, || {
        ops.matmul(&a, &a, &mut c, (m, m, m)).expect("matmul")
    })?;
    out(
        "unigpu_torchbe_matmul_f32_TFLOPs",
        2.0 * (m as f64).powi(3) / (ms * 1e-3) / 1e12,
    );
    let a = ctx.upload(&host.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())?;
    let mut c = ctx.zeros::<bf16>(m * m)?;
    let ms = timed(&ctx, 10, || {
        ops.matmul(&a, &a, &mut c, (m, m, m)).expect("matmul")
    })?;
    out(
        "unigpu_torchbe_matmul_bf16_TFLOPs",
        2.0 * (m as f64).powi(3) / (ms * 1e-3) / 1e12,
    );

    // Host time to submit one tiny op: the backend's own cost per call
    // (stream guard, ordering bookkeeping, the bridge call), beside its
    // floor in the same process: the same ATen call (`mul_` on one element
    // on the current stream, the bridge's `Tensor::scale`) made straight
    // through the bridge, and that call inside the bridge's stream guard.
    // Short blocks in ABBA order, so the host's drift lands on every side
    // alike; medians of the blocks and of each round's difference.
    let mut one = ctx.zeros::<f32>(1)?;
    let mut raw = unigpu_torch_bridge::tensor_randn(&[1], 0)?;
    let current = unigpu_torch_bridge::current_stream(0)?;
    let (rounds, reps) = (61, 500);
    for _ in 0..4 * reps {
        ops.scale(1.0, &mut one)?;
        raw.scale(1.0)?;
    }
    ctx.sync()?;
    let mut block = |which: usize| -> unigpu::Result<f64> {
        let t = Instant::now();
        for _ in 0..reps {
            match which {
                0 => ops.scale(1.0, &mut one)?,
                1 => raw.scale(1.0)?,
                _ => {
                    let _guard = unigpu_torch_bridge::guard_stream(&current)?;
                    raw.scale(1.0)?
                }
            }
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
        ctx.sync()?;
        Ok(us)
    };
    let (mut ours, mut floor, mut guarded, mut over) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        let order: [usize; 3] = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        let mut us = [0.0; 3];
        for which in order {
            us[which] = block(which)?;
        }
        ours.push(us[0]);
        floor.push(us[1]);
        guarded.push(us[2]);
        over.push(us[0] - us[1]);
    }
    out("unigpu_torchbe_small_op_submit_us", median(ours));
    out("aten_bridge_scale_submit_us", median(floor));
    out("aten_bridge_guarded_scale_submit_us", median(guarded));
    out("unigpu_torchbe_submit_over_floor_us", median(over));

    // torch → cuda on the GPU, 256 MiB: GPU-to-GPU bandwidth, read + write.
    let cuda = Context::new(Backend::Cuda, 0)?;
    let big = ctx.zeros::<f32>(64 << 20)?;
    let mut best = f64::MAX;
    for _ in 0..5 {
        ctx.sync()?;
        let t = Instant::now();
        let moved = big.to_context(&cuda)?;
        cuda.sync()?;
        best = best.min(t.elapsed().as_secs_f64());
        drop(moved);
    }
    out(
        "unigpu_torchbe_to_cuda_256MiB_GBps",
        2.0 * 256.0 * (1 << 20) as f64 / best / 1e9,
    );
    Ok(())
}
