//! `unigpu demo`: the main job. Moves random data through two streams
//! ordered by an event, and checks every element on the host.

use std::time::Instant;

use anyhow::{Context as _, ensure};
use rand::Rng;
use unigpu::Context;

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
    let begin = first.record()?;
    first.copy(&input, &mut middle)?;
    let copied = first.record()?;
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
    Ok(())
}
