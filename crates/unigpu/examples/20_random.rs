//! Random numbers from `unigpu::random::Generator` (Philox 4×32-10): the
//! same seed gives the same bits on every backend, so this draws on the
//! backend `Context::default()` picks and again on the CPU backend and
//! compares them bit for bit (docs/random.md).
//!
//!     cargo run -p unigpu --example 20_random
//!     UNIGPU_BACKEND=vulkan cargo run -p unigpu --example 20_random

use unigpu::random::Generator;
use unigpu::{Backend, Context};

/// Uniforms, normals, dice and the offset after them.
type Draw = (Vec<f32>, Vec<f32>, Vec<i32>, u64);

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let cpu = Context::new(Backend::Cpu, 0)?;
    let n = 1_000_003; // not a multiple of the 4 numbers a Philox block gives

    let draw = |ctx: &Context| -> unigpu::Result<Draw> {
        let mut rng = Generator::new(2026);
        let u = rng.uniform::<f32>(ctx, n)?.download()?;
        let z = rng.normal::<f32>(ctx, n, 0.0, 1.0)?.download()?;
        let k = rng.randint::<i32>(ctx, n, 1, 7)?.download()?; // dice
        Ok((u, z, k, rng.offset()))
    };
    let (u, z, k, offset) = draw(&ctx)?;
    let here = draw(&cpu)?;
    let same = u
        .iter()
        .zip(&here.0)
        .all(|(a, b)| a.to_bits() == b.to_bits())
        && z.iter()
            .zip(&here.1)
            .all(|(a, b)| a.to_bits() == b.to_bits())
        && k == here.2
        && offset == here.3;
    assert!(
        same,
        "{} and the CPU backend gave different numbers",
        ctx.backend()
    );

    let mean = z.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    let var = z.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
    let sixes = k.iter().filter(|&&x| x == 6).count() as f64 / n as f64;
    println!(
        "random on {}: uniform[..3] = {:?}, normal mean {mean:.4} variance {var:.4}, a six {sixes:.4} of the time; \
         offset now {offset} words; the CPU backend gave the same bits",
        ctx.backend(),
        &u[..3]
    );
    Ok(())
}
