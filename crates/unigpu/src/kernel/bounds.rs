//! Out-of-bounds reports of kernels made by `#[unigpu::kernel]`: each
//! kernel's access sites under a small process-wide number, so that the
//! 32-bit code its generated code records in a fault word (the number
//! << 20 | the site; WGSL has 32-bit atomics only) can be read back into
//! [`Error::KernelOutOfBounds`] at the next sync.

use std::sync::Mutex;

use crate::error::ArrayAccess;
use crate::lock::lock;
use crate::{Error, Result};

/// One place a kernel indexes an array (`a[i]`, `a[i] = v`,
/// `a.atomic_add(i, v)`), named in [`Error::KernelOutOfBounds`]; the
/// macro emits a table of them per kernel (`generated::Spec::sites`).
#[derive(Debug, Clone, Copy)]
pub struct Site {
    pub array: &'static str,
    pub file: &'static str,
    pub line: u32,
    pub access: ArrayAccess,
}

/// A kernel's name and its sites.
type Entry = (&'static str, &'static [Site]);

/// Bits of a code that number the site.
const SITE_BITS: u32 = 20;

/// The registered kernels; kernel number i + 1 is entry i (0 never is
/// one, so a recorded code is never 0).
static KERNELS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The code base of kernel `name` with `sites` (its number << 20),
/// registering it on first use. Each `#[unigpu::kernel]` has one `static`
/// table, so the list grows with the program's kernels, not its launches.
pub(crate) fn register(name: &'static str, sites: &'static [Site]) -> Result<u32> {
    let mut kernels = lock(&KERNELS);
    let at = match kernels
        .iter()
        .position(|(n, s)| *n == name && std::ptr::eq(*s, sites))
    {
        Some(i) => i,
        None => {
            kernels.push((name, sites));
            kernels.len() - 1
        }
    };
    let number = at as u32 + 1;
    if number >= 1 << (32 - SITE_BITS) {
        return Err(Error::KernelArgs {
            kernel: name.to_string(),
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
    let entry = (number as usize)
        .checked_sub(1)
        .and_then(|i| lock(&KERNELS).get(i).copied());
    match entry.and_then(|(name, sites)| sites.get(site as usize).map(|x| (name, x))) {
        Some((name, site)) => Error::KernelOutOfBounds {
            kernel: name.to_string(),
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
