//! Upload → scale + relu → download over a sequence of batches, run one
//! batch at a time and then pipelined over three streams; prints both
//! times, the overlap efficiency, and writes the pipelined run's timeline
//! as a Chrome trace (open it at https://ui.perfetto.dev).
//!
//!     cargo run --release -p unigpu --example 08_pipeline -- [TRACE.json] [BATCHES] [MiB] [DEPTH] [REPEATS] [PIECES] [pinned|pageable]
//!
//! The defaults are the workload of bench/anchors/torch_cupy_baseline.py:
//! 16 batches of 64 MiB, depth 3, and trace `pipeline-trace.json`. On a
//! small machine, scale it down: `... -- trace.json 16 8 3`. REPEATS fixes
//! the relu passes per batch instead of calibrating them against an upload
//! (0: calibrate). PIECES moves each batch through the pipeline in that
//! many pieces (default 1): the same data and compute, but the first
//! upload and the last download, which nothing can overlap, get shorter.
//! The host batches are pinned, as the baseline's are (`pageable`: ordinary
//! `Vec`s, which every transfer stages through a pinned ring).

use unigpu::Context;
use unigpu::pipeline::{HostMemory, WorkloadOptions, bench_workload_with};

fn arg(n: usize, default: usize) -> Result<usize, String> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {n} must be a whole number, got `{s}`")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let trace_path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "pipeline-trace.json".into());
    let (batches, mib, depth) = (arg(2, 16)?, arg(3, 64)?, arg(4, 3)?);
    let ctx = Context::default()?;
    println!(
        "{} batches of {mib} MiB, depth {depth}, on {} ({})",
        batches,
        ctx.backend(),
        ctx.device_name()?
    );

    let repeats = Some(arg(5, 0)?).filter(|&r| r > 0);
    let pieces = arg(6, 1)?;
    let host = match std::env::args().nth(7).as_deref() {
        None | Some("pinned") => HostMemory::Pinned,
        Some("pageable") => HostMemory::Pageable,
        Some(other) => {
            return Err(format!("argument 7 is pinned or pageable, got `{other}`").into());
        }
    };
    println!("host batches in {host:?} memory");
    let w = bench_workload_with(
        &ctx,
        WorkloadOptions {
            batches,
            batch_bytes: mib << 20,
            depth,
            compute_repeats: repeats,
            pieces,
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
    std::fs::write(&trace_path, w.trace.to_chrome_trace_json())?;
    println!("trace of a pipelined run: {trace_path} (open it at https://ui.perfetto.dev)");
    Ok(())
}
