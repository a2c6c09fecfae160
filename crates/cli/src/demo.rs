//! `unigpu demo`: the main job. Moves random data through two streams
//! ordered by an event, runs a run-time-compiled kernel and built-in ops on
//! it, and checks every result on the host.

use std::time::Instant;

use anyhow::{Context as _, ensure};
use rand::Rng;
use unigpu::{Context, CpuArgs, Grid};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn saxpy_cpu(args: &CpuArgs) -> unigpu::Result<()> {
    let a: f32 = args.scalar(0)?;
    let x = args.input::<f32>(1)?;
    let mut y = args.output::<f32>(2)?;
    for (y, x) in y.iter_mut().zip(x.iter()) {
        *y = a.mul_add(*x, *y);
    }
    Ok(())
}

pub fn run(n: usize) -> anyhow::Result<()> {
    let ctx = Context::default().context("no context could be created")?;
    println!(
        "backend: {} (device {}: {})",
        ctx.backend(),
        ctx.device_id(),
        ctx.device_name()?
    );
    let mut rng = rand::rng();
    let host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();

    let start = Instant::now();
    let input = ctx.upload(&host)?;
    let mut middle = ctx.alloc::<f32>(n)?;
    let mut output = ctx.alloc::<f32>(n)?;
    let (first, second) = (ctx.create_stream()?, ctx.create_stream()?);
    let begin = first.record_timed()?;
    first.copy(&input, &mut middle)?;
    let copied = first.record_timed()?;
    second.wait(&copied)?;
    second.copy(&middle, &mut output)?;
    let result = output.download()?;
    ctx.sync()?;
    let elapsed = start.elapsed();

    let mismatches = host.iter().zip(&result).filter(|(a, b)| a != b).count();
    ensure!(mismatches == 0, "{mismatches} of {n} elements differ");
    println!(
        "copied {n} f32 through two streams in {:.3} ms (first stream's copy: {:.3} ms); all {n} elements match",
        elapsed.as_secs_f64() * 1e3,
        begin.elapsed_ms(&copied)?
    );

    // A kernel compiled at run time (with a CPU implementation for the CPU
    // backend), then built-in ops on its output.
    let saxpy = ctx.compile(SAXPY)?.kernel("saxpy")?.with_cpu(saxpy_cpu);
    let n32 = u32::try_from(n).context("--n must fit in 32 bits for the saxpy kernel")?;
    ctx.launch(
        &saxpy,
        Grid::for_elems(n),
        (3.0f32, &input, &mut output, n32),
    )?;
    let want: Vec<f32> = host.iter().map(|x| 3.0f32.mul_add(*x, *x)).collect();
    let got = output.download()?;
    let bad = want.iter().zip(&got).filter(|(a, b)| a != b).count();
    ensure!(bad == 0, "saxpy: {bad} of {n} elements differ");
    let sum = ctx.ops().sum(&output)? as f64;
    let reference: f64 = want.iter().map(|&v| v as f64).sum();
    let scale: f64 = want.iter().map(|&v| (v as f64).abs()).sum::<f64>().max(1.0);
    ensure!(
        (sum - reference).abs() <= 1e-5 * scale,
        "sum {sum} vs host {reference}"
    );
    println!("saxpy kernel: all {n} elements match; ops().sum = {sum:.4} (host {reference:.4})");
    Ok(())
}
