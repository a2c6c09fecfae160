//! The CUDA backend: the driver API through `unigpu-cuda-safe`, NVRTC for
//! kernels, cuBLAS for matmul, NCCL for collectives (`comm.rs`).

mod api;
pub(crate) mod code;
pub(crate) mod comm;
pub(crate) mod device;
pub(crate) mod ops;
pub(crate) mod ops_src;

pub(crate) use api::Cuda;
