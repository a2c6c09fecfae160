//! `unigpu pipeline`: the benchmark's pipeline workload (bench/workload.rs)
//! in one shape, with its stage times, speed-ups and a Chrome trace: what
//! bench/runners/pipeline_sweep.sh and transfer_pipeline_run.sh sweep.
//! The printed lines are the ones `08_pipeline` printed when the workload
//! was the facade's.

use std::path::PathBuf;

use anyhow::Context as _;
use unigpu::Context;

use crate::bench::workload::{self, HostMemory, WorkloadOptions};

/// `unigpu pipeline`'s flags; the defaults are the workload of
/// bench/anchors/torch_cupy_baseline.py.
#[derive(Debug, clap::Args)]
pub struct PipelineArgs {
    /// Where the pipelined run's timeline goes, as a Chrome trace (open it
    /// at https://ui.perfetto.dev).
    #[arg(long, default_value = "pipeline-trace.json")]
    trace: PathBuf,
    #[arg(long, default_value_t = 16)]
    batches: usize,
    /// MiB per batch.
    #[arg(long, default_value_t = 64)]
    mib: usize,
    /// Batches in flight.
    #[arg(long, default_value_t = 3)]
    depth: usize,
    /// Relu passes per batch; by default calibrated so that compute takes
    /// about as long as one upload.
    #[arg(long)]
    repeats: Option<usize>,
    /// Move each batch in this many equal pieces (the first upload and the
    /// last download, which nothing overlaps, get shorter).
    #[arg(long, default_value_t = 1)]
    pieces: usize,
    /// Host batches in ordinary `Vec`s (every transfer stages through the
    /// pinned ring) instead of pinned memory, as the baseline's are.
    #[arg(long)]
    pageable: bool,
}

pub fn run(args: PipelineArgs) -> anyhow::Result<()> {
    let ctx = Context::default()?;
    let (batches, mib) = (args.batches, args.mib);
    println!(
        "{batches} batches of {mib} MiB, depth {}, on {} ({})",
        args.depth,
        ctx.backend(),
        ctx.device_name()?
    );
    let host = if args.pageable {
        HostMemory::Pageable
    } else {
        HostMemory::Pinned
    };
    println!("host batches in {host:?} memory");
    let w = workload::run(
        &ctx,
        WorkloadOptions {
            batches,
            batch_bytes: mib << 20,
            depth: args.depth,
            compute_repeats: args.repeats.filter(|&r| r > 0),
            pieces: args.pieces,
            host,
            ..WorkloadOptions::BASELINE
        },
    )?;
    let r = &w.report;
    let [up, comp, down] = r.stage_ms.map(|ms| ms / batches.max(1) as f64);
    println!(
        "stages per batch: upload {up:.2} ms, compute {comp:.2} ms ({} relu passes + scale), download {down:.2} ms",
        w.compute_repeats
    );
    println!("sequential {:.1} ms (whole batches)", r.sequential_ms);
    println!(
        "pipelined  {:.1} ms ({} piece(s) per batch): {:.2}x faster",
        r.wall_ms, r.pieces, r.achieved_speedup
    );
    let units = batches * r.pieces;
    println!(
        "ideal speedup {:.2}x (sum of stages / slowest), {:.2}x for {units} pieces",
        r.ideal_speedup, r.ideal_speedup_for_batches
    );
    println!(
        "overlap efficiency {:.1}% of the ideal, {:.1}% of the ideal for {units} pieces",
        100.0 * r.overlap_efficiency,
        100.0 * r.efficiency_for_batches
    );
    std::fs::write(&args.trace, w.trace.to_chrome_trace_json())
        .with_context(|| format!("writing the trace to {}", args.trace.display()))?;
    println!(
        "trace of a pipelined run: {} (open it at https://ui.perfetto.dev)",
        args.trace.display()
    );
    Ok(())
}
