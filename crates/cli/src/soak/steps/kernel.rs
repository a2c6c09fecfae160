//! A user kernel launch: `soak_mix` over u32s (wrapping arithmetic, exact
//! everywhere) or `soak_saxpy` over f32s (one fused multiply-add, or two
//! roundings where the adapter's WGSL `fma` rounds twice), with random
//! lengths and, on the CUDA backends, random block sizes.

use rand::Rng;
use unigpu::{Backend, Grid};

use super::{Step, StepResult, verdict};
use crate::soak::check::first_unequal;
use crate::soak::target::WGSL_BLOCK;
use crate::soak::values::{any_bits, length, small};

pub fn run(step: &mut Step) -> StepResult {
    let kernels = match &step.target.kernels {
        Ok(k) => k.clone(),
        Err(e) => return Err(e.clone()),
    };
    let ctx = &step.target.ctx;
    let n = length(&mut step.rng);
    // Lossless: lengths are at most MAX_LEN, which fits in a u32.
    let n32 = n as u32;
    let block = match step.target.backend {
        // A WGSL launch's block is the shader's @workgroup_size.
        Backend::Vulkan => WGSL_BLOCK,
        _ => [32, 64, 128, 256, 512, 1024][step.rng.random_range(0..6)],
    };
    let grid = Grid::for_elems_with_block(n, block);
    let stream = step.any_stream()?;
    if step.rng.random_bool(0.5) {
        let (hx, hy) = (
            any_bits::<u32>(&mut step.rng, n),
            any_bits::<u32>(&mut step.rng, n),
        );
        let a: u32 = step.rng.random();
        let x = ctx.upload(&hx)?;
        let mut y = ctx.upload(&hy)?;
        stream.launch(&kernels.mix, grid, (a, &x, &mut y, n32))?;
        let expected: Vec<u32> = hx
            .iter()
            .zip(&hy)
            .enumerate()
            .map(|(i, (x, y))| a.wrapping_mul(*x).wrapping_add(y ^ i as u32))
            .collect();
        let got = y.download()?;
        Ok(verdict(first_unequal(&expected, &got), || {
            ("kernel soak_mix u32".into(), format!("n={n} block={block}"))
        }))
    } else {
        let (hx, hy) = (
            small::<f32>(&mut step.rng, n),
            small::<f32>(&mut step.rng, n),
        );
        let a = small::<f32>(&mut step.rng, 1)[0];
        let x = ctx.upload(&hx)?;
        let mut y = ctx.upload(&hy)?;
        stream.launch(&kernels.saxpy, grid, (a, &x, &mut y, n32))?;
        let fused = step.target.rounding.fused_fma_f32;
        let expected: Vec<f32> = hx
            .iter()
            .zip(&hy)
            .map(|(x, y)| if fused { a.mul_add(*x, *y) } else { a * x + y })
            .collect();
        let got = y.download()?;
        Ok(verdict(first_unequal(&expected, &got), || {
            (
                "kernel soak_saxpy f32".into(),
                format!("n={n} block={block}"),
            )
        }))
    }
}
