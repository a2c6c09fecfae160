//! Launch overhead of an empty kernel (a host closure on the CPU backend).

use std::time::Instant;

use unigpu::Grid;

use super::side::{On, Side};
use super::{Better, Case, Out, any_backend, median};

pub const CASE: Case = Case {
    name: "launch",
    group: "launch",
    skip: any_backend,
    run: |env, out| launch(&On::run(env), out),
};

const EMPTY_SRC: &str = "extern \"C\" __global__ void empty() {}\n";
const EMPTY_WGSL: &str = "@compute @workgroup_size(1) fn empty() {}\n";

/// An empty kernel (an empty host closure on the CPU backend, an empty
/// shader on vulkan): what a launch costs with no work in it.
pub fn empty_kernel(ctx: &unigpu::Context) -> anyhow::Result<unigpu::Kernel> {
    Ok(ctx
        .compile(EMPTY_SRC)?
        .kernel("empty")?
        .with_cpu(|_| Ok(()))
        .with_wgsl(EMPTY_WGSL)?)
}

/// A bare-driver launcher on the context's GPU (cuda and torch backends;
/// none on vulkan, so none beside the run).
fn raw_launch(ctx: &unigpu::Context) -> Option<unigpu_cuda_safe::floor::RawLaunch> {
    if !matches!(
        ctx.backend(),
        unigpu::Backend::Cuda | unigpu::Backend::Torch
    ) {
        return None;
    }
    let device = unigpu_cuda_safe::CudaDevice::open(ctx.device_id()).ok()?;
    unigpu_cuda_safe::floor::RawLaunch::new(&device).ok()
}

/// The launch figures of `on`'s context (vulkan.rs measures vulkan's
/// dispatch with it).
pub fn launch(on: &On, out: &mut Out) -> anyhow::Result<()> {
    let ctx = on.ctx;
    let run = on.side == Side::Run;
    // Beside the run, vulkan gets a quarter of the launches (lavapipe's
    // dispatch costs tens of µs) and keeps its figures' old names.
    let (n, round_trips) = if run { (20_000, 2000) } else { (5_000, 500) };
    let key = |ours: &str, vulkan: &str| {
        if run {
            ours.to_string()
        } else {
            on.key(vulkan)
        }
    };
    let k = empty_kernel(ctx)?;
    let s = ctx.create_stream()?;
    let g = Grid::new((1, 1, 1), (1, 1, 1));
    for _ in 0..1000 {
        s.launch(&k, g, ())?;
    }
    s.sync()?;
    // Five rounds of `n` launches each; the median round is reported,
    // since one round can land on a noisy moment of a shared host.
    let mut submit = Vec::new();
    let mut total = Vec::new();
    let mut default_stream = Vec::new();
    // The raw floor in this process, its rounds alternating with ours.
    let raw = raw_launch(ctx);
    let mut raw_submit = Vec::new();
    for _ in 0..5 {
        if let Some(raw) = &raw {
            raw_submit.push(raw.submit_us(n)?);
        }
        let t = Instant::now();
        for _ in 0..n {
            s.launch(&k, g, ())?;
        }
        submit.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        s.sync()?;
        total.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        if run {
            let t = Instant::now();
            for _ in 0..n {
                ctx.launch(&k, g, ())?;
            }
            default_stream.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
            ctx.sync()?;
        }
    }
    out.figure(
        key("unigpu_empty_launch_submit_us", "dispatch_submit_us"),
        on.label("empty kernel launch, submit"),
        "µs",
        Better::Lower,
        median(submit),
    );
    if !raw_submit.is_empty() {
        out.figure(
            "raw_inprocess_launch_submit_us",
            "raw cuLaunchKernel in this process, rounds alternating with ours",
            "µs",
            Better::Lower,
            median(raw_submit),
        );
    }
    if !default_stream.is_empty() {
        out.figure(
            "unigpu_empty_launch_default_stream_submit_us",
            "empty kernel launch on the default stream, submit",
            "µs",
            Better::Lower,
            median(default_stream),
        );
    }
    out.figure(
        key(
            "unigpu_empty_launch_throughput_us",
            "dispatch_throughput_us",
        ),
        on.label("empty kernel launch, submit + complete"),
        "µs",
        Better::Lower,
        median(total),
    );
    let mut rt = Vec::new();
    for _ in 0..round_trips {
        let t = Instant::now();
        s.launch(&k, g, ())?;
        s.sync()?;
        rt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out.figure(
        key(
            "unigpu_launch_sync_roundtrip_us_median",
            "dispatch_sync_roundtrip_us",
        ),
        on.label("launch + sync round trip"),
        "µs",
        Better::Lower,
        median(rt),
    );
    Ok(())
}
