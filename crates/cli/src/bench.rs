//! `unigpu bench`: the numbers the benchmark report compares with the
//! anchors (raw CUDA, CuPy, torch) measured in the same run. Prints one
//! `key value` line per figure, like the anchor scripts.

use std::time::Instant;

use anyhow::ensure;
use unigpu::{Context, Grid};

const EMPTY_SRC: &str = "extern \"C\" __global__ void empty() {}\n";

/// A fixed source, so a second process finds it in the disk cache.
const COMPILE_SRC: &str = r#"
extern "C" __global__ void bench_saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn out(key: &str, value: impl std::fmt::Display) {
    println!("{key} {value}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(compile_only: bool, cpu_ops_only: bool) -> anyhow::Result<()> {
    let ctx = Context::default()?;
    out("unigpu_backend", ctx.backend());
    out("unigpu_device", ctx.device_name()?.replace(' ', "_"));
    if compile_only {
        return compile(&ctx);
    }
    if cpu_ops_only {
        ensure!(
            ctx.backend() == unigpu::Backend::Cpu,
            "--cpu-ops-only measures the CPU backend, but the context is on {}",
            ctx.backend()
        );
        return cpu_ops(&ctx);
    }
    // Launch first: measured before the compile figures load NVRTC and
    // a dozen modules into the process.
    launch(&ctx)?;
    compile(&ctx)?;
    axpy(&ctx)?;
    matmul::<f32>(&ctx, "f32")?;
    matmul::<unigpu::bf16>(&ctx, "bf16")?;
    if ctx.backend() == unigpu::Backend::Cpu {
        cpu_ops(&ctx)?;
    }
    Ok(())
}

/// Repetitions per CPU-op figure; bench/numpy_ops.py uses the same count.
const CPU_REPS: usize = 30;

/// The median wall time of `op`, each call waited for (a reduction
/// returns its value; element-wise ops and matmul through `ctx.sync()`),
/// after three warm-up calls: the figure numpy's timing loop gives.
fn cpu_time(ctx: &Context, mut op: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    for _ in 0..3 {
        op()?;
        ctx.sync()?;
    }
    let mut times = Vec::with_capacity(CPU_REPS);
    for _ in 0..CPU_REPS {
        let t = Instant::now();
        op()?;
        ctx.sync()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}

/// The CPU backend's element-wise ops, reductions and matmul, printed as
/// `unigpu_cpu_<op>_<size>_ms` beside the `numpy_cpu_*` keys of
/// bench/numpy_ops.py (same sizes, f32, same inputs' shape).
fn cpu_ops(ctx: &Context) -> anyhow::Result<()> {
    const N: usize = 4 << 20;
    // Signed values, so relu has both branches to take and max a sign to see.
    let wave = |i: usize, k: usize| ((i * k) % 2001) as f32 * 1e-3 - 1.0;
    let ha: Vec<f32> = (0..N).map(|i| wave(i, 7919)).collect();
    let hb: Vec<f32> = (0..N).map(|i| wave(i, 104_729)).collect();
    let (a, b) = (ctx.upload(&ha)?, ctx.upload(&hb)?);
    let mut y = ctx.zeros::<f32>(N)?;
    let ops = ctx.ops();
    // One place for the key format that bench/ratios.py --cpu expects.
    let ms = |key: &str, v: f64| out(&format!("unigpu_cpu_{key}_ms"), format!("{v:.4}"));
    ms("relu_4Mi", cpu_time(ctx, || Ok(ops.relu(&a, &mut y)?))?);
    ms("add_4Mi", cpu_time(ctx, || Ok(ops.add(&a, &b, &mut y)?))?);
    ms(
        "sigmoid_4Mi",
        cpu_time(ctx, || Ok(ops.sigmoid(&a, &mut y)?))?,
    );
    ms(
        "sum_4Mi",
        cpu_time(ctx, || ops.sum(&a).map(drop).map_err(Into::into))?,
    );
    ms(
        "max_4Mi",
        cpu_time(ctx, || ops.max(&a).map(drop).map_err(Into::into))?,
    );
    ms(
        "dot_4Mi",
        cpu_time(ctx, || ops.dot(&a, &b).map(drop).map_err(Into::into))?,
    );
    for n in [512, 1024] {
        let (ma, mb) = (ctx.upload(&ha[..n * n])?, ctx.upload(&hb[..n * n])?);
        let mut c = ctx.zeros::<f32>(n * n)?;
        let t = cpu_time(ctx, || Ok(ops.matmul(&ma, &mb, &mut c, (n, n, n))?))?;
        ms(&format!("matmul_{n}"), t);
    }
    Ok(())
}

fn compile(ctx: &Context) -> anyhow::Result<()> {
    let t = Instant::now();
    let m = ctx.compile(COMPILE_SRC)?;
    out(
        "unigpu_compile_first_ms",
        format!("{:.3}", t.elapsed().as_secs_f64() * 1e3),
    );
    out("unigpu_compile_first_origin", format!("{:?}", m.origin()));
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
    out(
        "unigpu_compile_new_source_ms_median",
        format!("{:.3}", median(fresh)),
    );
    out(
        "unigpu_compile_cached_ms_median",
        format!("{:.5}", median(times)),
    );
    Ok(())
}

fn launch(ctx: &Context) -> anyhow::Result<()> {
    let k = ctx
        .compile(EMPTY_SRC)?
        .kernel("empty")?
        .with_cpu(|_| Ok(()));
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
    for _ in 0..5 {
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
    out(
        "unigpu_empty_launch_submit_us",
        format!("{:.3}", median(submit)),
    );
    out(
        "unigpu_empty_launch_default_stream_submit_us",
        format!("{:.3}", median(default_stream)),
    );
    out(
        "unigpu_empty_launch_throughput_us",
        format!("{:.3}", median(total)),
    );
    let mut rt = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        s.launch(&k, g, ())?;
        s.sync()?;
        rt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out(
        "unigpu_launch_sync_roundtrip_us_median",
        format!("{:.3}", median(rt)),
    );
    Ok(())
}

fn axpy(ctx: &Context) -> anyhow::Result<()> {
    let n = if ctx.backend() == unigpu::Backend::Cpu {
        1 << 22
    } else {
        1 << 26
    };
    let hx: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 1e-3).collect();
    let x = ctx.upload(&hx)?;
    let mut y = ctx.zeros::<f32>(n)?;
    let ops = ctx.ops();
    ops.axpy(2.0, &x, &mut y)?;
    let check = y.download()?;
    ensure!(
        check.iter().zip(&hx).all(|(y, x)| *y == 2.0 * x),
        "axpy gave a wrong result"
    );
    const REPS: usize = 20;
    let s = ctx.default_stream();
    let start = s.record()?;
    for _ in 0..REPS {
        ops.axpy(2.0, &x, &mut y)?;
    }
    let end = s.record()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    // Reads x and y, writes y.
    let gbps = 3.0 * 4.0 * n as f64 / (ms * 1e-3) / 1e9;
    out("unigpu_axpy_f32_n", n);
    out("unigpu_axpy_f32_ms", format!("{ms:.4}"));
    out("unigpu_axpy_f32_GBps", format!("{gbps:.1}"));
    Ok(())
}

fn matmul<T: unigpu::Float>(ctx: &Context, name: &str) -> anyhow::Result<()> {
    let n = if ctx.backend() == unigpu::Backend::Cpu {
        256
    } else {
        4096
    };
    let host: Vec<T> = (0..n * n)
        .map(|i| {
            T::from_acc(
                num_traits::cast(((i * 7919) % 1000) as f64 * 1e-3 - 0.5).unwrap_or_default(),
            )
        })
        .collect();
    let a = ctx.upload(&host)?;
    let b = ctx.upload(&host)?;
    let mut c = ctx.zeros::<T>(n * n)?;
    let ops = ctx.ops();
    for _ in 0..3 {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    const REPS: usize = 10;
    let s = ctx.default_stream();
    let start = s.record()?;
    for _ in 0..REPS {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    let end = s.record()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out(&format!("unigpu_matmul_{name}_n"), n);
    out(&format!("unigpu_matmul_{name}_ms"), format!("{ms:.4}"));
    out(
        &format!("unigpu_matmul_{name}_TFLOPs"),
        format!("{tflops:.2}"),
    );
    Ok(())
}
