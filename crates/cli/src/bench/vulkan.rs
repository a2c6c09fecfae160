//! The vulkan backend beside the run's own backend, in the same process:
//! axpy bandwidth, an f32 matmul, dispatch overhead and transfer rates,
//! each anchored to the same figure of the run's backend (cuda and cuBLAS
//! on the GPU machine, the CPU backend where Vulkan is Mesa's lavapipe).
//! Skipped, with the reason, where no Vulkan adapter opens, and when the
//! run itself is on vulkan (the other cases measure it then).

use std::time::Instant;

use anyhow::ensure;
use unigpu::{Backend, Context, Grid};

use super::{Better, Case, Env, Out, median};

pub const AXPY: Case = Case {
    name: "vulkan_axpy",
    group: "vulkan",
    skip: unavailable,
    run: axpy,
};

pub const MATMUL: Case = Case {
    name: "vulkan_matmul_f32",
    group: "vulkan",
    skip: unavailable,
    run: matmul,
};

pub const DISPATCH: Case = Case {
    name: "vulkan_dispatch",
    group: "vulkan",
    skip: unavailable,
    run: dispatch,
};

pub const TRANSFER: Case = Case {
    name: "vulkan_transfer",
    group: "vulkan",
    skip: unavailable,
    run: transfer,
};

fn unavailable(ctx: &Context) -> Option<String> {
    if ctx.backend() == Backend::Vulkan {
        return Some("this run is on vulkan: the other cases measure it".into());
    }
    Context::new(Backend::Vulkan, 0)
        .err()
        .map(|e| e.to_string())
}

/// Vulkan adapter 0, and whether it is a software one (smaller sizes).
fn vulkan(out: &mut Out) -> anyhow::Result<(Context, bool)> {
    let ctx = Context::new(Backend::Vulkan, 0)?;
    let info = ctx.device_info()?;
    let software = info
        .details
        .iter()
        .any(|(k, v)| k == "type" && v.starts_with("software"));
    out.info("unigpu_vulkan_adapter", info.name.replace(' ', "_"));
    Ok((ctx, software))
}

fn axpy(_: &Env, out: &mut Out) -> anyhow::Result<()> {
    let (ctx, software) = vulkan(out)?;
    // The sizes of axpy.rs: the CPU backend's on lavapipe, CUDA's on a GPU.
    let n: usize = if software { 1 << 22 } else { 1 << 26 };
    let hx: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 1e-3).collect();
    let x = ctx.upload(&hx)?;
    let mut y = ctx.zeros::<f32>(n)?;
    let ops = ctx.ops();
    ops.axpy(2.0, &x, &mut y)?;
    let check = y.download()?;
    ensure!(
        check.iter().zip(&hx).all(|(y, x)| *y == 2.0 * x),
        "vulkan axpy gave a wrong result"
    );
    const REPS: usize = 20;
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..REPS {
        ops.axpy(2.0, &x, &mut y)?;
    }
    let end = s.record_timed()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    let gbps = 3.0 * 4.0 * n as f64 / (ms * 1e-3) / 1e9;
    out.info("unigpu_vulkan_axpy_f32_n", n);
    let size = format!("2^{}", n.trailing_zeros());
    out.figure(
        "unigpu_vulkan_axpy_f32_ms",
        format!("vulkan axpy f32 {size}"),
        "ms",
        Better::Lower,
        ms,
    );
    out.figure(
        "unigpu_vulkan_axpy_f32_GBps",
        format!("vulkan axpy f32 {size}, read x, y + write y"),
        "GB/s",
        Better::Higher,
        gbps,
    );
    Ok(())
}

fn matmul(_: &Env, out: &mut Out) -> anyhow::Result<()> {
    let (ctx, software) = vulkan(out)?;
    // matmul.rs's sizes: 256 beside the CPU backend, 4096 beside cuBLAS.
    let n: usize = if software { 256 } else { 4096 };
    let host: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let a = ctx.upload(&host)?;
    let b = ctx.upload(&host)?;
    let mut c = ctx.zeros::<f32>(n * n)?;
    let ops = ctx.ops();
    for _ in 0..3 {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    // One row checked against the host, so a fast wrong kernel fails.
    let got = c.download()?;
    for j in 0..n {
        let want: f64 = (0..n)
            .map(|p| f64::from(host[p]) * f64::from(host[p * n + j]))
            .sum();
        let bound = 1e-5 * n as f64;
        ensure!(
            (f64::from(got[j]) - want).abs() <= bound,
            "vulkan matmul: c[0][{j}] = {}, the host says {want}",
            got[j]
        );
    }
    const REPS: usize = 10;
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..REPS {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    let end = s.record_timed()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out.info("unigpu_vulkan_matmul_f32_n", n);
    out.figure(
        "unigpu_vulkan_matmul_f32_ms",
        format!("vulkan matmul f32 {n}³"),
        "ms",
        Better::Lower,
        ms,
    );
    out.figure(
        "unigpu_vulkan_matmul_f32_TFLOPs",
        format!("vulkan matmul f32 {n}³ (tiled WGSL)"),
        "TFLOP/s",
        Better::Higher,
        tflops,
    );
    Ok(())
}

fn dispatch(_: &Env, out: &mut Out) -> anyhow::Result<()> {
    let (ctx, _) = vulkan(out)?;
    let k = unigpu::Kernel::from_wgsl("empty", "@compute @workgroup_size(1) fn empty() {}")?;
    let s = ctx.create_stream()?;
    let g = Grid::new((1, 1, 1), (1, 1, 1));
    for _ in 0..1000 {
        s.launch(&k, g, ())?;
    }
    s.sync()?;
    // Five rounds, as launch.rs does; the median is reported.
    const N: usize = 5_000;
    let (mut submit, mut total) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..N {
            s.launch(&k, g, ())?;
        }
        submit.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
        s.sync()?;
        total.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
    }
    out.figure(
        "unigpu_vulkan_dispatch_submit_us",
        "vulkan empty dispatch, submit",
        "µs",
        Better::Lower,
        median(submit),
    );
    out.figure(
        "unigpu_vulkan_dispatch_throughput_us",
        "vulkan empty dispatch, submit + complete",
        "µs",
        Better::Lower,
        median(total),
    );
    let mut rt = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        s.launch(&k, g, ())?;
        s.sync()?;
        rt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out.figure(
        "unigpu_vulkan_dispatch_sync_roundtrip_us",
        "vulkan dispatch + sync round trip",
        "µs",
        Better::Lower,
        median(rt),
    );
    Ok(())
}

fn transfer(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let (ctx, _) = vulkan(out)?;
    const MIB: usize = 64;
    let n = MIB * (1 << 20) / 4;
    let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut back = vec![0f32; n];
    let mut dev = ctx.zeros::<f32>(n)?;
    let bytes = (MIB << 20) as f64;
    let (mut h2d, mut d2h) = (Vec::new(), Vec::new());
    for round in 0..=env.reps {
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
    }
    ensure!(
        back == host,
        "the vulkan {MIB} MiB round trip changed the data"
    );
    out.figure(
        "unigpu_vulkan_h2d_64MiB_GBps",
        "vulkan upload 64 MiB from pageable memory",
        "GB/s",
        Better::Higher,
        median(h2d),
    );
    out.figure(
        "unigpu_vulkan_d2h_64MiB_GBps",
        "vulkan download 64 MiB into pageable memory",
        "GB/s",
        Better::Higher,
        median(d2h),
    );
    Ok(())
}
