//! Data parallelism: k GPUs each run the pipeline (upload → 2·relu →
//! download) over their own shard of the batches, summing their outputs
//! on the device as they go (a gradient-like vector); one all-reduce then
//! gives every GPU the sum over all batches. Run for k = 1..N GPUs, the
//! answer must equal the one-GPU answer (and the host's) exactly, and the
//! wall time shows the scaling.
//!
//!     cargo run --release -p unigpu --example 12_data_parallel -- [BATCHES] [MiB] [GPUS]
//!
//! Defaults: 32 batches of 16 MiB, every GPU. Needs libnccl (docs/multi-gpu.md)
//! and, on a shared host, `NCCL_NVLS_ENABLE=0`. Prints `key value` lines:
//! `data_parallel_ms_<k>gpu` and `data_parallel_speedup_<k>gpu`.
//!
//! `12_data_parallel ddp [STEPS] [GPUS]` trains an MLP instead, its
//! gradients all-reduced in 25 MiB buckets while the backward pass goes
//! on, as torch's DDP does (`buckets.rs`); it prints `ddp_step_ms_<k>gpu`
//! and `ddp_speedup_<k>gpu` (k GPUs' samples a second over one GPU's;
//! `bench/anchors/torch_ddp.py` prints torch's).

mod buckets;

use std::time::Instant;

use unigpu::{Backend, Communicator, Context, GpuArray, ReduceOp};

fn arg(n: usize, default: usize) -> Result<usize, String> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {n} must be a whole number, got `{s}`")),
    }
}

/// Batch `b`: whole numbers in -8..=8, so every sum below is exact in f32.
fn batch(b: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((b * 7919 + i * 31) % 17) as f32 - 8.0)
        .collect()
}

/// Runs the job on `ctxs` (one shard each): returns the all-reduced sum
/// (from rank 0) and the wall time in ms.
fn run(ctxs: &[Context], batches: &[Vec<f32>]) -> unigpu::Result<(Vec<f32>, f64)> {
    let len = batches[0].len();
    let k = ctxs.len();
    let comm = Communicator::local(ctxs)?;
    let mut sums: Vec<GpuArray<f32>> = ctxs
        .iter()
        .map(|c| c.zeros(len))
        .collect::<Result<_, _>>()?;
    for c in ctxs {
        c.sync()?;
    }
    let start = Instant::now();
    std::thread::scope(|scope| -> unigpu::Result<()> {
        let workers: Vec<_> = ctxs
            .iter()
            .zip(sums.iter_mut())
            .enumerate()
            .map(|(g, (ctx, sum))| {
                scope.spawn(move || -> unigpu::Result<()> {
                    // Shard g: batches g, g + k, g + 2k, ...
                    let shard: Vec<&Vec<f32>> = batches.iter().skip(g).step_by(k).collect();
                    let mut outputs = vec![vec![0.0f32; len]; shard.len()];
                    let mut pipeline = ctx.pipeline::<f32>(3, len)?;
                    pipeline.run(&shard, &mut outputs, |s, x, y| {
                        let ops = ctx.ops_on(s);
                        ops.relu(x, y)?;
                        ops.scale(2.0, y)?;
                        ops.axpy(1.0, &*y, sum)
                    })?;
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a worker panicked")?;
        }
        Ok(())
    })?;
    comm.all_reduce(&mut sums.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)?;
    comm.wait()?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let result = sums[0].download()?;
    // Every rank holds the same sum.
    for s in &sums[1..] {
        if s.download()? != result {
            return Err(unigpu::Error::StreamWork {
                message: "the ranks' sums differ after the all-reduce".into(),
            });
        }
    }
    Ok((result, ms))
}

/// `ddp [STEPS] [GPUS]`: the bucketed training for 1..=GPUS GPUs.
fn ddp() -> Result<(), Box<dyn std::error::Error>> {
    let steps = arg(2, 20)?;
    let available = unigpu::list_devices(Backend::Cuda)?.len();
    let gpus = arg(3, available)?.min(available);
    if gpus == 0 || steps == 0 {
        return Err("need at least one CUDA GPU and one step".into());
    }
    println!("{}", Communicator::library(Backend::Cuda)?);
    println!("{}", buckets::describe());
    let ctxs: Vec<Context> = (0..gpus)
        .map(|i| Context::new(Backend::Cuda, i))
        .collect::<Result<_, _>>()?;
    let mut one_gpu = None;
    for k in 1..=gpus {
        let ms = buckets::train(&ctxs[..k], 3, steps)?;
        let base = *one_gpu.get_or_insert(ms);
        println!("ddp_step_ms_{k}gpu {ms:.2}");
        println!("ddp_speedup_{k}gpu {:.3}", k as f64 * base / ms);
    }
    println!("every replica ended with the same weights at every GPU count");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("ddp") {
        return ddp();
    }
    let (n_batches, mib) = (arg(1, 32)?, arg(2, 16)?);
    let available = unigpu::list_devices(Backend::Cuda)?.len();
    let gpus = arg(3, available)?.min(available);
    if gpus == 0 || n_batches == 0 {
        return Err("need at least one CUDA GPU and one batch".into());
    }
    println!("{}", Communicator::library(Backend::Cuda)?);
    let len = (mib << 20) / 4;
    let batches: Vec<Vec<f32>> = (0..n_batches).map(|b| batch(b, len)).collect();
    let host: Vec<f32> = (0..len)
        .map(|i| batches.iter().map(|b| 2.0 * b[i].max(0.0)).sum())
        .collect();
    println!("{n_batches} batches of {mib} MiB over 1..={gpus} GPU(s)");
    let ctxs: Vec<Context> = (0..gpus)
        .map(|i| Context::new(Backend::Cuda, i))
        .collect::<Result<_, _>>()?;
    // A warm-up run on every GPU: kernels compiled, allocators and NCCL
    // warmed, so the timed runs compare work, not first-use costs.
    run(&ctxs, &batches)?;
    let mut one_gpu = None;
    for k in 1..=gpus {
        let (sum, ms) = run(&ctxs[..k], &batches)?;
        if sum != host {
            return Err(format!("{k} GPU(s): the sum differs from the host's").into());
        }
        let base = *one_gpu.get_or_insert(ms);
        println!("data_parallel_ms_{k}gpu {ms:.1}");
        println!("data_parallel_speedup_{k}gpu {:.2}", base / ms);
    }
    println!("every GPU count gave the one-GPU answer, equal to the host's");
    Ok(())
}
