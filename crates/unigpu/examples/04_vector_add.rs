//! vector_add: the original design's first example, with the built-in op.
//! Runs on whichever backend `Context::default()` picks.
//!
//!     cargo run -p unigpu --example 04_vector_add

use unigpu::Context;

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();

    let da = ctx.upload(&a)?;
    let db = ctx.upload(&b)?;
    let mut dc = ctx.alloc::<f32>(n)?;
    ctx.ops().add(&da, &db, &mut dc)?;
    let c = dc.download()?;

    assert!(c.iter().enumerate().all(|(i, v)| *v == (3 * i) as f32));
    println!(
        "vector_add on {}: c[0..4] = {:?}, all {n} correct",
        ctx.backend(),
        &c[..4]
    );
    Ok(())
}
