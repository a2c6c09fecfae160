//! A tiled f32 matmul with shared memory, written once in Rust with
//! `#[unigpu::kernel]`: each 16×16 workgroup loads a tile of `a` and of
//! `b` into shared arrays per step, waits at a barrier, multiplies the
//! tiles, and waits again before the next load. Sizes need not be
//! multiples of the tile. Runs on whichever backend `Context::default()`
//! picks.
//!
//!     cargo run -p unigpu --example 16_tiled_matmul

use unigpu::{Context, Grid};

#[unigpu::kernel(workgroup_size = (16, 16))]
fn tiled_matmul(a: &[f32], b: &[f32], c: &mut [f32], m: u32, n: u32, k: u32) {
    let ta = shared::<f32, 256>();
    let tb = shared::<f32, 256>();
    let col = global_id().x;
    let row = global_id().y;
    let lx = local_id().x;
    let ly = local_id().y;
    let rows = m as usize;
    let cols = n as usize;
    let inner = k as usize;
    let mut acc = 0.0f32;
    for t in 0..(inner + 15) / 16 {
        // Out of range elements load as 0, so edge tiles need no branch
        // around the barrier.
        let ac = t * 16 + lx;
        let mut av = 0.0f32;
        if row < rows && ac < inner {
            av = a[row * inner + ac];
        }
        ta[ly * 16 + lx] = av;
        let br = t * 16 + ly;
        let mut bv = 0.0f32;
        if br < inner && col < cols {
            bv = b[br * cols + col];
        }
        tb[ly * 16 + lx] = bv;
        barrier();
        for j in 0..16usize {
            acc += ta[ly * 16 + j] * tb[j * 16 + lx];
        }
        barrier();
    }
    if row < rows && col < cols {
        c[row * cols + col] = acc;
    }
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let (m, n, k) = (200usize, 150usize, 99usize);
    // Small integers: every product and sum is exact in f32.
    let a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 3) as f32 - 1.0).collect();
    let kern = tiled_matmul::kernel(&ctx)?;
    let (da, db) = (ctx.upload(&a)?, ctx.upload(&b)?);
    let mut dc = ctx.zeros::<f32>(m * n)?;
    let grid = Grid::new(
        (n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1),
        (16, 16, 1),
    );
    kern.launch(
        &ctx,
        grid,
        (&da, &db, &mut dc, m as u32, n as u32, k as u32),
    )?;
    let c = dc.download()?;
    for r in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|i| a[r * k + i] * b[i * n + j]).sum();
            assert_eq!(c[r * n + j], want, "c[{r}][{j}]");
        }
    }
    println!(
        "tiled_matmul (#[unigpu::kernel], 16x16 shared tiles) on {}: {m}x{k} · {k}x{n}, all {} elements correct",
        ctx.backend(),
        m * n
    );
    Ok(())
}
