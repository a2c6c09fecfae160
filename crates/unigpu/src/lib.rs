//! unigpu: one safe API for GPU work, on CUDA when there is a GPU and on a
//! real CPU backend when there is not.
//!
//! ```no_run
//! use unigpu::Context;
//! # fn main() -> unigpu::Result<()> {
//! let ctx = Context::default()?;            // config/env, then torch, cuda, vulkan, cpu
//! let x = ctx.upload(&[1.0f32, 2.0, 3.0])?;
//! let mut y = ctx.zeros::<f32>(3)?;
//! x.copy_to(&mut y)?;
//! assert_eq!(y.download()?, vec![1.0, 2.0, 3.0]);
//! # Ok(())
//! # }
//! ```
//!
//! # Rules of this layer
//! - Safe Rust only (`#![forbid(unsafe_code)]`): everything unsafe lives in
//!   `unigpu-core` (DLPack, host arrays), `unigpu-cuda-safe` and the -sys
//!   crates below them.
//! - The vocabulary every backend shares (element types, scalars, grids,
//!   host arrays, DLPack) is `unigpu-core`'s, re-exported here
//!   ([`Element`], [`DType`], [`Scalar`], [`Grid`]).
//! - Every backend offers the same operations with the same ordering
//!   semantics; a backend that cannot do something returns an error that
//!   says so, never a panic.
//! - User input (sizes, ids, config values) is validated here and turned
//!   into a typed [`Error`] the caller can act on.
//! - Handles are reference counted: [`Context`], [`Stream`] are cheap to
//!   clone; arrays and events free their resources on `Drop`.
//!
//! # Layout
//! Three layers, and dependencies point down only, so that a backend can
//! be added without touching a public type (docs/adding-a-backend.md):
//! - Public types (`context.rs`, `array.rs`, `stream.rs`, `event.rs`,
//!   `any_array.rs`, `any_pinned.rs`, `pinned.rs`, `unified.rs`, `peers.rs`,
//!   `ops/`, `kernel/`, `dlpack/`, `pipeline/`, `comm/`, `config.rs`): validate input, then
//!   call the dispatch. They never name a backend.
//! - `backend::dispatch`: one enum per handle kind, one variant per
//!   backend; the only code that names the variants.
//! - `backend/<name>/` (`cpu`, `cuda`, `torch`, `vulkan`): each implements the
//!   per-handle traits of `backend/contract.rs` (`DeviceApi`, `StreamApi`,
//!   ..., together `Api`), whose doc comments are what every backend
//!   guarantees. A backend uses no public type and no other
//!   backend, only leaf value files (`element.rs`, `error.rs`, ...).
//!
//! `cargo xtask layers` checks this (docs/architecture.md).

#![forbid(unsafe_code)]

// The facade's own kernels (`strided.rs`, `random.rs`) are written with
// `#[unigpu::kernel]`, whose output names `::unigpu`.
extern crate self as unigpu;

mod any_array;
mod any_pinned;
mod array;
mod backend;
pub mod binding;
mod cast;
pub mod comm;
pub mod config;
mod context;
mod create;
mod device;
pub mod dlpack;
mod element;
mod error;
mod event;
mod fault_word;
mod graph;
pub mod kernel;
mod lock;
pub mod ops;
mod peers;
mod pinned;
pub mod pipeline;
pub mod random;
mod simd;
mod stream;
mod strided;
mod transfer;
mod unified;
mod view;

pub use any_array::{AnyArray, AnyView, AnyViewMut};
pub use any_pinned::AnyPinned;
pub use array::GpuArray;
pub use backend::{Backend, BackendAttempt, DeviceKind, Outcome};
pub use backend::{hardware_here, list_devices};
pub use comm::{Communicator, Meeting, ReduceOp, Rendezvous};
pub use config::{BackendChoice, Config, ConfigError, DeviceSpec};
pub use context::Context;
pub use device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
pub use dlpack::{DlpackSync, DlpackTensor};
pub use element::{DType, Element};
pub use error::{ArrayAccess, Error, Result};
pub use event::Event;
pub use graph::Graph;
pub use kernel::{Arg, CompileOptions, CpuArgs, Grid, Kernel, Module, Scalar};
pub use ops::{Float, Ops};
pub use peers::{DeviceList, PeerMatrix, device_list};
pub use pinned::PinnedBuffer;
pub use pipeline::{Pipeline, PipelineReport, Timeline};
pub use stream::Stream;
pub use unified::{HostView, HostViewMut};
pub use unigpu_core::{IntoShape, Layout, ShapeError, broadcast_shapes, infer_shape};
pub use view::{ArrayView, ArrayViewMut};

#[doc(hidden)]
pub use unigpu_kernel_macros::__kernel_with_helpers;
/// `#[unigpu::device]`: a helper function kernels may call (docs/kernels.md).
pub use unigpu_kernel_macros::device;
/// `#[unigpu::kernel]`: one Rust function as a kernel for every backend
/// (docs/kernels.md).
///
/// The typed launch takes the arrays as Rust borrows, so one array passed
/// as a `&mut` argument and as another argument is the borrow checker's
/// compile error, on every backend. This compiles:
///
/// ```
/// #[unigpu::kernel]
/// fn copy_into(a: &[f32], out: &mut [f32]) {
///     let i = global_id().x;
///     out[i] = a[i];
/// }
///
/// fn copy(ctx: &unigpu::Context, x: &unigpu::GpuArray<f32>, y: &mut unigpu::GpuArray<f32>) -> unigpu::Result<()> {
///     copy_into::kernel(ctx)?.launch(ctx, unigpu::Grid::for_elems(y.len()), (x, y))
/// }
/// ```
///
/// and the same launch with `x` as both arguments does not:
///
/// ```compile_fail,E0502
/// #[unigpu::kernel]
/// fn copy_into(a: &[f32], out: &mut [f32]) {
///     let i = global_id().x;
///     out[i] = a[i];
/// }
///
/// fn alias(ctx: &unigpu::Context, x: &mut unigpu::GpuArray<f32>) -> unigpu::Result<()> {
///     copy_into::kernel(ctx)?.launch(ctx, unigpu::Grid::for_elems(x.len()), (&*x, &mut *x))
/// }
/// ```
pub use unigpu_kernel_macros::kernel;

/// Re-exported so users need not depend on `half` to name the types.
pub use half::{bf16, f16};

/// What the CUDA probe found: whether libcuda and libnvrtc load, the
/// driver version and the device count, or why not. Never panics. (With
/// the `cuda` feature, on by default; without it the fallback chain says
/// the cuda backend is not in this build.)
#[cfg(feature = "cuda")]
pub fn cuda_probe() -> &'static unigpu_cuda_safe::Probe {
    unigpu_cuda_safe::probe()
}

#[cfg(feature = "cuda")]
pub use unigpu_cuda_safe::{LibraryStatus, Probe};
