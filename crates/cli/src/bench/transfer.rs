//! Host ↔ device copies from and into pageable host memory (`Vec`s), the
//! copies `upload_from`/`download_into` make. Pinned and staged copies
//! are their own figures (see docs/benchmarks.md, "Adding a figure").

use std::time::Instant;

use unigpu::{Backend, Context, GpuArray};

use super::side::{On, Side};
use super::{Better, Case, Out, any_backend, median};

pub const CASE: Case = Case {
    name: "transfer",
    group: "transfer",
    skip: any_backend,
    run: |env, out| transfer(&On::run(env), env.reps, out),
};

const MIB: usize = 1 << 20;

/// The transfer figures of `on`'s context; `reps` timed rounds each.
/// Beside the run (vulkan.rs), only the pageable copies, under the vulkan
/// figures' names.
pub fn transfer(on: &On, reps: usize, out: &mut Out) -> anyhow::Result<()> {
    let ctx = on.ctx;
    let run = on.side == Side::Run;
    // The host's memory is the CPU backend's device memory (and a software
    // adapter's): one size is enough there. On a GPU, issue 29's sizes
    // (bench/anchors/transfer_anchors.py times torch's and CuPy's copies at
    // the same ones; vulkan's are set beside the run's).
    let sizes: &[usize] = if ctx.backend() == Backend::Cpu || on.small {
        &[64]
    } else {
        &[1, 16, 64, 256]
    };
    for &mib in sizes {
        let n = mib * MIB / 4;
        let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let mut back = vec![0f32; n];
        let mut dev = ctx.zeros::<f32>(n)?;
        let bytes = (mib * MIB) as f64;
        let mut h2d = Vec::with_capacity(reps);
        let mut d2h = Vec::with_capacity(reps);
        let mut d2h_new = Vec::with_capacity(reps);
        // One warm-up round, then the timed ones; each copy waited for.
        for round in 0..=reps {
            let t = Instant::now();
            dev.upload_from(&host)?;
            ctx.sync()?;
            let up = t.elapsed().as_secs_f64();
            let t = Instant::now();
            dev.download_into(&mut back)?;
            let down = t.elapsed().as_secs_f64();
            if round > 0 {
                h2d.push(bytes / up / 1e9);
                d2h.push(bytes / down / 1e9);
            }
            if run {
                // Into a new vector: its pages are fresh, as a user's are.
                let t = Instant::now();
                let fresh = dev.download()?;
                let down_new = t.elapsed().as_secs_f64();
                anyhow::ensure!(
                    fresh.len() == n,
                    "download() returned {} elements",
                    fresh.len()
                );
                drop(fresh);
                if round > 0 {
                    d2h_new.push(bytes / down_new / 1e9);
                }
            }
        }
        anyhow::ensure!(
            back == host,
            "{}",
            on.label(format!("the {mib} MiB round trip changed the data"))
        );
        if run {
            pinned(ctx, &mut dev, &host, mib, reps, out)?;
        }
        let (h2d_key, d2h_key) = if run {
            (
                format!("unigpu_h2d_pageable_{mib}MiB_GBps"),
                format!("unigpu_d2h_pageable_{mib}MiB_GBps"),
            )
        } else {
            (
                on.key(&format!("h2d_{mib}MiB_GBps")),
                on.key(&format!("d2h_{mib}MiB_GBps")),
            )
        };
        out.figure(
            h2d_key,
            on.label(format!("upload {mib} MiB from pageable memory")),
            "GB/s",
            Better::Higher,
            median(h2d),
        );
        out.figure(
            d2h_key,
            on.label(format!("download {mib} MiB into pageable memory")),
            "GB/s",
            Better::Higher,
            median(d2h),
        );
        if run {
            out.figure(
                format!("unigpu_d2h_new_vec_{mib}MiB_GBps"),
                format!("download {mib} MiB into a new Vec"),
                "GB/s",
                Better::Higher,
                median(d2h_new),
            );
        }
    }
    Ok(())
}

/// From and into pinned host memory: the DMA engine's rate.
fn pinned(
    ctx: &Context,
    dev: &mut GpuArray<f32>,
    host: &[f32],
    mib: usize,
    reps: usize,
    out: &mut Out,
) -> anyhow::Result<()> {
    let bytes = (mib * MIB) as f64;
    let mut pinned = ctx.pinned::<f32>(host.len())?;
    pinned.as_mut_slice()?.copy_from_slice(host);
    let s = ctx.create_stream()?;
    let (mut h2d_pinned, mut d2h_pinned) = (Vec::new(), Vec::new());
    for round in 0..=reps {
        let t = Instant::now();
        s.upload_pinned(&pinned, dev)?;
        s.sync()?;
        let up = t.elapsed().as_secs_f64();
        let t = Instant::now();
        s.download_pinned(dev, &mut pinned)?;
        s.sync()?;
        let down = t.elapsed().as_secs_f64();
        if round > 0 {
            h2d_pinned.push(bytes / up / 1e9);
            d2h_pinned.push(bytes / down / 1e9);
        }
    }
    anyhow::ensure!(
        pinned.as_slice()? == host,
        "the pinned round trip changed the data"
    );
    out.figure(
        format!("unigpu_h2d_pinned_{mib}MiB_GBps"),
        format!("upload {mib} MiB from pinned memory"),
        "GB/s",
        Better::Higher,
        median(h2d_pinned),
    );
    out.figure(
        format!("unigpu_d2h_pinned_{mib}MiB_GBps"),
        format!("download {mib} MiB into pinned memory"),
        "GB/s",
        Better::Higher,
        median(d2h_pinned),
    );
    Ok(())
}
