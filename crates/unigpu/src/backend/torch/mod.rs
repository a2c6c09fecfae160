//! The torch backend (feature `torch`): arrays are 1-D torch tensors on a
//! CUDA device, streams and events are c10's, and the built-in ops are
//! torch ops, all through the generated c10 bridge. The CUDA driver is
//! opened beside torch on the same GPU (torch uses its primary context),
//! for device queries, host callbacks on c10 streams and copies to and from
//! the cuda backend.
//!
//! The contract is implemented beside each handle's code: `api.rs` names
//! the handle types, `device.rs` (`DeviceApi`), `stream.rs` (`StreamApi`,
//! `EventApi`), `graph.rs` (`GraphApi`), `buffer.rs` (`BufferApi`, the
//! shared `PinnedApi`), `kernel.rs` (`KernelApi`), `ops.rs` (`BuiltinOps`).

mod api;
mod buffer;
mod device;
mod dlpack;
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

/// A driver error met through a torch context, said of torch.
pub(crate) fn driver_error(e: unigpu_cuda_safe::SafeError) -> Error {
    Error::from(e).on_backend(Backend::Torch)
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

pub(crate) use api::Torch;
