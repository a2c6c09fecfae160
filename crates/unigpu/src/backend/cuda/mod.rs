//! The CUDA backend: the driver API through `unigpu-cuda-safe`, NVRTC for
//! kernels, cuBLAS for matmul.

pub(crate) mod ops;
pub(crate) mod ops_src;
