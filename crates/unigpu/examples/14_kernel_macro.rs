//! vector_add written once in Rust with `#[unigpu::kernel]`: the macro
//! emits CUDA C++ (cuda, torch), WGSL (vulkan) and a CPU implementation,
//! so this runs on whichever backend `Context::default()` picks.
//!
//!     cargo run -p unigpu --example 14_kernel_macro

use unigpu::{Context, Grid};

#[unigpu::kernel]
fn vector_add(a: &[f32], b: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < out.len() {
        out[i] = a[i] + b[i];
    }
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();

    let k = vector_add::kernel(&ctx)?;
    let (da, db) = (ctx.upload(&a)?, ctx.upload(&b)?);
    let mut dc = ctx.zeros::<f32>(n)?;
    // Argument types are checked at compile time against the signature.
    k.launch(&ctx, Grid::for_elems(n), (&da, &db, &mut dc))?;
    let c = dc.download()?;

    assert!(c.iter().enumerate().all(|(i, v)| *v == (3 * i) as f32));
    println!(
        "vector_add (#[unigpu::kernel]) on {}: c[0..4] = {:?}, all {n} correct",
        ctx.backend(),
        &c[..4]
    );
    Ok(())
}
