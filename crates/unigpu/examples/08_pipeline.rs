//! Upload → scale + relu → download over a sequence of batches, run one
//! batch at a time and then pipelined over three streams; checks every
//! output, prints both times and the overlap efficiency, and writes the
//! pipelined run's timeline as a Chrome trace (open it at
//! https://ui.perfetto.dev).
//!
//!     cargo run --release -p unigpu --example 08_pipeline -- [TRACE.json] [BATCHES] [MiB] [DEPTH]
//!
//! The defaults: 16 batches of 8 MiB, depth 3, trace `pipeline-trace.json`.
//! The benchmark's calibrated workload (pinned or ordinary host memory,
//! batches in pieces) is `unigpu pipeline` (docs/pipelines.md).

use std::time::Instant;

use unigpu::pipeline::PipelineReport;
use unigpu::{Context, GpuArray, Stream};

fn arg(n: usize, default: usize) -> Result<usize, String> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {n} must be a whole number, got `{s}`")),
    }
}

/// The compute stage: `y = 0.5 * relu(x)`, on the stage's stream.
fn scale_relu(
    ctx: &Context,
) -> impl FnMut(&Stream, &GpuArray<f32>, &mut GpuArray<f32>) -> unigpu::Result<()> {
    move |s, x, y| {
        let ops = ctx.ops_on(s);
        ops.relu(x, y)?;
        ops.scale(0.5, y)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let trace_path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "pipeline-trace.json".into());
    let (batches, mib, depth) = (arg(2, 16)?, arg(3, 8)?, arg(4, 3)?);
    let ctx = Context::default()?;
    println!(
        "{batches} batches of {mib} MiB, depth {depth}, on {} ({})",
        ctx.backend(),
        ctx.device_name()?
    );
    let len = (mib << 20) / 4;
    // Values in [-1, 1), so that relu has work to do.
    let inputs: Vec<Vec<f32>> = (0..batches)
        .map(|b| {
            (0..len)
                .map(|i| ((i * 7919 + b * 104_729) % 2000) as f32 / 1000.0 - 1.0)
                .collect()
        })
        .collect();
    let mut outputs = vec![vec![0f32; len]; batches];
    let mut p = ctx.pipeline::<f32>(depth, len)?;

    // A first run pays for first touches and compiles; it is not timed.
    p.run(&inputs, &mut outputs, scale_relu(&ctx))?;
    let sequential = p.run_sequential(&inputs, &mut outputs, scale_relu(&ctx))?;
    let t = Instant::now();
    let trace = p.run_traced(&inputs, &mut outputs, scale_relu(&ctx))?;
    let pipelined_ms = t.elapsed().as_secs_f64() * 1e3;

    for (x, y) in inputs.iter().zip(&outputs) {
        if let Some(i) = (0..len).find(|&i| y[i] != 0.5 * x[i].max(0.0)) {
            return Err(format!("element {i}: {} instead of {}", y[i], 0.5 * x[i].max(0.0)).into());
        }
    }
    let r = PipelineReport::new(&sequential, pipelined_ms);
    let [up, comp, down] = r.stage_ms.map(|ms| ms / batches.max(1) as f64);
    println!("stages per batch: upload {up:.2} ms, compute {comp:.2} ms, download {down:.2} ms");
    println!("sequential {:.1} ms", r.sequential_ms);
    println!(
        "pipelined  {:.1} ms: {:.2}x faster",
        r.wall_ms, r.achieved_speedup
    );
    println!(
        "ideal speedup {:.2}x (sum of stages / slowest); overlap efficiency {:.1}% of it",
        r.ideal_speedup,
        100.0 * r.overlap_efficiency
    );
    std::fs::write(&trace_path, trace.to_chrome_trace_json())?;
    println!("trace of a pipelined run: {trace_path} (open it at https://ui.perfetto.dev)");
    Ok(())
}
