//! The CPU backend's handle types (`Handles`). The operations on each
//! handle are implemented in the file of its code (`mod.rs` lists them).

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
