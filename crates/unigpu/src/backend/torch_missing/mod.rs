//! The stand-in for the torch backend in a build without the `torch`
//! feature: the same contract, with handle types that cannot exist. Opening
//! a device returns `BackendUnavailable`, so no handle is ever made and
//! every other call is unreachable by construction (a match on an empty
//! enum), as candle's dummy backends do it. The dispatch names `Torch`
//! either way and needs no `cfg`.

use unigpu_core::dlpack::ManagedTensor;

use super::code::{KernelRef, Program};
use super::contract::{BuiltinOps, LaunchArg};
use super::{Api, Backend};
use crate::device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
use crate::dlpack::sync::DlpackSync;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernel::options::CompileOptions;
use crate::kernel::signature::KernelDecl;
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::Grid;

/// The torch backend, absent from this build.
#[derive(Debug)]
pub(crate) struct Torch;

/// A torch handle in a build without torch: there are none.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Missing {}

fn unavailable() -> Error {
    Error::BackendUnavailable {
        backend: Backend::Torch,
        reason:
            "unigpu was built without the `torch` feature (the torch tier is not in this build)"
                .into(),
    }
}

impl Api for Torch {
    const KIND: Backend = Backend::Torch;
    type Device = Missing;
    type Stream = Missing;
    type Event = Missing;
    type Buffer<T: Element> = Missing;
    type Pinned<T: Element> = Missing;
    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];
    type Arg<'a> = Missing;

    fn device_count() -> Result<usize> {
        Err(unavailable())
    }
    fn open(_: usize) -> Result<Missing> {
        Err(unavailable())
    }
    fn info(d: &Missing) -> Result<DeviceInfo> {
        match *d {}
    }
    fn memory_info(d: &Missing) -> Result<MemoryInfo> {
        match *d {}
    }
    fn same_device(a: &Missing, _: &Missing) -> bool {
        match *a {}
    }
    fn memory_stats(d: &Missing) -> Result<MemoryStats> {
        match *d {}
    }
    fn empty_cache(d: &Missing) -> Result<usize> {
        match *d {}
    }
    fn synchronize(d: &Missing) -> Result<()> {
        match *d {}
    }
    fn default_stream(d: &Missing) -> Result<Missing> {
        match *d {}
    }
    fn new_stream(d: &Missing) -> Result<Missing> {
        match *d {}
    }
    fn stream_sync(s: &Missing) -> Result<()> {
        match *s {}
    }
    fn stream_is_idle(s: &Missing) -> Result<bool> {
        match *s {}
    }
    fn stream_wait(s: &Missing, _: &Missing) -> Result<()> {
        match *s {}
    }
    fn host_fn(s: &Missing, _: Box<dyn FnOnce() + Send>) -> Result<()> {
        match *s {}
    }
    fn native_stream(s: &Missing) -> Option<u64> {
        match *s {}
    }
    fn new_event(s: &Missing, _timed: bool) -> Result<Missing> {
        match *s {}
    }
    fn record(e: &Missing, _: &Missing) -> Result<()> {
        match *e {}
    }
    fn event_sync(e: &Missing) -> Result<()> {
        match *e {}
    }
    fn event_query(e: &Missing) -> Result<bool> {
        match *e {}
    }
    fn elapsed_ms(e: &Missing, _: &Missing) -> Result<f32> {
        match *e {}
    }
    type Graph = Missing;
    fn begin_capture(s: &Missing) -> Result<()> {
        match *s {}
    }
    fn end_capture(s: &Missing) -> Result<Missing> {
        match *s {}
    }
    fn is_capturing(s: &Missing) -> bool {
        match *s {}
    }
    fn graph_launch(g: &Missing, _: &Missing) -> Result<()> {
        match *g {}
    }
    fn graph_len(g: &Missing) -> usize {
        match *g {}
    }
    fn alloc<T: Element>(s: &Missing, _: usize) -> Result<Missing> {
        match *s {}
    }
    fn zeros<T: Element>(s: &Missing, _: usize) -> Result<Missing> {
        match *s {}
    }
    fn from_host<T: Element>(s: &Missing, _: &[T]) -> Result<Missing> {
        match *s {}
    }
    fn len<T: Element>(b: &Missing) -> usize {
        match *b {}
    }
    fn read<T: Element>(s: &Missing, _: &Missing, _: &mut [T]) -> Result<()> {
        match *s {}
    }
    fn write<T: Element>(s: &Missing, _: &mut Missing, _: &[T]) -> Result<()> {
        match *s {}
    }
    fn upload<T: Element>(s: &Missing, _: &[T], _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn download_into<T: Element>(s: &Missing, _: &Missing, _: &mut [T]) -> Result<()> {
        match *s {}
    }
    fn copy<T: Element>(s: &Missing, _: &Missing, _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn pinned<T: Element>(s: &Missing, _: usize) -> Result<Missing> {
        match *s {}
    }
    fn pinned_len<T: Element>(p: &Missing) -> usize {
        match *p {}
    }
    fn pinned_slice<T: Element>(p: &Missing) -> Result<&[T]> {
        match *p {}
    }
    fn pinned_slice_mut<T: Element>(p: &mut Missing) -> Result<&mut [T]> {
        match *p {}
    }
    fn upload_pinned<T: Element>(s: &Missing, _: &Missing, _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn download_pinned<T: Element>(s: &Missing, _: &Missing, _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn alloc_unified<T: Element>(s: &Missing, _: usize) -> Result<Missing> {
        match *s {}
    }
    fn is_unified<T: Element>(b: &Missing) -> bool {
        match *b {}
    }
    fn host_view<T: Element>(b: &Missing) -> Result<&[T]> {
        match *b {}
    }
    fn host_view_mut<T: Element>(b: &mut Missing) -> Result<&mut [T]> {
        match *b {}
    }
    fn prefetch<T: Element>(s: &Missing, _: &Missing, _: Location) -> Result<()> {
        match *s {}
    }
    fn to_dlpack<T: Element>(
        s: &Missing,
        _: &mut Missing,
        _: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        match *s {}
    }
    fn from_dlpack<T: Element>(s: &Missing, _: ManagedTensor) -> Result<Missing> {
        match *s {}
    }
    fn compile(d: &Missing, _: &str, _: &CompileOptions, _: &[KernelDecl]) -> Result<Program> {
        match *d {}
    }
    fn arg<T: Element>(b: &Missing) -> Missing {
        match *b {}
    }
    fn arg_mut<T: Element>(b: &mut Missing) -> Missing {
        match *b {}
    }
    fn launch<'a>(
        s: &Missing,
        _: KernelRef<'_>,
        _: Grid,
        _: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        match *s {}
    }
}

impl BuiltinOps for Torch {
    fn fill<T: Element>(s: &Missing, _: &mut Missing, _: T) -> Result<()> {
        match *s {}
    }
    fn binary<T: Float>(
        s: &Missing,
        _: Binary,
        _: &Missing,
        _: &Missing,
        _: &mut Missing,
    ) -> Result<()> {
        match *s {}
    }
    fn unary<T: Float>(s: &Missing, _: Unary, _: &Missing, _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn axpy<T: Float>(s: &Missing, _: T, _: &Missing, _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn scale<T: Float>(s: &Missing, _: T, _: &mut Missing) -> Result<()> {
        match *s {}
    }
    fn reduce<T: Float>(s: &Missing, _: Reduce, _: &Missing, _: Option<&Missing>) -> Result<T> {
        match *s {}
    }
    fn matmul<T: Float>(
        s: &Missing,
        _: &Missing,
        _: &Missing,
        _: &mut Missing,
        _: (usize, usize, usize),
    ) -> Result<()> {
        match *s {}
    }
}
