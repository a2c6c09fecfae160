//! Kernels written once with `#[unigpu::kernel]` beside what they replace,
//! on the run's backend (cpu, cuda, torch or vulkan: `--backend vulkan`
//! measures the vulkan backend): saxpy against the built-in axpy, a
//! shared-memory tree sum against the built-in sum, and a tiled matmul
//! against the same algorithm hand-written in CUDA C++ (cuda, torch) or
//! WGSL (vulkan). Each pair is timed in alternating rounds in one case, so
//! a machine whose speed drifts moves both sides alike.

use std::time::Instant;

use anyhow::ensure;
use unigpu::{Backend, CompileOptions, Context, GpuArray, Grid, Kernel};

use super::kernel_defs::{
    HAND_MATMUL_CUDA, HAND_MATMUL_WGSL, TILE, bench_saxpy, bench_tiled_matmul, bench_tree_sum,
    groups,
};
use super::{Better, Case, Env, Out, any_backend, median};

pub const GROUP: &str = "kernels";

pub const SAXPY: Case = Case {
    name: "kernel_saxpy",
    group: GROUP,
    skip: any_backend,
    run: saxpy,
};

pub const SUM: Case = Case {
    name: "kernel_sum",
    group: GROUP,
    skip: any_backend,
    run: sum,
};

pub const MATMUL: Case = Case {
    name: "kernel_matmul",
    group: GROUP,
    skip: any_backend,
    run: matmul,
};

/// Rounds of each side, alternating; the median round is reported.
const ROUNDS: usize = 7;

/// The CPU backend and a software Vulkan adapter (lavapipe) get the CPU
/// sizes of axpy.rs and matmul.rs; a GPU gets the GPU sizes.
fn small(ctx: &Context) -> anyhow::Result<bool> {
    Ok(match ctx.backend() {
        Backend::Cpu => true,
        Backend::Vulkan => ctx
            .device_info()?
            .details
            .iter()
            .any(|(k, v)| k == "type" && v.starts_with("software")),
        Backend::Cuda | Backend::Torch => false,
    })
}

/// `ROUNDS` alternating rounds of `a` and `b`, each returning its time per
/// call in ms; the medians.
fn alternate(
    mut a: impl FnMut() -> anyhow::Result<f64>,
    mut b: impl FnMut() -> anyhow::Result<f64>,
) -> anyhow::Result<(f64, f64)> {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ta.push(a()?);
        tb.push(b()?);
    }
    Ok((median(ta), median(tb)))
}

/// The time per call of `reps` calls of `op` in ms, between two timed
/// events on the default stream (as axpy.rs times the built-in).
fn stream_time(
    ctx: &Context,
    reps: usize,
    mut op: impl FnMut() -> unigpu::Result<()>,
) -> anyhow::Result<f64> {
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..reps {
        op()?;
    }
    let end = s.record_timed()?;
    Ok(start.elapsed_ms(&end)? as f64 / reps as f64)
}

fn saxpy(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let n: usize = if small(ctx)? { 1 << 22 } else { 1 << 26 };
    let hx: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 1e-3).collect();
    let x = ctx.upload(&hx)?;
    let (mut y_ours, mut y_builtin) = (ctx.zeros::<f32>(n)?, ctx.zeros::<f32>(n)?);
    let k = bench_saxpy::kernel(ctx)?;
    let grid = Grid::new((groups(n, 65535), 1, 1), (256, 1, 1));
    let ops = ctx.ops();
    // One call each from zero: 2·x is exact, with or without an FMA.
    k.launch(ctx, grid, (2.0, &x, &mut y_ours))?;
    ops.axpy(2.0, &x, &mut y_builtin)?;
    let (got, want) = (y_ours.download()?, y_builtin.download()?);
    ensure!(
        got == want && got.iter().zip(&hx).all(|(y, x)| *y == 2.0 * x),
        "the macro saxpy and the built-in axpy disagree"
    );
    const REPS: usize = 20;
    let (ours, builtin) = alternate(
        || stream_time(ctx, REPS, || k.launch(ctx, grid, (2.0, &x, &mut y_ours))),
        || stream_time(ctx, REPS, || ops.axpy(2.0, &x, &mut y_builtin)),
    )?;
    // Each reads x and y and writes y.
    let gbps = |ms: f64| 3.0 * 4.0 * n as f64 / (ms * 1e-3) / 1e9;
    let size = format!("2^{}", n.trailing_zeros());
    out.info("unigpu_kernel_saxpy_f32_n", n);
    out.figure(
        "unigpu_kernel_saxpy_f32_GBps",
        format!("#[kernel] saxpy f32 {size}, read x, y + write y"),
        "GB/s",
        Better::Higher,
        gbps(ours),
    );
    out.figure(
        "unigpu_kernel_axpy_f32_GBps",
        format!("built-in axpy f32 {size} (rounds alternating with the above)"),
        "GB/s",
        Better::Higher,
        gbps(builtin),
    );
    Ok(())
}

/// The macro tree sum down to one value, as a user calls it: one launch
/// per level into buffers made beforehand, then the one value downloaded.
struct TreeSum {
    k: bench_tree_sum::Kernel,
    levels: Vec<GpuArray<f32>>,
    /// Workgroups of the first level ([`TreeSum::first`]).
    first: usize,
}

impl TreeSum {
    /// Workgroups of the first level, each adding its grid-stride share
    /// (any grid adds every element, in an order of additions that
    /// follows the grid, so a user picks one a backend): 1024
    /// fill a GPU; the CPU backend runs a workgroup's 256 invocations as
    /// loops, a pass over them per barrier, so it gets 64, which keep
    /// its cores busy with 1/16 of the tree's passes (on the 2-core box,
    /// 4 Mi f32, before the per-workgroup scalars: 1024 took 1.5-2.4 ms,
    /// 256 1.1, 32-128 0.59-0.65; docs/benchmarks.md). The second level
    /// adds their partials in one workgroup (grid-stride too), so two
    /// launches whatever the length.
    fn first(ctx: &Context) -> usize {
        match ctx.backend() {
            Backend::Cpu => 64,
            _ => 1024,
        }
    }

    fn new(ctx: &Context, n: usize) -> anyhow::Result<Self> {
        let first = Self::first(ctx);
        let mut levels = Vec::new();
        let mut len = n;
        while len > 1 {
            len = if levels.is_empty() {
                groups(len, first) as usize
            } else {
                1
            };
            levels.push(ctx.zeros::<f32>(len)?);
        }
        Ok(TreeSum {
            k: bench_tree_sum::kernel(ctx)?,
            levels,
            first,
        })
    }

    fn run(&mut self, ctx: &Context, x: &GpuArray<f32>) -> anyhow::Result<f32> {
        let Some((first, rest)) = self.levels.split_first_mut() else {
            return Ok(x.download()?.first().copied().unwrap_or(0.0));
        };
        let grid = |groups: u32| Grid::new((groups, 1, 1), (256, 1, 1));
        self.k
            .launch(ctx, grid(first.len() as u32), (x, &mut *first))?;
        let mut prev = first;
        for next in rest {
            self.k.launch(ctx, grid(1), (&*prev, &mut *next))?;
            prev = next;
        }
        Ok(prev.download()?[0])
    }
}

fn sum(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    // ops_cpu.rs's 4 Mi on the CPU; a GPU gets axpy's 2^26.
    let n: usize = if small(ctx)? { 4 << 20 } else { 1 << 26 };
    let hx: Vec<f32> = (0..n).map(|i| ((i * 7919) % 2001) as f32 * 1e-3).collect();
    let x = ctx.upload(&hx)?;
    let mut tree = TreeSum::new(ctx, n)?;
    let ops = ctx.ops();
    let want: f64 = hx.iter().map(|&v| f64::from(v)).sum();
    let (ours, builtin) = (tree.run(ctx, &x)?, ops.sum(&x)?);
    // Different orders of f32 additions: agree to f32's precision.
    for (who, got) in [("macro tree sum", ours), ("built-in sum", builtin)] {
        ensure!(
            (f64::from(got) - want).abs() <= 1e-5 * want.abs(),
            "{who}: {got}, the host says {want}"
        );
    }
    // Per round; ROUNDS rounds of each side give the median.
    const REPS: usize = 10;
    let wall = |f: &mut dyn FnMut() -> anyhow::Result<f32>| -> anyhow::Result<f64> {
        let mut t = Vec::with_capacity(REPS);
        for _ in 0..REPS {
            let s = Instant::now();
            f()?;
            t.push(s.elapsed().as_secs_f64() * 1e3);
        }
        Ok(median(t))
    };
    let (ours, builtin) = alternate(
        || wall(&mut || tree.run(ctx, &x)),
        || wall(&mut || Ok(ops.sum(&x)?)),
    )?;
    let size = if n == 4 << 20 {
        "4 Mi".to_string()
    } else {
        format!("2^{}", n.trailing_zeros())
    };
    out.info("unigpu_kernel_sum_f32_n", n);
    out.figure(
        "unigpu_kernel_sum_f32_ms",
        format!(
            "#[kernel] shared-tree sum f32 {size}, value on the host ({} workgroups first)",
            tree.first
        ),
        "ms",
        Better::Lower,
        ours,
    );
    out.figure(
        "unigpu_kernel_builtin_sum_f32_ms",
        format!("built-in sum f32 {size} (rounds alternating with the above)"),
        "ms",
        Better::Lower,
        builtin,
    );
    Ok(())
}

/// The hand-written tiled matmul for this backend, and what it is written
/// in; none on the CPU backend, which runs Rust.
fn hand_matmul(
    ctx: &Context,
    options: &CompileOptions,
) -> anyhow::Result<Option<(Kernel, &'static str)>> {
    Ok(match ctx.backend() {
        Backend::Cuda | Backend::Torch => Some((
            ctx.compile_with(HAND_MATMUL_CUDA, options)?
                .kernel("hand_tiled_matmul")?,
            "CUDA C++",
        )),
        Backend::Vulkan => Some((
            Kernel::from_wgsl("hand_tiled_matmul", HAND_MATMUL_WGSL)?,
            "WGSL",
        )),
        Backend::Cpu => None,
    })
}

fn matmul(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    // matmul.rs's sizes: 256³ on the CPU backend and lavapipe, 4096³ on a GPU.
    let n: usize = if small(ctx)? { 256 } else { 4096 };
    let host: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let a = ctx.upload(&host)?;
    let b = ctx.upload(&host)?;
    let mut c = ctx.zeros::<f32>(n * n)?;
    let tiles = n.div_ceil(TILE as usize) as u32;
    let grid = Grid::new((tiles, tiles, 1), (TILE, TILE, 1));
    let dims = (n as u32, n as u32, n as u32);
    let ours = bench_tiled_matmul::kernel(ctx)?;
    let run_ours =
        |c: &mut GpuArray<f32>| ours.launch(ctx, grid, (&a, &b, c, dims.0, dims.1, dims.2));
    run_ours(&mut c)?;
    check_row(&host, &c.download()?, n, "#[kernel] tiled matmul")?;
    const REPS: usize = 5;
    let tflops = |ms: f64| 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out.info("unigpu_kernel_matmul_f32_n", n);
    let hand = hand_matmul(ctx, &CompileOptions::default())?;
    let Some((hand, lang)) = hand else {
        let mut t = Vec::new();
        for _ in 0..ROUNDS {
            t.push(stream_time(ctx, REPS, || run_ours(&mut c))?);
        }
        figure_ours(out, n, tflops(median(t)));
        return Ok(());
    };
    let mut c_hand = ctx.zeros::<f32>(n * n)?;
    let run_hand = |k: &Kernel, c: &mut GpuArray<f32>| {
        ctx.launch(k, grid, (&a, &b, c, dims.0, dims.1, dims.2))
    };
    run_hand(&hand, &mut c_hand)?;
    check_row(&host, &c_hand.download()?, n, "hand-written tiled matmul")?;
    let (t_ours, t_hand) = alternate(
        || stream_time(ctx, REPS, || run_ours(&mut c)),
        || stream_time(ctx, REPS, || run_hand(&hand, &mut c_hand)),
    )?;
    figure_ours(out, n, tflops(t_ours));
    out.info("unigpu_hand_tiled_matmul_language", lang.replace(' ', "_"));
    out.figure(
        "unigpu_hand_tiled_matmul_f32_TFLOPs",
        format!("the same tiled matmul hand-written in {lang}, {n}³"),
        "TFLOP/s",
        Better::Higher,
        tflops(t_hand),
    );
    // The macro compiles with --fmad=false (no silent contraction); the
    // hand-written kernel compiled that way too says how much of any gap
    // is the FMAs. It should give the macro's bits exactly: said as an
    // info line, not a failure, so the timing still comes back.
    if matches!(ctx.backend(), Backend::Cuda | Backend::Torch) {
        let nofma = CompileOptions::default().option("--fmad=false");
        if let Some((hand_nofma, _)) = hand_matmul(ctx, &nofma)? {
            run_hand(&hand_nofma, &mut c_hand)?;
            let same = c_hand.download()? == c.download()?;
            out.info("unigpu_hand_tiled_matmul_nofma_same_bits", same);
            let (_, t) = alternate(
                || stream_time(ctx, REPS, || run_ours(&mut c)),
                || stream_time(ctx, REPS, || run_hand(&hand_nofma, &mut c_hand)),
            )?;
            out.figure(
                "unigpu_hand_tiled_matmul_nofma_f32_TFLOPs",
                format!("the same, CUDA C++ compiled with --fmad=false as the macro's, {n}³"),
                "TFLOP/s",
                Better::Higher,
                tflops(t),
            );
        }
    }
    Ok(())
}

fn figure_ours(out: &mut Out, n: usize, tflops: f64) {
    out.figure(
        "unigpu_kernel_matmul_f32_TFLOPs",
        format!("#[kernel] 16×16 tiled matmul f32 {n}³"),
        "TFLOP/s",
        Better::Higher,
        tflops,
    );
}

/// Row 0 of `c = a · a` against the host, so a fast wrong kernel fails.
fn check_row(host: &[f32], got: &[f32], n: usize, who: &str) -> anyhow::Result<()> {
    for j in 0..n {
        let want: f64 = (0..n)
            .map(|p| f64::from(host[p]) * f64::from(host[p * n + j]))
            .sum();
        ensure!(
            (f64::from(got[j]) - want).abs() <= 1e-5 * n as f64,
            "{who}: c[0][{j}] = {}, the host says {want}",
            got[j]
        );
    }
    Ok(())
}
