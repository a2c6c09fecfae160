//! The cuda backend in a build without the `cuda` feature: `Missing<Kind>`
//! (see `missing/mod.rs`), and the stand-ins of what else of cuda the
//! facade reaches, its kernel code (`code.rs`) and its communicator. No
//! CUDA crate is compiled. Kernels may still carry CUDA C++ source (it is
//! kept, never compiled) and precompiled images (checked by `unigpu-core`,
//! never loaded).

use super::{Absent, Missing};
use crate::backend::Backend;

pub(crate) mod code;

/// Names the absent cuda backend.
#[derive(Debug)]
pub(crate) struct Kind;

impl Absent for Kind {
    const KIND: Backend = Backend::Cuda;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    const REASON: &'static str =
        "unigpu was built without the `cuda` feature (no CUDA crate is in this build)";
}

/// The cuda backend, absent from this build.
pub(crate) type Cuda = Missing<Kind>;

/// The communicator of a build without cuda (NCCL): none can be made.
pub(crate) mod comm {
    use std::marker::PhantomData;
    use std::time::Duration;

    use unigpu_core::ReduceOp;

    use super::Kind;
    use crate::backend::missing::{Never, unavailable};
    use crate::element::Element;
    use crate::error::Result;

    /// A communicator: there are none.
    #[derive(Debug)]
    pub(crate) enum Comm {}

    /// A rank's share of a collective: there are none.
    pub(crate) struct Part<'a, T>(Never, PhantomData<&'a mut T>);

    /// A send or receive: there are none.
    pub(crate) struct P2p<'a, T>(Never, PhantomData<&'a mut T>);

    /// A torch rank's share of a collective: there are none (torch needs
    /// cuda).
    pub(crate) struct ForeignPart<'a, T>(Never, PhantomData<&'a mut T>);

    /// A torch rank's send or receive: there are none.
    pub(crate) struct ForeignP2p<'a, T>(Never, PhantomData<&'a mut T>);

    pub(crate) fn library() -> Result<String> {
        Err(unavailable::<Kind>())
    }

    pub(crate) fn new_id() -> Result<[u8; 128]> {
        Err(unavailable::<Kind>())
    }

    pub(crate) fn driver(device: &Never) -> &Never {
        device
    }

    pub(crate) fn init(
        devices: &[&Never],
        _: &[u8; 128],
        _: usize,
        _: usize,
        _: Duration,
    ) -> Result<Comm> {
        match devices.first() {
            Some(d) => match **d {},
            None => Err(unavailable::<Kind>()),
        }
    }

    pub(crate) fn part<'a, T: Element>(
        stream: &'a Never,
        _: Option<&'a Never>,
        _: &'a mut Never,
    ) -> Part<'a, T> {
        match *stream {}
    }

    pub(crate) fn send<'a, T: Element>(
        _: usize,
        stream: &'a Never,
        _: &'a Never,
        _: usize,
    ) -> P2p<'a, T> {
        match *stream {}
    }

    pub(crate) fn recv<'a, T: Element>(
        _: usize,
        stream: &'a Never,
        _: &'a mut Never,
        _: usize,
    ) -> P2p<'a, T> {
        match *stream {}
    }

    impl Comm {
        pub(crate) fn all_reduce<P>(
            &self,
            _: &mut [P],
            _: ReduceOp,
        ) -> std::result::Result<(), Never> {
            match *self {}
        }
        pub(crate) fn broadcast<P>(&self, _: &mut [P], _: usize) -> std::result::Result<(), Never> {
            match *self {}
        }
        pub(crate) fn all_gather<P>(&self, _: &mut [P]) -> std::result::Result<(), Never> {
            match *self {}
        }
        pub(crate) fn reduce_scatter<P>(
            &self,
            _: &mut [P],
            _: ReduceOp,
        ) -> std::result::Result<(), Never> {
            match *self {}
        }
        pub(crate) fn send_recv<P>(&self, _: &mut [P]) -> std::result::Result<(), Never> {
            match *self {}
        }
        pub(crate) fn wait(&self, _: Duration) -> std::result::Result<(), Never> {
            match *self {}
        }
        pub(crate) fn abort(&self) {
            match *self {}
        }
        pub(crate) fn blocking_collectives(&self) -> bool {
            match *self {}
        }
    }
}
