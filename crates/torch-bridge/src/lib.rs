//! The c10 bridge of the torch tier, generated from `specs/torch.yaml` by
//! `cargo xtask gen`: c10 CUDA streams (pool, current, default), events with
//! timing, stream guards, tensors moved on a chosen stream, and DLPack in
//! and out, over libtorch.
//!
//! Everything is behind the `torch` feature, which needs libtorch
//! (`LIBTORCH`, or `LIBTORCH_USE_PYTORCH=1`; see docs/torch.md). Without it
//! this crate is empty.
//!
//! Layer contract (with `torch`):
//! - `generated::bridge` (tier 1): the `#[cxx::bridge]`. C++ exceptions,
//!   including "CUDA is not available" from bridge/torch/torch_support.h,
//!   arrive as `Err`; no CUDA call can abort the process.
//! - `generated::safe` (tier 3, re-exported): RAII handles; every call
//!   returns `Result`, never panics. No `unsafe`.
//! - `generated::capi` (tier 2): the C ABI declared in include/ug_torch.h.
//! - `Tensor::from_tch` / `Tensor::to_tch` (hand-written, over the spec's
//!   two `unsafe` entry points): tch tensors in and out, sharing storage.
//! - [`cuda_interop`] (hand-written): a c10 stream as a CUDA driver stream,
//!   and GPU-to-GPU copies between tensors and unigpu-cuda-safe buffers ordered
//!   on both sides' streams by events.
//! - `Tensor::to_managed` / `Tensor::from_managed` (hand-written): torch
//!   tensors as unigpu-core DLPack tensors, sharing memory both ways.

#[cfg(feature = "torch")]
pub mod cuda_interop;
#[cfg(feature = "torch")]
mod dlpack_interop;
#[cfg(feature = "torch")]
pub mod generated;
#[cfg(feature = "torch")]
mod tch_interop;

#[cfg(feature = "torch")]
pub use dlpack_interop::TensorExport;
#[cfg(feature = "torch")]
pub use generated::safe::*;
