//! A 256-bin histogram with atomics, written once in Rust with
//! `#[unigpu::kernel]`: each workgroup counts its values into a shared
//! array with `atomic_add`, waits at a barrier, then adds its non-zero
//! counts to the global bins, again with `atomic_add`. Exact on every
//! backend. Runs on whichever backend `Context::default()` picks.
//!
//!     cargo run -p unigpu --example 17_histogram

use unigpu::{Context, Grid};

#[unigpu::kernel(workgroup_size = 256)]
fn histogram(data: &[u32], bins: &mut [u32]) {
    let local = shared::<u32, 256>();
    let l = local_id().x;
    let i = global_id().x;
    if i < data.len() {
        local.atomic_add((data[i] & 255) as usize, 1);
    }
    barrier();
    let c = local[l];
    if c > 0 {
        bins.atomic_add(l, c);
    }
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n: usize = 3_000_017;
    // A cheap deterministic scramble, skewed toward a few bins.
    let data: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> (i % 3 * 4))
        .collect();
    let k = histogram::kernel(&ctx)?;
    let d = ctx.upload(&data)?;
    let mut bins = ctx.zeros::<u32>(256)?;
    k.launch(&ctx, Grid::for_elems_with_block(n, 256), (&d, &mut bins))?;
    let got = bins.download()?;
    let mut want = vec![0u32; 256];
    for v in &data {
        want[(v & 255) as usize] += 1;
    }
    assert_eq!(got, want);
    let (top, count) = got
        .iter()
        .enumerate()
        .max_by_key(|(_, c)| **c)
        .unwrap_or((0, &0));
    println!(
        "histogram (#[unigpu::kernel], shared + global atomics) on {}: {n} values in 256 bins, exact; fullest bin {top} with {count}",
        ctx.backend()
    );
    Ok(())
}
