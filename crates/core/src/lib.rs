//! The vocabulary every unigpu backend and front end shares, on no backend.
//!
//! - [`Element`] and [`DType`]: the element types an array holds, their
//!   sizes, names and DLPack type codes.
//! - [`Scalar`]: a plain value passed to a kernel, with its dtype.
//! - [`Grid`]: launch geometry as plain numbers.
//! - [`Layout`]: an array's shape, strides and offset in its buffer, and
//!   the views made from it (reshape, permute, slice, index, broadcast).
//! - [`dlpack`]: the DLPack C ABI structs ([`dlpack::ffi`]), the owned
//!   [`dlpack::ManagedTensor`], the descriptor validation
//!   ([`dlpack::TensorView`]), and host memory that is a `Vec` or borrowed
//!   from a DLPack producer ([`dlpack::HostArray`], the CPU backend's
//!   storage).
//! - [`image`]: the formats of precompiled CUDA code (PTX, CUBIN, fatbin)
//!   and their checks, made without a driver, so that any build can carry
//!   precompiled kernels and a backend that loads them trusts checked
//!   bytes only.
//! - [`ReduceOp`]: how a collective combines the ranks' elements.
//! - [`cells`]: a written host slice seen as relaxed atomic cells, for
//!   kernels the CPU backend runs in parallel.
//!
//! This crate depends on no backend (no CUDA, Vulkan or torch crate; `cargo
//! xtask layers` checks its manifest): the CUDA layer (`unigpu-cuda-safe`)
//! depends on it and implements its CUDA-side traits for these types, the
//! facade re-exports them, and the C API, Python package, CLI and fuzz
//! targets reach DLPack here. `unsafe` is allowed here, as below the
//! facade: each block says why it is sound in a `// SAFETY:` line.

pub mod cells;
pub mod dlpack;
mod element;
mod gemm;
mod grid;
pub mod image;
mod layout;
mod reduce;
mod scalar;

pub use element::{DType, Element, PerDtype};
pub use gemm::{GemmOperand, GemmShape};
pub use grid::Grid;
pub use layout::{
    IntoShape, Layout, ShapeError, broadcast_shapes, element_count, infer_shape, row_major_strides,
};
pub use reduce::ReduceOp;
pub use scalar::Scalar;

/// Re-exported for [`with_dtype!`], which names `half::f16` and
/// `half::bf16`, and so users need not depend on `half` to name them.
pub use half;
