//! The torch backend in a build without the `torch` feature:
//! `Missing<Kind>` (see `missing/mod.rs`). The torch tier is not compiled.

use super::{Absent, Missing};
use crate::backend::Backend;

/// Names the absent torch backend.
#[derive(Debug)]
pub(crate) struct Kind;

impl Absent for Kind {
    const KIND: Backend = Backend::Torch;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    const REASON: &'static str =
        "unigpu was built without the `torch` feature (the torch tier is not in this build)";
}

/// The torch backend, absent from this build.
pub(crate) type Torch = Missing<Kind>;
