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
//! With `UNIGPU_RENDEZVOUS`, `UNIGPU_WORLD_SIZE` and `UNIGPU_RANK` set
//! (one process per GPU, as torch.distributed runs: the process of rank r
//! uses GPU r and joins the others through the rendezvous), it measures
//! only the all-reduce, and rank 0 prints `allreduce_join_*`: the same
//! figures for one rank a process, the host time being one rank's call.
//!
//! Needs two or more GPUs, libnccl and (on a shared host) NCCL_NVLS_ENABLE=0;
//! bench/runners/run_multi_gpu.sh runs it beside torch.distributed's figures.

use unigpu::{Backend, Communicator, Context, GpuArray, ReduceOp, Rendezvous};

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

/// All-reduce figures for `comm` (its local contexts `ctxs`), printed
/// with `prefix` when `print`.
fn all_reduce(
    comm: &Communicator,
    ctxs: &[Context],
    max_mib: usize,
    prefix: &str,
    print: bool,
) -> unigpu::Result<()> {
    let ranks = comm.world_size() as f64;
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
        let times: Vec<f64> = marks
            .windows(2)
            .map(|w| w[0].elapsed_ms(&w[1]).map(|ms| f64::from(ms) / 1e3))
            .collect::<Result<_, _>>()?;
        let algbw = (kib << 10) as f64 / median(times) / 1e9;
        if print {
            println!("{prefix}_host_us_{size} {:.1}", median(host) * 1e6);
            println!("{prefix}_algbw_gbps_{size} {algbw:.1}");
            println!(
                "{prefix}_busbw_gbps_{size} {:.1}",
                algbw * 2.0 * (ranks - 1.0) / ranks
            );
        }
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
    if std::env::var_os(unigpu::comm::rendezvous::RENDEZVOUS_ENV).is_some() {
        return one_rank_a_process(max_mib);
    }
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
    let comm = Communicator::local(&ctxs)?;
    all_reduce(&comm, &ctxs, max_mib, "allreduce", true)?;
    Ok(())
}

/// This process is rank r of the rendezvous's world, on GPU r.
fn one_rank_a_process(max_mib: usize) -> Result<(), Box<dyn std::error::Error>> {
    let rendezvous = Rendezvous::from_env()?;
    let rank = rendezvous.rank();
    let ctx = Context::new(Backend::Cuda, rank)?;
    let comm = Communicator::join(std::slice::from_ref(&ctx), &rendezvous)?;
    if rank == 0 {
        println!("one process a GPU: {} ranks", comm.world_size());
    }
    all_reduce(&comm, &[ctx], max_mib, "allreduce_join", rank == 0)?;
    Ok(())
}
