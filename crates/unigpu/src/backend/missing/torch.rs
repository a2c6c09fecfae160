//! The torch backend in a build without the `torch` feature:
//! `Missing<Kind>` (see `missing/mod.rs`), and the stand-in of its
//! collectives (`comm`). The torch tier is not compiled.

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

/// Collectives on torch contexts, in a build without torch: no torch
/// handle exists, so each function is unreachable by construction (its
/// return type is whatever the caller's cuda tier needs).
pub(crate) mod comm {
    use super::Kind;
    use crate::backend::missing::{Never, unavailable};
    use crate::error::Result;

    /// Why torch contexts have no collectives in this build.
    pub(crate) fn usable() -> Result<()> {
        Err(unavailable::<Kind>())
    }

    pub(crate) fn driver<D>(device: &Never) -> D {
        match *device {}
    }

    pub(crate) fn part<P>(stream: &Never, _: Option<&Never>, _: &mut Never) -> Result<P> {
        match *stream {}
    }

    pub(crate) fn send<P>(_: usize, stream: &Never, _: &Never, _: usize) -> Result<P> {
        match *stream {}
    }

    pub(crate) fn recv<P>(_: usize, stream: &Never, _: &mut Never, _: usize) -> Result<P> {
        match *stream {}
    }
}
