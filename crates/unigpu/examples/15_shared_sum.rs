//! A sum with a shared-memory tree and barriers, written once in Rust
//! with `#[unigpu::kernel]`: each workgroup of 256 reduces its elements in
//! a shared array, halving the active invocations between barriers, and
//! writes one partial sum; a second launch sums the partials. Runs on
//! whichever backend `Context::default()` picks.
//!
//!     cargo run -p unigpu --example 15_shared_sum

use unigpu::{Context, Grid};

#[unigpu::kernel(workgroup_size = 256)]
fn tree_sum(x: &[f32], partial: &mut [f32]) {
    let tile = shared::<f32, 256>();
    let l = local_id().x;
    let i = global_id().x;
    let mut v = 0.0f32;
    if i < x.len() {
        v = x[i];
    }
    tile[l] = v;
    barrier();
    // The condition is the same for every invocation, so the barrier in
    // the loop is reached by all of them (the macro checks it).
    let mut stride = tile.len() / 2;
    while stride > 0 {
        if l < stride {
            tile[l] += tile[l + stride];
        }
        barrier();
        stride /= 2;
    }
    if l == 0 {
        partial[workgroup_id().x] = tile[0];
    }
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n: usize = 1_000_003;
    // Small integers: every partial sum is exact in f32, whatever the order.
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let k = tree_sum::kernel(&ctx)?;
    let mut data = ctx.upload(&x)?;
    let mut len = n;
    while len > 1 {
        let groups = len.div_ceil(256);
        let mut partial = ctx.zeros::<f32>(groups)?;
        k.launch(
            &ctx,
            Grid::for_elems_with_block(len, 256),
            (&data, &mut partial),
        )?;
        data = partial;
        len = groups;
    }
    let sum = data.download()?[0];
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    assert_eq!(sum as f64, want);
    println!(
        "tree_sum (#[unigpu::kernel], shared memory + barrier()) on {}: sum of {n} elements = {sum}",
        ctx.backend()
    );
    Ok(())
}
