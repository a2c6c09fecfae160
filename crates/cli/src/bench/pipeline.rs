//! The upload → compute → download pipeline on the workload of
//! bench/anchors/torch_cupy_baseline.py: its speed-up over running the
//! batches one at a time, and that speed-up as a share of the ideal (the
//! sum of the stage times over the slowest stage).

use super::workload::{self, HostMemory, Workload, WorkloadOptions};
use super::{Better, Case, Env, Out, any_backend};
use unigpu::Backend;

pub const CASE: Case = Case {
    name: "pipeline",
    group: "pipeline",
    skip: any_backend,
    run: pipeline,
};

fn pipeline(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    // The baseline's 16 × 64 MiB on a GPU; an eighth of each batch on the
    // CPU backend, where a stage is a memory copy on the same cores.
    let batch_bytes = if ctx.backend() == Backend::Cpu {
        8 << 20
    } else {
        64 << 20
    };
    let run = |pieces, host| {
        workload::run(
            ctx,
            WorkloadOptions {
                batch_bytes,
                pieces,
                host,
                ..WorkloadOptions::BASELINE
            },
        )
    };
    let whole = run(1, HostMemory::Pinned)?;
    let mib = batch_bytes >> 20;
    out.info("pipe_batches", whole.report.batches);
    out.info("pipe_batch_MiB", mib);
    out.info("pipe_relu_passes", whole.compute_repeats);
    out.figure(
        "unigpu_pipe_speedup",
        format!("pipeline speed-up over sequential, 16 × {mib} MiB, pinned host batches"),
        "×",
        Better::Higher,
        whole.report.achieved_speedup,
    );
    efficiency(out, "", "whole batches, pinned", &whole);
    efficiency(
        out,
        "_4_pieces",
        "4 pieces per batch, pinned",
        &run(4, HostMemory::Pinned)?,
    );
    efficiency(
        out,
        "_pageable",
        "whole batches, ordinary memory",
        &run(1, HostMemory::Pageable)?,
    );
    Ok(())
}

/// The run's speed-up as a share of the ideal, in percent.
fn efficiency(out: &mut Out, suffix: &str, what: &str, w: &Workload) {
    out.figure(
        format!("unigpu_pipe_efficiency{suffix}_pct"),
        format!("pipeline overlap, % of the ideal speed-up, {what}"),
        "%",
        Better::Higher,
        w.report.overlap_efficiency * 100.0,
    );
}
