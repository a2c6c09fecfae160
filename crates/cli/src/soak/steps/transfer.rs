//! Upload and download round trips of any element type and any bit
//! pattern, by each of the ways the facade moves data: uploads, in-place
//! uploads, stream transfers, device copies, clones, fills and pinned
//! buffers. Every bit must come back.

use rand::Rng;

use super::{Step, StepResult, verdict};
use crate::soak::check::first_bit_difference;
use crate::soak::values::{SoakElement, any_bits, any_dtype, length, with_any_dtype};

pub fn run(step: &mut Step) -> StepResult {
    let dtype = any_dtype(&mut step.rng);
    with_any_dtype!(dtype, T => round_trip::<T>(step))
}

/// The ways a round trip can go.
const WAYS: [&str; 7] = [
    "upload + download",
    "alloc + upload_from + download_into",
    "stream upload + stream download",
    "upload + copy_to + download",
    "upload + try_clone + download",
    "fill + download",
    "pinned upload + pinned download",
];

fn round_trip<T: SoakElement>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let n = length(&mut step.rng);
    let way = step.rng.random_range(0..WAYS.len());
    let mut host = any_bits::<T>(&mut step.rng, n);
    let mut got = match way {
        0 => ctx.upload(&host)?.download()?,
        1 => {
            let mut a = ctx.alloc::<T>(n)?;
            a.upload_from(&host)?;
            let mut out = vec![T::default(); n];
            a.download_into(&mut out)?;
            out
        }
        2 => {
            let s = step.any_stream()?;
            let mut a = ctx.alloc::<T>(n)?;
            s.upload(&host, &mut a)?;
            s.download(&a)?
        }
        3 => {
            let a = ctx.upload(&host)?;
            let mut b = ctx.alloc::<T>(n)?;
            a.copy_to(&mut b)?;
            drop(a);
            b.download()?
        }
        4 => ctx.upload(&host)?.try_clone()?.download()?,
        5 => {
            let value = T::any_bits(&mut step.rng);
            host = vec![value; n];
            let mut a = ctx.alloc::<T>(n)?;
            ctx.ops().fill(&mut a, value)?;
            a.download()?
        }
        _ => {
            let s = step.any_stream()?;
            let mut staged = ctx.pinned::<T>(n)?;
            staged.as_mut_slice()?.copy_from_slice(&host);
            let mut a = ctx.alloc::<T>(n)?;
            s.upload_pinned(&staged, &mut a)?;
            let mut back = ctx.pinned::<T>(n)?;
            s.download_pinned(&a, &mut back)?;
            back.as_slice()?.to_vec()
        }
    };
    if step.inject_mismatch && !got.is_empty() {
        let i = step.rng.random_range(0..got.len());
        bytemuck::bytes_of_mut(&mut got[i])[0] ^= 1;
        step.injected = true;
    }
    Ok(verdict(first_bit_difference(&host, &got), || {
        (format!("{} {}", WAYS[way], T::DTYPE), format!("n={n}"))
    }))
}
