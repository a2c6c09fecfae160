//! The one stand-in for every backend built without its feature
//! (`cuda`, `torch`, `vulkan`): `Missing<K>`, `K` naming the backend, keeps
//! the same contract with handle types that cannot exist. Opening a device
//! returns `BackendUnavailable` ("built without the `X` feature"), so no
//! handle is ever made and every other call is unreachable by construction
//! (a match on the empty `Never`), as candle's dummy backends do it. The
//! dispatch names `Cuda`, `Torch` and `Vulkan` either way and needs no
//! `cfg`: `cuda.rs`, `torch.rs` and `vulkan.rs` here give each absent
//! backend its name, its reason, and what else of it the facade reaches
//! (cuda's kernel code and communicator, torch's collectives, vulkan's
//! shader kernels).

use std::fmt::Debug;
use std::marker::PhantomData;

use unigpu_core::dlpack::ManagedTensor;

use super::code::{KernelCode, KernelRef, Program, ShaderSource};
use super::contract::{BuiltinOps, LaunchArg};
use super::{
    Backend, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, PinnedApi, StreamApi,
};
use crate::device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
use crate::dlpack::sync::DlpackSync;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::options::CompileOptions;
use crate::kernel::signature::KernelDecl;
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::GemmShape;
use unigpu_core::Grid;

#[cfg(not(feature = "cuda"))]
pub(crate) mod cuda;
#[cfg(not(feature = "torch"))]
pub(crate) mod torch;
#[cfg(not(feature = "vulkan"))]
pub(crate) mod vulkan;

/// Which backend a `Missing<K>` stands in for, and why it is absent.
pub(crate) trait Absent: Debug + Send + Sync + 'static {
    const KIND: Backend;
    /// As the backend's own `Api::DLPACK_DEVICE_TYPE` (`dlpack_device`
    /// names a backend's device whether it is built or not).
    const DLPACK_DEVICE_TYPE: i32;
    /// The reason `BackendUnavailable` gives: the feature the build lacks.
    const REASON: &'static str;
    /// As the backend's own `Api::shader_kernel`; by default `Unsupported`
    /// (the contract's default).
    fn shader_kernel(
        name: &str,
        source: ShaderSource<'_>,
        word_arrays: &[(usize, DType)],
    ) -> Result<KernelCode> {
        let _ = (name, source, word_arrays);
        Err(Error::Unsupported {
            backend: Self::KIND,
            what: "compute shaders (WGSL, SPIR-V): they run on the vulkan backend".into(),
        })
    }
}

/// Backend `K`, absent from this build. Never made: only its `Api` is used.
#[derive(Debug)]
pub(crate) struct Missing<K>(PhantomData<K>);

/// A handle of a backend absent from this build: there are none.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Never {}

/// The error of a call on a handle that cannot exist (the communicator's,
/// in the real cuda backend NCCL's error).
impl From<Never> for Error {
    fn from(n: Never) -> Error {
        match n {}
    }
}

/// Why backend `K` cannot be used.
pub(crate) fn unavailable<K: Absent>() -> Error {
    Error::BackendUnavailable {
        backend: K::KIND,
        reason: K::REASON.into(),
    }
}

impl<K: Absent> Handles for Missing<K> {
    const KIND: Backend = K::KIND;
    const DLPACK_DEVICE_TYPE: i32 = K::DLPACK_DEVICE_TYPE;
    type Device = Never;
    type Stream = Never;
    type Event = Never;
    type Buffer<T: Element> = Never;
    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];
    type Arg<'a> = Never;
    type Graph = Never;
}

impl<K: Absent> DeviceApi for Missing<K> {
    fn device_count() -> Result<usize> {
        Err(unavailable::<K>())
    }
    fn open(_: usize) -> Result<Never> {
        Err(unavailable::<K>())
    }
    fn info(d: &Never) -> Result<DeviceInfo> {
        match *d {}
    }
    fn memory_info(d: &Never) -> Result<MemoryInfo> {
        match *d {}
    }
    fn same_device(a: &Never, _: &Never) -> bool {
        match *a {}
    }
    fn memory_stats(d: &Never) -> Result<MemoryStats> {
        match *d {}
    }
    fn empty_cache(d: &Never) -> Result<usize> {
        match *d {}
    }
    fn synchronize(d: &Never) -> Result<()> {
        match *d {}
    }
    fn default_stream(d: &Never) -> Result<Never> {
        match *d {}
    }
    fn new_stream(d: &Never) -> Result<Never> {
        match *d {}
    }
}

impl<K: Absent> StreamApi for Missing<K> {
    fn stream_sync(s: &Never) -> Result<()> {
        match *s {}
    }
    fn stream_is_idle(s: &Never) -> Result<bool> {
        match *s {}
    }
    fn stream_wait(s: &Never, _: &Never) -> Result<()> {
        match *s {}
    }
    fn host_fn(s: &Never, _: Box<dyn FnOnce() + Send>) -> Result<()> {
        match *s {}
    }
    fn native_stream(s: &Never) -> Option<u64> {
        match *s {}
    }
}

impl<K: Absent> EventApi for Missing<K> {
    fn new_event(s: &Never, _timed: bool) -> Result<Never> {
        match *s {}
    }
    fn record(e: &Never, _: &Never) -> Result<()> {
        match *e {}
    }
    fn event_sync(e: &Never) -> Result<()> {
        match *e {}
    }
    fn event_query(e: &Never) -> Result<bool> {
        match *e {}
    }
    fn elapsed_ms(e: &Never, _: &Never) -> Result<f32> {
        match *e {}
    }
}

impl<K: Absent> GraphApi for Missing<K> {
    fn begin_capture(s: &Never) -> Result<()> {
        match *s {}
    }
    fn end_capture(s: &Never) -> Result<Never> {
        match *s {}
    }
    fn is_capturing(s: &Never) -> bool {
        match *s {}
    }
    fn graph_launch(g: &Never, _: &Never) -> Result<()> {
        match *g {}
    }
    fn graph_len(g: &Never) -> usize {
        match *g {}
    }
}

impl<K: Absent> BufferApi for Missing<K> {
    fn alloc<T: Element>(s: &Never, _: usize) -> Result<Never> {
        match *s {}
    }
    fn zeros<T: Element>(s: &Never, _: usize) -> Result<Never> {
        match *s {}
    }
    fn from_host<T: Element>(s: &Never, _: &[T]) -> Result<Never> {
        match *s {}
    }
    fn len<T: Element>(b: &Never) -> usize {
        match *b {}
    }
    fn read<T: Element>(s: &Never, _: &Never, _: &mut [T]) -> Result<()> {
        match *s {}
    }
    fn write<T: Element>(s: &Never, _: &mut Never, _: &[T]) -> Result<()> {
        match *s {}
    }
    fn upload<T: Element>(s: &Never, _: &[T], _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn download_into<T: Element>(s: &Never, _: &Never, _: &mut [T]) -> Result<()> {
        match *s {}
    }
    fn copy<T: Element>(s: &Never, _: &Never, _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn alloc_unified<T: Element>(s: &Never, _: usize) -> Result<Never> {
        match *s {}
    }
    fn is_unified<T: Element>(b: &Never) -> bool {
        match *b {}
    }
    fn host_view<T: Element>(b: &Never) -> Result<&[T]> {
        match *b {}
    }
    fn host_view_mut<T: Element>(b: &mut Never) -> Result<&mut [T]> {
        match *b {}
    }
    fn prefetch<T: Element>(s: &Never, _: &Never, _: Location) -> Result<()> {
        match *s {}
    }
    fn to_dlpack<T: Element>(s: &Never, _: &mut Never, _: DlpackSync<'_>) -> Result<ManagedTensor> {
        match *s {}
    }
    fn from_dlpack<T: Element>(s: &Never, _: ManagedTensor) -> Result<Never> {
        match *s {}
    }
}

impl<K: Absent> PinnedApi for Missing<K> {
    type Pinned<T: Element> = Never;
    fn pinned<T: Element>(s: &Never, _: usize) -> Result<Never> {
        match *s {}
    }
    fn pinned_len<T: Element>(p: &Never) -> usize {
        match *p {}
    }
    fn pinned_slice<T: Element>(p: &Never) -> Result<&[T]> {
        match *p {}
    }
    fn pinned_slice_mut<T: Element>(p: &mut Never) -> Result<&mut [T]> {
        match *p {}
    }
    fn upload_pinned<T: Element>(s: &Never, _: &Never, _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn download_pinned<T: Element>(s: &Never, _: &Never, _: &mut Never) -> Result<()> {
        match *s {}
    }
}

impl<K: Absent> KernelApi for Missing<K> {
    fn compile(d: &Never, _: &str, _: &CompileOptions, _: &[KernelDecl]) -> Result<Program> {
        match *d {}
    }
    fn shader_kernel(
        name: &str,
        source: ShaderSource<'_>,
        word_arrays: &[(usize, DType)],
    ) -> Result<KernelCode> {
        K::shader_kernel(name, source, word_arrays)
    }
    fn arg<T: Element>(b: &Never) -> Never {
        match *b {}
    }
    fn arg_mut<T: Element>(b: &mut Never) -> Never {
        match *b {}
    }
    fn launch<'a>(
        s: &Never,
        _: KernelRef<'_>,
        _: Grid,
        _: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        match *s {}
    }
}

impl<K: Absent> BuiltinOps for Missing<K> {
    fn fill<T: Element>(s: &Never, _: &mut Never, _: T) -> Result<()> {
        match *s {}
    }
    fn binary<T: Float>(s: &Never, _: Binary, _: &Never, _: &Never, _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn unary<T: Float>(s: &Never, _: Unary, _: &Never, _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn axpy<T: Float>(s: &Never, _: T, _: &Never, _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn scale<T: Float>(s: &Never, _: T, _: &mut Never) -> Result<()> {
        match *s {}
    }
    fn reduce<T: Float>(s: &Never, _: Reduce, _: &Never, _: Option<&Never>) -> Result<T> {
        match *s {}
    }
    fn matmul<T: Float>(
        s: &Never,
        _: &Never,
        _: &Never,
        _: &mut Never,
        _: &GemmShape,
    ) -> Result<()> {
        match *s {}
    }
}
