//! Compiling a kernel: the first compile, the in-process cache, a new
//! source with NVRTC loaded, and the disk cache from a new process.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, ensure};

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

/// A fixed source, so a second process finds it in the disk cache.
const COMPILE_SRC: &str = r#"
extern "C" __global__ void bench_saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn compile(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let t = Instant::now();
    let m = ctx.compile(COMPILE_SRC)?;
    out.figure(
        "unigpu_compile_first_ms",
        "first compile in the process",
        "ms",
        Better::Lower,
        t.elapsed().as_secs_f64() * 1e3,
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
    let exe = std::env::current_exe().context("finding this binary to start it again")?;
    let mut cmd = Command::new(&exe);
    cmd.args(["bench", "--compile-only", "--lines", "--quiet"]);
    if let Some(b) = env.backend_arg {
        cmd.args(["--backend", b.name()]);
    }
    let child = cmd
        .output()
        .with_context(|| format!("running {} bench --compile-only", exe.display()))?;
    let stdout = String::from_utf8_lossy(&child.stdout);
    ensure!(
        child.status.success(),
        "{} bench --compile-only failed ({}): {}",
        exe.display(),
        child.status,
        String::from_utf8_lossy(&child.stderr).trim()
    );
    let (ms, origin) = first_compile(&stdout)
        .with_context(|| format!("no unigpu_compile_first_ms line in:\n{stdout}"))?;
    out.figure(
        "disk_compile_first_ms",
        "first compile in a new process (disk cache)",
        "ms",
        Better::Lower,
        ms,
    );
    if let Some(origin) = origin {
        out.info("disk_compile_first_origin", origin);
    }
    Ok(())
}

/// The first-compile time and origin from `--compile-only --lines` output.
fn first_compile(lines: &str) -> Option<(f64, Option<String>)> {
    let value = |key: &str| {
        lines
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ').map(str::trim))
    };
    let ms = value("unigpu_compile_first_ms")?.parse().ok()?;
    Some((ms, value("unigpu_compile_first_origin").map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::first_compile;

    #[test]
    fn the_new_process_first_compile_is_read_from_its_lines() {
        let lines = "unigpu_backend cuda\nunigpu_compile_first_ms 5.480\n\
                     unigpu_compile_first_origin DiskCache\nunigpu_compile_cached_ms_median 0.0005\n";
        assert_eq!(
            first_compile(lines),
            Some((5.48, Some("DiskCache".to_string())))
        );
        assert_eq!(first_compile("unigpu_backend cuda\n"), None);
    }
}
