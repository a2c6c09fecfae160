//! Launch overhead of an empty kernel (a host closure on the CPU backend).

use std::time::Instant;

use unigpu::Grid;

use super::{Better, Case, Env, Out, any_backend, median};

pub const CASE: Case = Case {
    name: "launch",
    group: "launch",
    skip: any_backend,
    run: launch,
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

/// A bare-driver launcher on the context's GPU (cuda and torch backends).
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

fn launch(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let k = empty_kernel(ctx)?;
    let s = ctx.create_stream()?;
    let g = Grid::new((1, 1, 1), (1, 1, 1));
    for _ in 0..1000 {
        s.launch(&k, g, ())?;
    }
    s.sync()?;
    // Five rounds of 20 000 launches each; the median round is reported,
    // since one round can land on a noisy moment of a shared host.
    const N: usize = 20_000;
    let mut submit = Vec::new();
    let mut total = Vec::new();
    let mut default_stream = Vec::new();
    // The raw floor in this process, its rounds alternating with ours.
    let raw = raw_launch(ctx);
    let mut raw_submit = Vec::new();
    for _ in 0..5 {
        if let Some(raw) = &raw {
            raw_submit.push(raw.submit_us(N)?);
        }
        let t = Instant::now();
        for _ in 0..N {
            s.launch(&k, g, ())?;
        }
        submit.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
        s.sync()?;
        total.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
        let t = Instant::now();
        for _ in 0..N {
            ctx.launch(&k, g, ())?;
        }
        default_stream.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
        ctx.sync()?;
    }
    out.figure(
        "unigpu_empty_launch_submit_us",
        "empty kernel launch, submit",
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
    out.figure(
        "unigpu_empty_launch_default_stream_submit_us",
        "empty kernel launch on the default stream, submit",
        "µs",
        Better::Lower,
        median(default_stream),
    );
    out.figure(
        "unigpu_empty_launch_throughput_us",
        "empty kernel launch, submit + complete",
        "µs",
        Better::Lower,
        median(total),
    );
    let mut rt = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        s.launch(&k, g, ())?;
        s.sync()?;
        rt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out.figure(
        "unigpu_launch_sync_roundtrip_us_median",
        "launch + sync round trip",
        "µs",
        Better::Lower,
        median(rt),
    );
    Ok(())
}
