//! Out-of-bounds reports of kernels made by `#[unigpu::kernel]`: each
//! kernel's access sites under a small process-wide number, so that the
//! 32-bit code its generated code records in a fault word (the number
//! << 20 | the site; WGSL has 32-bit atomics only) can be read back into
//! [`Error::KernelOutOfBounds`] at the next sync.

use std::sync::Mutex;

use super::generated::Spec;
use crate::lock::lock;
use crate::{Error, Result};

/// Bits of a code that number the site.
const SITE_BITS: u32 = 20;

/// The registered kernels; kernel number i + 1 is entry i (0 never is
/// one, so a recorded code is never 0).
static KERNELS: Mutex<Vec<&'static Spec>> = Mutex::new(Vec::new());

/// The code base of `spec` (its number << 20), registering it on first
/// use. A kernel is one `static` per `#[unigpu::kernel]`, so the table
/// grows with the program's kernels, not with its launches.
pub(crate) fn register(spec: &'static Spec) -> Result<u32> {
    let mut kernels = lock(&KERNELS);
    let at = match kernels.iter().position(|k| std::ptr::eq(*k, spec)) {
        Some(i) => i,
        None => {
            kernels.push(spec);
            kernels.len() - 1
        }
    };
    let number = at as u32 + 1;
    if number >= 1 << (32 - SITE_BITS) {
        return Err(Error::KernelArgs {
            kernel: spec.name.to_string(),
            message: format!(
                "more than {} kernels made by #[unigpu::kernel] in one process: out-of-bounds \
                 reports number them in {} bits",
                (1u32 << (32 - SITE_BITS)) - 1,
                32 - SITE_BITS
            ),
        });
    }
    Ok(number << SITE_BITS)
}

/// The error a nonzero fault word holds.
pub(crate) fn error(code: u32) -> Error {
    let (number, site) = (code >> SITE_BITS, code & ((1 << SITE_BITS) - 1));
    let spec = (number as usize)
        .checked_sub(1)
        .and_then(|i| lock(&KERNELS).get(i).copied());
    match spec.and_then(|s| s.sites.get(site as usize).map(|x| (s, x))) {
        Some((spec, site)) => Error::KernelOutOfBounds {
            kernel: spec.name.to_string(),
            array: site.array.to_string(),
            file: site.file.to_string(),
            line: site.line,
            access: site.access,
        },
        // Only a word written by something other than generated code.
        None => Error::StreamWork {
            message: format!("a kernel recorded an unknown out-of-bounds code {code:#x}"),
        },
    }
}
