//! The CUDA backend's handle types (`Handles`); the operations on each
//! handle are implemented beside its code: `device.rs` (`DeviceApi`),
//! `stream.rs` (`StreamApi`, `GraphApi`), `event.rs` (`EventApi`),
//! `buffer.rs` (`BufferApi`, `PinnedApi`), `kernel.rs` (`KernelApi`),
//! `ops.rs` (`BuiltinOps`).

use std::sync::Arc;

use unigpu_cuda_safe::{CudaEventHandle, CudaGraphHandle, DeviceBuffer, KernelParam};

use super::device::{Device, Stream};
use crate::backend::{Backend, Handles};
use crate::element::Element;

/// The CUDA backend: the driver API through `unigpu-cuda-safe`.
#[derive(Debug)]
pub(crate) struct Cuda;

impl Handles for Cuda {
    const KIND: Backend = Backend::Cuda;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    type Device = Arc<Device>;
    type Stream = Stream;
    type Event = CudaEventHandle;

    type Graph = CudaGraphHandle;

    type Buffer<T: Element> = DeviceBuffer<T>;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    type Arg<'a> = KernelParam<'a>;
}
