//! The element types a `GpuArray` can hold: `unigpu-core`'s, which every
//! backend and front end shares.

pub use unigpu_core::{DType, Element, PerDtype};

/// Runs `$body` with `$T` as the element type named by `$dtype`.
pub(crate) use unigpu_core::with_dtype;
