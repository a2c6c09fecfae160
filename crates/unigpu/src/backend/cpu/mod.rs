//! The CPU backend: a real backend, not a stub. Arrays live in host memory,
//! each stream is a worker thread with an ordered queue, events are fences
//! the streams signal, and buffers track their pending uses so work on
//! different streams is ordered the way CUDA orders it.
//!
//! The contract is implemented beside each handle's code, as wgpu-hal lays
//! a backend out: `api.rs` holds the marker type the traits are for (a
//! file that imports none of the others, so that each can name it), this
//! file the handle types (`impl Handles`, below), `device.rs`
//! (`DeviceApi`), `stream.rs` (`StreamApi`), `event.rs` (`EventApi`),
//! `graph.rs` (`GraphApi`), `buffer.rs` (`BufferApi`, the shared
//! `PinnedApi`), `kernel.rs` (`KernelApi`), `ops.rs` (`BuiltinOps`).

mod api;
mod args;
mod buffer;
mod bytes;
mod device;
mod event;
mod fence;
mod graph;
mod kernel;
pub(crate) mod memory;
pub(crate) mod ops;
mod staging;
mod stream;
mod tracker;

pub(crate) use buffer::{CpuBuffer, check_distinct, replay, submit, submit_replayable};
pub(crate) use device::CpuDevice;
pub(crate) use event::CpuEvent;
pub(crate) use stream::{CpuStream, Recorded, panic_message};

pub(crate) use api::Cpu;
pub use args::{CpuArgs, CpuKernelFn};
pub use bytes::{CpuArgKind, CpuBytes, CpuBytesMut};

use std::sync::Arc;

use crate::Element;
use crate::backend::{Backend, Handles};
use args::CpuArg;
use unigpu_core::dlpack::{HostRead, HostWrite};

impl Handles for Cpu {
    const KIND: Backend = Backend::Cpu;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCPU;
    type Device = CpuDevice;
    type Stream = Arc<CpuStream>;
    type Event = Arc<CpuEvent>;

    type Graph = Vec<Recorded>;

    type Buffer<T: Element> = CpuBuffer<T>;

    type HostView<'a, T: Element> = HostRead<'a, T>;
    type HostViewMut<'a, T: Element> = HostWrite<'a, T>;

    type Arg<'a> = CpuArg;
}
