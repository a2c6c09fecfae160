//! The CUDA backend's handle types (`Handles`). The operations on each
//! handle are implemented in the file of its code (`mod.rs` lists them).

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
