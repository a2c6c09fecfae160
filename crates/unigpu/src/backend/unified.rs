//! What the backends share about unified memory: the error for an array
//! that is not unified. Not a backend.

use super::Backend;
use crate::error::Error;

/// A host view or prefetch asked of an array that is not unified memory.
pub(crate) fn not_unified(backend: Backend) -> Error {
    Error::Unsupported {
        backend,
        what: "host views and prefetch need unified memory, and this array is device memory: \
               make it with Context::alloc_unified"
            .into(),
    }
}
