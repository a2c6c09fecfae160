//! The torch backend (feature `torch`): arrays are 1-D torch tensors on a
//! CUDA device, streams and events are c10's, and the built-in ops are
//! torch ops, all through the generated c10 bridge. The CUDA driver is
//! opened beside torch on the same GPU (torch uses its primary context),
//! for device queries, host callbacks on c10 streams and copies to and from
//! the cuda backend.
//!
//! The contract is implemented beside each handle's code, as wgpu-hal lays
//! a backend out: `api.rs` holds the marker type the traits are for (a
//! file that imports none of the others, so that each can name it), this
//! file the handle types (`impl Handles`, below), `device.rs`
//! (`DeviceApi`), `stream.rs` (`StreamApi`, `EventApi`), `graph.rs`
//! (`GraphApi`), `buffer.rs` (`BufferApi` with DLPack, the shared
//! `PinnedApi`), `kernel.rs` (`KernelApi`), `ops.rs` (`BuiltinOps`);
//! `comm.rs` hands tensors on c10 streams to the cuda backend's NCCL
//! communicator.
//! Streams, events and buffers refuse work while capturing through
//! `api.rs`'s `refuse`, which asks `GraphApi::is_capturing`: `graph.rs`
//! imports their files, so they cannot import it.

mod api;
mod buffer;
pub(crate) mod comm;
mod device;
mod graph;
mod kernel;
pub(crate) mod ops;
mod stream;
mod uses;

pub(crate) use buffer::TorchBuffer;
pub(crate) use device::TorchDevice;
pub(crate) use stream::{TorchEvent, TorchStream};

use unigpu_torch_bridge as bridge;

use crate::backend::Backend;
use crate::error::Error;

/// A C++ exception from torch, as the facade's error.
pub(crate) fn torch_error(e: bridge::Error) -> Error {
    Error::Torch {
        call: e.context().to_string(),
        message: e.message().to_string(),
    }
}

impl From<bridge::Error> for Error {
    fn from(e: bridge::Error) -> Self {
        torch_error(e)
    }
}

impl From<bridge::cuda_interop::InteropError> for Error {
    fn from(e: bridge::cuda_interop::InteropError) -> Self {
        use bridge::cuda_interop::InteropError as I;
        match e {
            I::Torch(e) => torch_error(e),
            I::Cuda(e) => Error::from(e).on_backend(Backend::Torch),
            I::Mismatch(what) => Error::Unsupported {
                backend: Backend::Torch,
                what,
            },
        }
    }
}

pub(crate) use api::{Torch, driver_error, refuse};

use std::sync::Arc;

use crate::backend::Handles;
use crate::element::Element;
use graph::TorchGraph;

impl Handles for Torch {
    const KIND: Backend = Backend::Torch;
    /// Torch tensors here are CUDA tensors.
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    type Device = TorchDevice;
    type Stream = Arc<TorchStream>;
    type Event = TorchEvent;

    /// The c10 stream captured by the driver; the graph keeps the tensors
    /// its work uses (`graph.rs`).
    type Graph = TorchGraph;

    type Buffer<T: Element> = TorchBuffer;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    /// The buffer and whether the kernel writes it.
    type Arg<'a> = (&'a TorchBuffer, bool);
}
