//! Compiling a kernel: the first compile, the in-process cache, a new
//! source with NVRTC loaded, and the disk cache from a new process; and
//! the first launch of a `#[unigpu::kernel]` kernel in a new process (its
//! CUDA form from the same disk cache) beside a hand-written source's.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, ensure};
use unigpu::{Context, GpuArray, Grid};

use super::kernel_defs::bench_saxpy_once;
use super::{Better, Case, Env, Out, gpu_only, median};

pub const CASE: Case = Case {
    name: "compile",
    group: "compile",
    skip: gpu_only,
    run: compile,
};

/// `unigpu bench --compile-only` in a new process with the same cache
/// directory: the first compile there is served from disk.
pub const DISK_CASE: Case = Case {
    name: "compile_disk",
    group: "compile",
    skip: gpu_only,
    run: compile_disk,
};

/// The first build and launch of a `#[unigpu::kernel]` kernel in the
/// process (what `compile_macro_disk` runs in a new one).
pub const MACRO_CASE: Case = Case {
    name: "compile_macro",
    group: "compile",
    skip: gpu_only,
    run: compile_macro,
};

/// `unigpu bench --only compile_macro` in new processes with the same
/// cache directory, beside `compile_disk`'s first launch.
pub const MACRO_DISK_CASE: Case = Case {
    name: "compile_macro_disk",
    group: "compile",
    skip: gpu_only,
    run: compile_macro_disk,
};

/// New processes each disk case starts; the median is reported. Seven:
/// one process's first build from the disk cache varied 0.15-0.40 ms on
/// an H100, and a median of three moved the macro's ratio by 0.3 between runs.
const CHILDREN: usize = 7;

/// New processes of each side in `compile_macro_disk`, alternating: the
/// two sides' medians moved by 0.3 of their ratio between runs of seven
/// separate processes each (H100 and H200, 2026-11-27).
const PAIRED_CHILDREN: usize = 15;

/// A fixed source, so a second process finds it in the disk cache.
const COMPILE_SRC: &str = r#"
extern "C" __global__ void bench_saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// Arrays for one saxpy launch, made before a first-launch timer starts.
fn saxpy_args(ctx: &Context) -> anyhow::Result<(GpuArray<f32>, GpuArray<f32>)> {
    const N: usize = 1 << 16;
    Ok((ctx.upload(&vec![1.0f32; N])?, ctx.zeros::<f32>(N)?))
}

fn compile(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let (x, mut y) = saxpy_args(ctx)?;
    let t = Instant::now();
    let m = ctx.compile(COMPILE_SRC)?;
    let compiled = t.elapsed();
    // The same kernel launched once and waited for: what a program's first
    // call of a hand-written kernel costs.
    let k = m.kernel("bench_saxpy")?;
    ctx.launch(
        &k,
        Grid::for_elems(x.len()),
        (2.0f32, &x, &mut y, x.len() as u32),
    )?;
    ctx.sync()?;
    let launched = t.elapsed();
    out.figure(
        "unigpu_compile_first_ms",
        "first compile in the process",
        "ms",
        Better::Lower,
        compiled.as_secs_f64() * 1e3,
    );
    out.figure(
        "unigpu_compile_first_launch_ms",
        "first compile + launch + sync in the process",
        "ms",
        Better::Lower,
        launched.as_secs_f64() * 1e3,
    );
    out.info("unigpu_compile_first_origin", format!("{:?}", m.origin()));
    let mut times = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let t = Instant::now();
        let again = ctx.compile(COMPILE_SRC)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        let cached = again.same_as(&m) || m.origin() == unigpu::kernel::Origin::NotCompiled;
        ensure!(cached, "the second compile was not served from the cache");
    }
    // New sources with NVRTC already loaded: what CuPy's new-source figure measures.
    let mut fresh = Vec::new();
    for i in 0..10 {
        let src = format!("{COMPILE_SRC}\n// variant {i} {}\n", std::process::id());
        let t = Instant::now();
        ctx.compile(&src)?;
        fresh.push(t.elapsed().as_secs_f64() * 1e3);
    }
    out.figure(
        "unigpu_compile_new_source_ms_median",
        "compile a new source, NVRTC loaded",
        "ms",
        Better::Lower,
        median(fresh),
    );
    out.figure(
        "unigpu_compile_cached_ms_median",
        "compile the same source again (cached)",
        "ms",
        Better::Lower,
        median(times),
    );
    Ok(())
}

fn compile_disk(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    // In the disk cache even when this case runs alone (`--only compile_disk`).
    env.ctx.compile(COMPILE_SRC)?;
    let (mut compile, mut launch, mut origin) = (Vec::new(), Vec::new(), None);
    for _ in 0..CHILDREN {
        let lines = child(env, &["--compile-only"])?;
        let ms = value(&lines, "unigpu_compile_first_ms")
            .with_context(|| format!("no unigpu_compile_first_ms line in:\n{lines}"))?;
        compile.push(ms);
        launch.push(
            value(&lines, "unigpu_compile_first_launch_ms")
                .with_context(|| format!("no unigpu_compile_first_launch_ms line in:\n{lines}"))?,
        );
        origin = origin.or_else(|| text(&lines, "unigpu_compile_first_origin"));
    }
    out.figure(
        "disk_compile_first_ms",
        "first compile in a new process (disk cache)",
        "ms",
        Better::Lower,
        median(compile),
    );
    out.figure(
        "disk_compile_first_launch_ms",
        "first compile + launch + sync in a new process (disk cache)",
        "ms",
        Better::Lower,
        median(launch),
    );
    if let Some(origin) = origin {
        out.info("disk_compile_first_origin", origin);
    }
    Ok(())
}

fn compile_macro(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let (x, mut y) = saxpy_args(ctx)?;
    let t = Instant::now();
    let k = bench_saxpy_once::kernel(ctx)?;
    let built = t.elapsed();
    k.launch(ctx, Grid::for_elems(x.len()), (2.0, &x, &mut y))?;
    let launched = t.elapsed();
    ctx.sync()?;
    let synced = t.elapsed();
    out.figure(
        "unigpu_macro_first_launch_ms",
        "first #[kernel] build + launch + sync in the process",
        "ms",
        Better::Lower,
        synced.as_secs_f64() * 1e3,
    );
    // Where the time goes: the build (NVRTC or its caches), the launch,
    // the sync (which also reads the stream's fault word).
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    out.info(
        "unigpu_macro_first_split",
        format!(
            "build {:.4} ms, launch {:.4} ms, sync {:.4} ms",
            ms(built),
            ms(launched - built),
            ms(synced - launched)
        ),
    );
    Ok(())
}

fn compile_macro_disk(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    // Both in the disk cache even when this case runs alone.
    bench_saxpy_once::kernel(&env.ctx)?;
    env.ctx.compile(COMPILE_SRC)?;
    // The macro kernel's new processes alternate with the hand-written
    // source's (`compile_disk`'s child), so a drift of the machine
    // between the two runs of processes does not land on one side.
    let (mut launch, mut hand, mut hand_build, mut split) =
        (Vec::new(), Vec::new(), Vec::new(), None);
    for _ in 0..PAIRED_CHILDREN {
        let lines = child(env, &["--only", MACRO_CASE.name])?;
        split = split.or_else(|| text(&lines, "unigpu_macro_first_split"));
        launch.push(
            value(&lines, "unigpu_macro_first_launch_ms")
                .with_context(|| format!("no unigpu_macro_first_launch_ms line in:\n{lines}"))?,
        );
        let lines = child(env, &["--compile-only"])?;
        hand_build.push(
            value(&lines, "unigpu_compile_first_ms")
                .with_context(|| format!("no unigpu_compile_first_ms line in:\n{lines}"))?,
        );
        hand.push(
            value(&lines, "unigpu_compile_first_launch_ms")
                .with_context(|| format!("no unigpu_compile_first_launch_ms line in:\n{lines}"))?,
        );
    }
    out.figure(
        "disk_macro_first_launch_ms",
        "first #[kernel] build + launch + sync in a new process (disk cache)",
        "ms",
        Better::Lower,
        median(launch),
    );
    out.figure(
        "disk_macro_anchor_first_launch_ms",
        "the same kernel hand-written: first compile + launch + sync in a new process (disk cache), processes alternating with the above",
        "ms",
        Better::Lower,
        median(hand),
    );
    if let Some(split) = split {
        out.info("disk_macro_first_split", split);
    }
    // The anchor's build (its compile, served from the disk cache) beside
    // the macro's split above, so a gap shows where it is.
    out.info(
        "disk_macro_anchor_first_split",
        format!("build {:.4} ms (median)", median(hand_build)),
    );
    Ok(())
}

/// This binary's `bench ARGS --lines --quiet` in a new process (same
/// backend, same environment, so the same cache directory); its stdout.
fn child(env: &Env, args: &[&str]) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding this binary to start it again")?;
    let mut cmd = Command::new(&exe);
    cmd.arg("bench").args(args).args(["--lines", "--quiet"]);
    if let Some(b) = env.backend_arg {
        cmd.args(["--backend", b.name()]);
    }
    let child = cmd
        .output()
        .with_context(|| format!("running {} bench {}", exe.display(), args.join(" ")))?;
    ensure!(
        child.status.success(),
        "{} bench {} failed ({}): {}",
        exe.display(),
        args.join(" "),
        child.status,
        String::from_utf8_lossy(&child.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&child.stdout).into_owned())
}

/// The value of `key`'s `key value` line.
fn text(lines: &str, key: &str) -> Option<String> {
    lines
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ').map(str::trim))
        .map(str::to_string)
}

/// The numeric value of `key`'s line.
fn value(lines: &str, key: &str) -> Option<f64> {
    text(lines, key)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{text, value};

    #[test]
    fn the_new_process_figures_are_read_from_its_lines() {
        let lines = "unigpu_backend cuda\nunigpu_compile_first_ms 5.480\n\
                     unigpu_compile_first_launch_ms 5.9\n\
                     unigpu_compile_first_origin DiskCache\nunigpu_compile_cached_ms_median 0.0005\n";
        assert_eq!(value(lines, "unigpu_compile_first_ms"), Some(5.48));
        // A key that is a prefix of another is not confused with it.
        assert_eq!(value(lines, "unigpu_compile_first_launch_ms"), Some(5.9));
        assert_eq!(
            text(lines, "unigpu_compile_first_origin").as_deref(),
            Some("DiskCache")
        );
        assert_eq!(value(lines, "unigpu_macro_first_launch_ms"), None);
        assert_eq!(value(lines, "unigpu_compile_first_origin"), None);
    }
}
