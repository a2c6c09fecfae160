//! The CUDA backend: the driver API through `unigpu-cuda-safe`, NVRTC for
//! kernels, cuBLAS for matmul, NCCL for collectives (`comm.rs`).
//!
//! The contract is implemented beside each handle's code, as wgpu-hal lays
//! a backend out: `api.rs` holds the marker type the traits are for (a
//! file that imports none of the others, so that each can name it), this
//! file the handle types (`impl Handles`, below), `device.rs`
//! (`DeviceApi`), `stream.rs` (`StreamApi`, `GraphApi`), `event.rs`
//! (`EventApi`), `buffer.rs` (`BufferApi`, `PinnedApi`), `kernel.rs`
//! (`KernelApi`), `ops.rs` (`BuiltinOps`).

mod api;
mod buffer;
pub(crate) mod code;
pub(crate) mod comm;
pub(crate) mod device;
mod event;
mod kernel;
pub(crate) mod ops;
pub(crate) mod ops_src;
mod stream;

pub(crate) use api::Cuda;

use std::sync::Arc;

use unigpu_cuda_safe::{CudaEventHandle, CudaGraphHandle, DeviceBuffer, KernelParam};

use crate::backend::{Backend, Handles};
use crate::element::Element;
use device::{Device, Stream};

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
