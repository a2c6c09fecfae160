//! The CPU backend's handle types (`Handles`); the operations on each
//! handle are implemented beside its code: `device.rs` (`DeviceApi`),
//! `stream.rs` (`StreamApi`, `GraphApi`), `event.rs` (`EventApi`),
//! `buffer.rs` (`BufferApi`), `args.rs` (`KernelApi`), `ops.rs`
//! (`BuiltinOps`); the pinned buffers are `host_pinned.rs`'s.

use std::sync::Arc;

use super::args::CpuArg;
use super::{CpuBuffer, CpuDevice, CpuEvent, CpuStream, Recorded};
use crate::Element;
use crate::backend::{Backend, Handles};
use unigpu_core::dlpack::{HostRead, HostWrite};

/// The CPU backend: host memory, one worker thread per stream.
#[derive(Debug)]
pub(crate) struct Cpu;

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
