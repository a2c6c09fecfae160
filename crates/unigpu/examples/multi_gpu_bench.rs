//! Multi-GPU figures, as `key value` lines like the rest of bench/:
//! - `peer_copy_<a>_to_<b>_gbps`: `GpuArray::copy_to` between every pair
//!   of GPUs (direct where peer access exists; `UNIGPU_PEER_ACCESS=0`
//!   measures the staged path instead), 256 MiB, median of 10;
//! - `allreduce_busbw_gbps_<MiB>mib` (and `_algbw_`): an in-place f32
//!   sum over every GPU of the process, 256 KiB to 1 GiB, bus bandwidth as
//!   nccl-tests computes it (algbw × 2(n−1)/n), median of the per-call
//!   times from CUDA events on rank 0's stream; `allreduce_host_us_`:
//!   the host's time inside one `all_reduce` call (median).
//!
//!     cargo run --release -p unigpu --example multi_gpu_bench -- [MAX_MiB]
//!
//! Needs two or more GPUs, libnccl and (on a shared host) NCCL_NVLS_ENABLE=0;
//! bench/runners/run_multi_gpu.sh runs it beside torch.distributed's figures.

use unigpu::{Backend, Communicator, Context, GpuArray, ReduceOp};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn peer_copies(ctxs: &[Context]) -> unigpu::Result<()> {
    let bytes = 256usize << 20;
    let n = bytes / 4;
    for (a, ca) in ctxs.iter().enumerate() {
        for (b, cb) in ctxs.iter().enumerate() {
            if a == b {
                continue;
            }
            let src = ca.upload(&vec![1.0f32; n])?;
            let mut dst = cb.zeros::<f32>(n)?;
            src.copy_to(&mut dst)?; // warm-up: peer access enabled here
            cb.sync()?;
            let mut times = Vec::new();
            for _ in 0..10 {
                ca.sync()?;
                let t = std::time::Instant::now();
                src.copy_to(&mut dst)?;
                cb.sync()?;
                times.push(t.elapsed().as_secs_f64());
            }
            println!(
                "peer_copy_{a}_to_{b}_gbps {:.1}",
                bytes as f64 / median(times) / 1e9
            );
        }
    }
    Ok(())
}

fn all_reduce(ctxs: &[Context], max_mib: usize) -> unigpu::Result<()> {
    let comm = Communicator::local(ctxs)?;
    let ranks = ctxs.len() as f64;
    // From 256 KiB, where the host's enqueue bounds the rate.
    let mut kib = 256;
    while kib <= max_mib << 10 {
        let n = (kib << 10) / 4;
        let mut arrays: Vec<GpuArray<f32>> = ctxs
            .iter()
            .map(|c| c.upload(&vec![1.0f32; n]))
            .collect::<Result<_, _>>()?;
        let iters = if kib >= 256 << 10 { 10 } else { 30 };
        for _ in 0..5 {
            comm.all_reduce(&mut arrays.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)?;
        }
        comm.wait()?;
        let stream = ctxs[0].default_stream();
        let mut marks = vec![stream.record_timed()?];
        let mut host = Vec::with_capacity(iters);
        for _ in 0..iters {
            let t = std::time::Instant::now();
            comm.all_reduce(&mut arrays.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)?;
            host.push(t.elapsed().as_secs_f64());
            marks.push(stream.record_timed()?);
        }
        comm.wait()?;
        // Where the GPU's time per call is no more than this, the host's
        // enqueue is what bounds the rate.
        let size = size_label(kib);
        println!("allreduce_host_us_{size} {:.1}", median(host) * 1e6);
        let times: Vec<f64> = marks
            .windows(2)
            .map(|w| w[0].elapsed_ms(&w[1]).map(|ms| f64::from(ms) / 1e3))
            .collect::<Result<_, _>>()?;
        let algbw = (kib << 10) as f64 / median(times) / 1e9;
        println!("allreduce_algbw_gbps_{size} {algbw:.1}");
        println!(
            "allreduce_busbw_gbps_{size} {:.1}",
            algbw * 2.0 * (ranks - 1.0) / ranks
        );
        kib *= 2;
    }
    Ok(())
}

/// `256kib`, `1mib`: the size in a figure's name (as torch_allreduce.py).
fn size_label(kib: usize) -> String {
    if kib >= 1024 {
        format!("{}mib", kib >> 10)
    } else {
        format!("{kib}kib")
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let max_mib: usize = match std::env::args().nth(1) {
        None => 1024,
        Some(s) => s
            .parse()
            .map_err(|_| format!("MAX_MiB must be a whole number, got `{s}`"))?,
    };
    let n = unigpu::list_devices(Backend::Cuda)?.len();
    if n < 2 {
        return Err(format!("multi_gpu_bench needs two CUDA GPUs, found {n}").into());
    }
    println!("{}", Communicator::library(Backend::Cuda)?);
    println!("gpus {n}");
    let ctxs: Vec<Context> = (0..n)
        .map(|i| Context::new(Backend::Cuda, i))
        .collect::<Result<_, _>>()?;
    print!("{}", unigpu::device_list(Backend::Cuda)?.peers);
    peer_copies(&ctxs)?;
    all_reduce(&ctxs, max_mib)?;
    Ok(())
}
