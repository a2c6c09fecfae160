//! Owned, RAII handles over the CUDA driver for unigpu.
//!
//! # Rules of this layer
//! - Every handle frees what it owns on `Drop`. Errors raised while freeing
//!   cannot be returned from `Drop`; they are kept in the device's error slot
//!   and returned by the next [`CudaDevice::check_err`] (the facade's `sync`).
//! - Every handle keeps an `Arc` of the context it lives in, so a buffer,
//!   stream or event never outlives its device.
//! - Nothing here touches the driver before `unigpu_cuda_sys::probe()` has
//!   said it loads: a machine without CUDA gets [`SafeError::Unavailable`],
//!   never a panic.
//! - `unsafe` is allowed here and in the -sys crates only. Each block says
//!   why it is sound in a `// SAFETY:` line. The API this crate exports is
//!   safe, except the few `unsafe fn`s that take memory or streams owned by
//!   another library by raw handle ([`ForeignStream::from_raw`],
//!   [`DeviceBuffer::copy_to_raw`], [`DeviceBuffer::copy_from_raw`]); the
//!   bridge crate that knows the owner calls them and states why it may.
//! - Send and Sync are decided per type, in the type's docs.
//!
//! - Device memory comes from the device's caching allocator (`alloc/`),
//!   never straight from the driver (managed memory, `buffer/managed.rs`,
//!   is the one exception: it is never cached); a buffer orders its uses across
//!   streams itself (`uses.rs`), lazily, so that work on one stream makes
//!   no event calls. Events come from a per-device pool (`event_pool.rs`).
//! - A graph keeps the memory its captured work uses until it is dropped
//!   (`graph.rs`); host transfers, host functions and event records are
//!   refused on a capturing stream, since a replay could not honour them.
//! - Two devices: `peer.rs` copies between them, directly where peer
//!   access exists (enabled once per pair), else staged through
//!   page-locked host memory. `nccl/` holds NCCL communicators and
//!   collectives, whose every wait has a deadline, and whose `Drop` never
//!   panics (libnccl is loaded by `unigpu-cuda-sys`, never by cudarc).
//! - `unigpu-core`'s `image` checks precompiled code (PTX, a CUBIN, a fatbin) before
//!   `cuModuleLoadData` reads it ([`CudaModuleHandle::load_image`]): the
//!   driver trusts an image's own headers and reads what it does not
//!   recognise as PTX up to a NUL byte.
//! - `floor` (feature `bench-floor`, which only the CLI turns on) holds the
//!   bare driver calls benchmarks compare this crate's calls with in the
//!   same process: benchmark support, not part of the stable API.
//!
//! Contexts, streams, events and modules are cudarc's `driver::safe` types,
//! which already own their resources; this crate adds the probe gate, typed
//! errors (out of memory with the free byte count, invalid device ids),
//! host callbacks on streams, stream queries, device properties, the
//! allocator, and staged transfers from pageable memory (`staging.rs`).

mod alloc;
mod blas;
mod buffer;
mod device;
mod error;
mod event;
mod event_pool;
#[cfg(feature = "bench-floor")]
pub mod floor;
mod foreign;
mod graph;
mod host_memory;
mod kernel;
mod launch_limits;
pub mod nccl;
pub mod nvrtc;
mod peer;
mod pinned;
mod staging;
mod stream;
mod uses;

pub use alloc::AllocatorStats;
pub use blas::{BlasHandle, GemmElement};
pub use buffer::{DeviceBuffer, ManagedLocation};
pub use device::{CudaDevice, DeviceProperties, device_count};
pub use error::{Result, SafeError};
pub use event::CudaEventHandle;
pub use foreign::ForeignStream;
pub use graph::{CudaGraphHandle, ForeignGraph};
pub use kernel::{
    BufferArg, CudaFunctionHandle, CudaModuleHandle, KernelParam, LaunchDims, launch, launch_dims,
};
pub use launch_limits::LaunchLimits;
pub use peer::{PeerPath, can_access_peer};
pub use pinned::PinnedBuffer;
pub use stream::CudaStreamHandle;
#[doc(hidden)]
pub use uses::UseEnd;

/// The element types a [`DeviceBuffer`] holds: `unigpu-core`'s, which
/// every backend shares (this layer adds its CUDA-side traits for them:
/// [`KernelParam`] from a [`unigpu_core::Scalar`], [`GemmElement`], the
/// NCCL data types).
pub use unigpu_core::Element;
/// DLPack lives in `unigpu-core`; this layer imports device tensors
/// (`DeviceBuffer::from_dlpack`) and exports its buffers through it.
pub(crate) use unigpu_core::dlpack;
/// The formats of precompiled code, checked without a driver in
/// `unigpu-core`; [`CudaModuleHandle::load_image`] checks before loading.
pub(crate) use unigpu_core::image;

/// The probe of the layer below, re-exported so the facade needs no direct
/// dependency on the -sys crate.
pub use unigpu_cuda_sys::probe::{LibraryStatus, Probe, probe};
