//! saxpy (`y = a·x + y`) written once in Rust with `#[unigpu::kernel]`:
//! the same kernel as 05_saxpy, whose three sources (CUDA C++, WGSL and a
//! Rust closure) the macro writes here from one function. Runs on
//! whichever backend `Context::default()` picks.
//!
//!     cargo run -p unigpu --example 18_saxpy_macro
//!     UNIGPU_BACKEND=vulkan cargo run -p unigpu --example 18_saxpy_macro

use unigpu::{Context, Grid};

#[unigpu::kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id().x;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n = 1_000_003; // not a multiple of the workgroup size
    let x: Vec<f32> = (0..n).map(|i| (i % 100) as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let a = 2.5f32;

    let k = saxpy::kernel(&ctx)?;
    let dx = ctx.upload(&x)?;
    let mut dy = ctx.upload(&y)?;
    // (f32, &GpuArray<f32>, &mut GpuArray<f32>), checked at compile time.
    k.launch(&ctx, Grid::for_elems(n), (a, &dx, &mut dy))?;
    let out = dy.download()?;

    // Quarters times 2.5 plus small integers are exact in f32, so the
    // host's `a * x + y` gives the same bits on every backend, even on a
    // Vulkan driver that fuses the two into one fma (docs/kernels.md).
    let bad = (0..n).filter(|&i| out[i] != a * x[i] + y[i]).count();
    assert_eq!(bad, 0, "{bad} elements differ from the host");
    println!(
        "saxpy (#[unigpu::kernel]) on {}: y = {a}·x + y over {n} elements, y[1..4] = {:?}, all match the host",
        ctx.backend(),
        &out[1..4]
    );
    Ok(())
}
