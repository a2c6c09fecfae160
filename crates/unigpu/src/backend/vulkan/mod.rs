//! The Vulkan backend, through wgpu: AMD, Intel and NVIDIA GPUs (and Mesa's
//! lavapipe on the CPU), the link of the fallback chain between cuda and
//! cpu.
//!
//! - Devices: one wgpu device per adapter per process (`device.rs`),
//!   shared by the contexts on it; adapters are numbered hardware first
//!   (`adapters.rs`). The fallback chain passes over software adapters.
//! - Arrays: one wgpu storage buffer each, in whole 16-byte vectors
//!   (`buffer.rs`; wgpu buffers as such, their creation and mapping, in
//!   `wgpu_buffer.rs`). Every element type uploads, downloads and copies
//!   (from ordinary memory slot by slot through kept staging buffers,
//!   `transfer.rs`, `staging.rs`); the ops compute f32, f16 and bf16 (in
//!   f32) everywhere and f64 where the adapter has shader-f64
//!   (`shaders/`); DLPack and unified memory are refused with the reason.
//! - Streams: a worker thread each that records GPU work into command
//!   encoders and submits them to the device's one queue, and runs host
//!   functions and waits in order (`stream.rs`). Each buffer tracks its
//!   last writer and readers (`tracker.rs`): GPU work waits until the work
//!   it follows is submitted (the queue keeps order), the host until it is
//!   done (`fence.rs`); a poller thread per device runs wgpu's completion
//!   callbacks (`poller.rs`). wgpu's errors are caught on the thread that
//!   caused them by the backend itself, not with wgpu's error scopes,
//!   which stay behind a thread (`catch.rs`).
//! - Events: a fence in a stream's work; timed events also write a GPU
//!   timestamp where the adapter has timestamp queries (`event.rs`).
//! - Kernels: WGSL or SPIR-V read by naga, compiled once per device and
//!   launched with argument i at `@binding(i)` (`kernel.rs`), scalars in
//!   uniform buffers kept by their bytes for the next launch
//!   (`uniforms.rs`).
//! - Graphs: replayable work recorded from a capture and submitted again
//!   (`stream.rs`).
//!
//! The contract is implemented beside each handle's code, as wgpu-hal lays
//! a backend out: `api.rs` holds the marker type the traits are for (a
//! file that imports none of the others, so that each can name it), this
//! file the handle types (`impl Handles`, below), `open.rs`
//! (`DeviceApi`, on a context's handle of the shared device), `stream.rs`
//! (`StreamApi`, `GraphApi`), `event.rs` (`EventApi`), `buffer.rs`
//! (`BufferApi`, the shared `PinnedApi`), `kernel.rs` (`KernelApi`),
//! `ops.rs` (`BuiltinOps`).

mod adapters;
mod api;
mod block_on;
mod buffer;
mod catch;
mod device;
mod dispatch_geometry;
mod errors;
mod event;
mod fence;
mod fma_probe;
mod kernel;
mod open;
mod ops;
mod poller;
mod shader;
mod shaders;
mod spin;
mod staging;
mod stream;
mod tracker;
mod transfer;
mod uniforms;
mod wgpu_buffer;

pub(crate) use api::Vulkan;
pub(crate) use shader::ShaderKernel;

use std::sync::Arc;

use crate::backend::{Backend, Handles};
use crate::element::Element;
use buffer::VkBuffer;
use device::VkDevice;
use event::VkEvent;
use kernel::VkArg;
use open::VkOpen;
use stream::{Recorded, VkStream};

impl Handles for Vulkan {
    const KIND: Backend = Backend::Vulkan;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLVulkan;
    type Device = VkOpen;

    type Stream = Arc<VkStream>;
    type Event = Arc<VkEvent>;

    type Graph = (Arc<VkDevice>, Vec<Recorded>);

    type Buffer<T: Element> = VkBuffer<T>;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    type Arg<'a> = VkArg<'a>;
}
