//! The CUDA backend: the driver API through `unigpu-cuda-safe`, NVRTC for
//! kernels, cuBLAS for matmul, NCCL for collectives (`comm.rs`).
//!
//! The contract is implemented beside each handle's code: `api.rs` names
//! the handle types, `device.rs` (`DeviceApi`), `stream.rs` (`StreamApi`,
//! `GraphApi`), `event.rs` (`EventApi`), `buffer.rs` (`BufferApi`,
//! `PinnedApi`), `kernel.rs` (`KernelApi`), `ops.rs` (`BuiltinOps`).

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
