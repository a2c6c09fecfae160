//! The CUDA backend: the driver API through `unigpu-cuda-safe`, NVRTC for
//! kernels, cuBLAS for matmul.

mod api;
pub(crate) mod device;
pub(crate) mod ops;
pub(crate) mod ops_src;

pub(crate) use api::Cuda;
