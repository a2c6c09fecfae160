//! The direct CUDA runtime tier, generated from `specs/cuda_rt.yaml` by
//! `cargo xtask gen`: `ug_cuda_rt_*` C functions, a cxx bridge, and safe RAII
//! wrappers over libcudart (device count, malloc/free, H2D/D2H copies,
//! streams).
//!
//! Everything is behind the `cuda` feature, which needs the CUDA runtime
//! headers and libcudart at build time (`UNIGPU_CUDA_HOME`, see
//! docs/generator.md). Without the feature this crate is empty, so the
//! workspace builds on machines without CUDA.
//!
//! Layer contract (with `cuda`):
//! - `generated::bridge` (tier 1): the `#[cxx::bridge]`; CUDA errors are
//!   thrown as C++ exceptions by bridge/cuda_rt/cuda_rt_support.h and arrive as `Err`.
//! - `generated::safe` (tier 3, re-exported): `DeviceBuffer` (cudaFree on
//!   drop) and `CudaStream` (cudaStreamDestroy on drop); every call returns
//!   `Result<_, Error>`, never panics. No `unsafe`.
//! - `generated::capi` (tier 2): the C ABI declared in include/ug_cuda_rt.h.

#[cfg(feature = "cuda")]
pub mod generated;

#[cfg(feature = "cuda")]
pub use generated::safe::*;
