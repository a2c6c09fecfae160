//! The CPU backend's native form of `philox_normal` for f32 (attached
//! with `Kernel::with_cpu`): the same numbers, bit for bit, as the
//! kernel's (tests/random.rs checks both against its own reference).
//!
//! The macro's CPU form runs one invocation (one Philox block, four
//! normals) at a time, scalar, with its branches: 84 ms for 4 Mi f32 on
//! 2 cores, twice numpy's time. Here blocks go through in batches, each
//! step a loop over the batch with the same code in every iteration
//! (Philox's ten rounds, then Box–Muller on every pair), which LLVM
//! vectorises under the SIMD dispatch; the batches split across rayon's
//! pool. `mul_add` is one instruction (and vectorises) under the AVX2
//! and AVX-512 dispatch, whose CPUs have FMA; on a CPU without it, it is
//! a libm call per use (the same bits, slower).
//!
//! The f32 helpers (`ln_unit_f32`, `sqrt_f32`, the polynomials) are the
//! kernels' own, compiled a second time as plain Rust (`math.rs`);
//! Philox and the angle's remainder wrap here where the kernel language
//! wraps.

use rayon::prelude::*;

use super::math::host;
use crate::Result;
use crate::kernel::CpuArgs;

/// Philox blocks a batch (512 normals).
const BATCH: usize = 128;

/// `philox_normal`'s arguments: `out`, `key0`, `key1`, `blo`, `bhi`,
/// `mean`, `std`; block `j` fills elements `4j..4j + 4` below the length.
pub(super) fn normal_f32(a: &CpuArgs) -> Result<()> {
    let mut out = a.output::<f32>(0)?;
    let p = Params {
        key: [a.scalar::<u32>(1)?, a.scalar::<u32>(2)?],
        block: [a.scalar::<u32>(3)?, a.scalar::<u32>(4)?],
        mean: a.scalar::<f32>(5)?,
        std: a.scalar::<f32>(6)?,
    };
    out.par_chunks_mut(4 * BATCH)
        .enumerate()
        .for_each(|(b, chunk)| {
            crate::simd::simd(
                #[inline(always)]
                || batch(&p, (b * BATCH) as u32, chunk),
            )
        });
    Ok(())
}

struct Params {
    key: [u32; 2],
    /// The first block's counter (low, high).
    block: [u32; 2],
    mean: f32,
    std: f32,
}

/// Blocks `first..` into `out` (at most `4 * BATCH` elements; the last
/// batch may end inside a block).
#[inline(always)]
fn batch(p: &Params, first: u32, out: &mut [f32]) {
    // Pair k: words (wa, wb) of block k/2, (w0, w1) or (w2, w3).
    let mut wa = [0u32; 2 * BATCH];
    let mut wb = [0u32; 2 * BATCH];
    for (k, (a, b)) in wa
        .chunks_exact_mut(2)
        .zip(wb.chunks_exact_mut(2))
        .enumerate()
    {
        let w = philox(p, first.wrapping_add(k as u32));
        (a[0], b[0], a[1], b[1]) = (w[0], w[1], w[2], w[3]);
    }
    let mut zc = [0f32; 2 * BATCH];
    let mut zs = [0f32; 2 * BATCH];
    for (((c, s), &a), &b) in zc.iter_mut().zip(zs.iter_mut()).zip(&wa).zip(&wb) {
        let (rc, rs) = box_muller(a, b);
        *c = p.std.mul_add(rc, p.mean);
        *s = p.std.mul_add(rs, p.mean);
    }
    for (k, o) in out.chunks_mut(2).enumerate() {
        o[0] = zc[k];
        if let Some(o1) = o.get_mut(1) {
            *o1 = zs[k];
        }
    }
}

/// Philox 4×32-10 on counter (block + j, carried, 0, 0), as the kernels.
#[inline(always)]
fn philox(p: &Params, j: u32) -> [u32; 4] {
    let mut c0 = p.block[0].wrapping_add(j);
    let mut c1 = p.block[1].wrapping_add((c0 < p.block[0]) as u32);
    let (mut c2, mut c3) = (0u32, 0u32);
    let [mut k0, mut k1] = p.key;
    for _ in 0..10 {
        let m0 = 0xD251_1F53u64 * c0 as u64;
        let m1 = 0xCD9E_8D57u64 * c2 as u64;
        (c0, c1, c2, c3) = (
            (m1 >> 32) as u32 ^ c1 ^ k0,
            m1 as u32,
            (m0 >> 32) as u32 ^ c3 ^ k1,
            m0 as u32,
        );
        k0 = k0.wrapping_add(0x9E37_79B9);
        k1 = k1.wrapping_add(0xBB67_AE85);
    }
    [c0, c1, c2, c3]
}

/// Box–Muller on one pair of words: (r cos θ, r sin θ), as the kernel.
#[inline(always)]
fn box_muller(wa: u32, wb: u32) -> (f32, f32) {
    let u = (((wa >> 8) as f32).mul_add(256.0, (wa & 255) as f32) + 1.0) * 2.328_306_4e-10;
    let radius = host::sqrt_f32(-2.0 * host::ln_unit_f32(u));
    let phase = wb >> 8;
    let q = host::quadrant24(phase);
    // rem_angle24, wrapping where the kernel language wraps.
    let x = (phase.wrapping_sub((((phase >> 21) + 1) >> 1) << 22) as i32) as f32 * 3.745_070_4e-7;
    let (sx, cx) = (host::sin_poly_f32(x), host::cos_poly_f32(x));
    // The quadrant's swap and signs as selects: a `match` stayed a
    // switch, and a loop with a switch does not vectorise (3.4x slower).
    let (s, c) = if q & 1 == 1 { (cx, sx) } else { (sx, cx) };
    let s = if q & 2 != 0 { -s } else { s };
    let c = if (q + 1) & 2 != 0 { -c } else { c };
    (radius * c, radius * s)
}
