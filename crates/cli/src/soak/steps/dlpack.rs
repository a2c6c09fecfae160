//! A DLPack export and import in the same process: the imported array
//! must hold the exported data, and, sharing its memory, a fill through
//! it must show through the original. The vulkan backend refuses DLPack
//! (`Error::Dlpack`, docs/dlpack.md), which counts as unsupported there.

use unigpu::{Backend, DlpackSync, Error, GpuArray};

use super::{Outcome, Step, StepResult, is_unsupported, verdict};
use crate::soak::check::first_bit_difference;
use crate::soak::values::{SoakElement, any_bits, any_dtype, length, with_any_dtype};

pub fn run(step: &mut Step) -> StepResult {
    let dtype = any_dtype(&mut step.rng);
    with_any_dtype!(dtype, T => exchange::<T>(step))
}

fn exchange<T: SoakElement>(step: &mut Step) -> StepResult {
    let ctx = &step.target.ctx;
    let n = length(&mut step.rng);
    let host = any_bits::<T>(&mut step.rng, n);
    let mut original = ctx.upload(&host)?;
    let tensor = match original.to_dlpack(DlpackSync::Host) {
        Ok(t) => t,
        Err(e) if refused(step.target.backend, &e) => {
            return Ok(Outcome::Unsupported(e.to_string()));
        }
        Err(e) => return Err(e),
    };
    let mut imported = GpuArray::<T>::from_dlpack(ctx, tensor)?;
    let sizes = || format!("n={n}");
    let what = |w: &str| format!("{w} {}", T::DTYPE);
    if let Some(d) = first_bit_difference(&host, &imported.download()?) {
        return Ok(verdict(Some(d), || (what("dlpack import"), sizes())));
    }
    let value = T::any_bits(&mut step.rng);
    ctx.ops().fill(&mut imported, value)?;
    // The fill is done once the imported array's download returns; the
    // original shares the memory.
    imported.download()?;
    drop(imported);
    let through = original.download()?;
    Ok(verdict(
        first_bit_difference(&vec![value; n], &through),
        || {
            (
                what("fill through a dlpack import, read through the export"),
                sizes(),
            )
        },
    ))
}

/// Whether `e` is the refusal `backend` documents (only vulkan has one).
fn refused(backend: Backend, e: &Error) -> bool {
    backend == Backend::Vulkan && (is_unsupported(e) || matches!(e.root(), Error::Dlpack { .. }))
}
