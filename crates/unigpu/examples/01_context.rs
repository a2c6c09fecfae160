//! The first program: pick a backend, move data, read it back.
//! Runs on a GPU when there is one, on the CPU backend otherwise.
//!
//!     cargo run -p unigpu --example 01_context

use unigpu::Context;

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    println!("backend: {} ({})", ctx.backend_name(), ctx.device_name()?);
    for step in ctx.fallback_chain() {
        println!("  {step}");
    }

    let host: Vec<f32> = (0..1_000_000).map(|i| i as f32 * 0.5).collect();
    let x = ctx.alloc_upload(&host)?;
    let mut y = ctx.alloc_zeros::<f32>(host.len())?;
    x.copy_to(&mut y)?;
    let back = y.download()?;
    assert_eq!(back, host);
    println!(
        "{} elements ({} bytes) went up and came back intact",
        y.len(),
        y.size_bytes()
    );

    let mem = ctx.memory_info()?;
    println!(
        "memory: {} MiB free of {} MiB",
        mem.free >> 20,
        mem.total >> 20
    );
    Ok(())
}
