//! A 2-D image blur (a 3×3 box stencil) written once in Rust with
//! `#[unigpu::kernel]`: a 2-D grid of 16×16 workgroups, one invocation per
//! pixel, neighbours past the border clamped to the edge. Runs on
//! whichever backend `Context::default()` picks.
//!
//!     cargo run -p unigpu --example 19_blur

use unigpu::{Context, Grid};

#[unigpu::kernel(workgroup_size = (16, 16))]
fn blur3x3(src: &[f32], dst: &mut [f32], width: u32, height: u32) {
    let x = global_id().x;
    let y = global_id().y;
    let w = width as i32;
    let h = height as i32;
    if x < width as usize && y < height as usize {
        let mut acc = 0.0f32;
        for dy in 0..3i32 {
            for dx in 0..3i32 {
                let sx = (x as i32 + dx - 1).clamp(0, w - 1);
                let sy = (y as i32 + dy - 1).clamp(0, h - 1);
                acc += src[(sy * w + sx) as usize];
            }
        }
        // Sums, then one product: no `a * b + c` that a driver could fuse.
        dst[y * width as usize + x] = acc * (1.0f32 / 9.0f32);
    }
}

/// The same stencil on the host, in the same order of additions.
fn blur_host(src: &[f32], w: usize, h: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut acc = 0.0f32;
            for dy in 0..3 {
                for dx in 0..3 {
                    let sx = (x + dx).clamp(1, w) - 1;
                    let sy = (y + dy).clamp(1, h) - 1;
                    acc += src[sy * w + sx];
                }
            }
            out[y * w + x] = acc * (1.0f32 / 9.0f32);
        }
    }
    out
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    // Neither side a multiple of 16: the edge workgroups are partly idle.
    let (w, h) = (1023usize, 767usize);
    // A checkerboard with a gradient: edges for the blur to soften.
    let img: Vec<f32> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            (((x / 8 + y / 8) % 2) as f32) + (x as f32) / (w as f32)
        })
        .collect();

    let k = blur3x3::kernel(&ctx)?;
    let src = ctx.upload(&img)?;
    let mut dst = ctx.zeros::<f32>(w * h)?;
    let grid = Grid::new(
        (w.div_ceil(16) as u32, h.div_ceil(16) as u32, 1),
        (16, 16, 1),
    );
    k.launch(&ctx, grid, (&src, &mut dst, w as u32, h as u32))?;
    let got = dst.download()?;

    let want = blur_host(&img, w, h);
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert_eq!(bad, 0, "{bad} pixels differ from the host");
    println!(
        "blur3x3 (#[unigpu::kernel], 2-D grid of 16x16 workgroups) on {}: {w}x{h} image, every pixel matches the host",
        ctx.backend()
    );
    Ok(())
}
