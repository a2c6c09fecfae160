//! The CUDA backend: the driver API through `unigpu-cuda-safe`, NVRTC for
//! kernels, cuBLAS for matmul, NCCL for collectives (`comm.rs`).

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
