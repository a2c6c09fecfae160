//! The backends and the contract between them and the public types.
//!
//! - `contract.rs`: the contract, one trait per handle as wgpu-hal has it:
//!   `Handles` (every backend's handle types), `DeviceApi`, `StreamApi`,
//!   `EventApi`, `GraphApi`, `BufferApi`, `PinnedApi`, `KernelApi` (the
//!   operations on each, with the guarantee of each), `BuiltinOps`; `Api`
//!   is all of them, implemented once for every backend that has them.
//! - `device.rs`: `Device`, the one handle `Context` holds: the fallback
//!   chain's opening, the ordinal check, the capture-aware sync.
//! - `dispatch.rs`: the enums the public types hold (`DeviceImpl`,
//!   `StreamImpl`, `EventImpl`, `Storage<T>`, `ArgImpl`, `PinnedImpl`,
//!   `HostViewImpl`) and the calls from them to each backend's `Api`; the
//!   only file naming the variants.
//! - `cpu/`, `cuda/`, `torch/`, `vulkan/`: one backend each, with its own
//!   buffers, streams, events, ops, launch and DLPack. Each implements the
//!   contract's traits where the handle's code is, as wgpu-hal's backends
//!   do: `api.rs` holds the marker type (`Cpu`, ...), the backend's
//!   `mod.rs` its handle types (`impl Handles`), `device.rs`, `stream.rs`,
//!   `event.rs`, `graph.rs`, `buffer.rs`, `kernel.rs` (or the backend's
//!   file of that handle, as vulkan's `open.rs`) implement `DeviceApi` ...
//!   `KernelApi`, `ops.rs` `BuiltinOps`.
//! - `missing/`: the one stand-in, `Missing<K>`, for each backend built
//!   without its feature (`cuda`, `torch`, `vulkan`), so the dispatch needs
//!   no `cfg`.
//! - `nvrtc/`: CUDA C++ through NVRTC and its caches, and precompiled
//!   CUDA code; `cuda_device_info.rs`: the driver's view of a CUDA device.
//!   What cuda and torch share; not backends. Built with the `cuda`
//!   feature only.
//! - `host_pinned.rs`: the pinned buffer of backends without page-locked
//!   memory of their own (cpu, torch, vulkan), `host_pinned_api!`; not a
//!   backend.
//! - `inventory.rs`: what each backend finds on this machine
//!   (`hardware_here`, `list_devices`), through the dispatch; not a
//!   backend.
//! - `host_memory.rs`: host memory accounting (requests checked against the
//!   available memory) for the cpu backend and `host_pinned.rs`.
//! - `unified.rs`: what the backends share about unified memory; not a
//!   backend.
//! - `comm.rs`: communicators, from the public `Communicator` to the
//!   backends with collectives (cuda: `cuda/comm.rs`, NCCL).
//! - `code.rs`: the forms of kernel code; `interop.rs`: cuda <-> torch moves;
//!   `kind.rs`: the public `Backend` and `Backend::ALL`; `device_kind.rs`:
//!   the public `DeviceKind`, the hardware a backend drives.
//!
//! Backends use neither the public types nor each other (`cargo xtask
//! layers`); docs/adding-a-backend.md lists what a new one adds.

mod code;
mod comm;
mod contract;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
#[cfg(not(feature = "cuda"))]
pub(crate) use missing::cuda;
#[cfg(feature = "cuda")]
mod cuda_device_info;
mod device;
mod device_kind;
mod dispatch;
mod host_memory;
mod host_pinned;
#[cfg(feature = "torch")]
mod interop;
mod inventory;
mod kind;
mod listed_enum;
#[cfg(any(not(feature = "cuda"), not(feature = "torch"), not(feature = "vulkan")))]
mod missing;
#[cfg(feature = "cuda")]
mod nvrtc;
#[cfg(feature = "torch")]
pub(crate) mod torch;
#[cfg(not(feature = "torch"))]
pub(crate) use missing::torch;
mod unified;
#[cfg(feature = "vulkan")]
pub(crate) mod vulkan;
#[cfg(not(feature = "vulkan"))]
pub(crate) use missing::vulkan;

pub(crate) use code::{KernelCode, KernelRef, Lookup, ModuleCode, ShaderSource};
pub(crate) use comm::{CommImpl, P2pImpl, PartImpl};
pub(crate) use contract::{
    Api, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, PinnedApi, StreamApi,
};
pub use cpu::{CpuArgKind, CpuArgs, CpuBytes, CpuBytesMut, CpuKernelFn};
pub(crate) use device::Device;
pub use device_kind::DeviceKind;
pub(crate) use dispatch::{
    ArgImpl, DeviceImpl, EventImpl, GraphImpl, HostViewImpl, HostViewMutImpl, PinnedImpl, Storage,
    StreamImpl, can_access_peer, dlpack_device_type, shader_kernel,
};
pub use inventory::{hardware_here, list_devices};
pub use kind::{Backend, BackendAttempt, Outcome};
#[cfg(feature = "cuda")]
pub use nvrtc::cache::{CACHE_DIR_ENV, disk_dir};
