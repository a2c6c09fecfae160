//! Kernels: CUDA C++ compiled at run time by NVRTC (cached in memory and on
//! disk), or precompiled code (PTX, CUBIN, fatbin) loaded as it is,
//! launched with typed, checked arguments; on the CPU backend, the Rust
//! implementation a kernel carries runs instead, and on the vulkan backend
//! its WGSL or SPIR-V.

pub(crate) mod args;
mod bounds;
mod comments;
mod compile;
#[doc(hidden)]
pub mod generated;
mod launch;
mod module;
mod names;
pub(crate) mod options;
mod precompiled;
mod precompiled_params;
mod ptx;
pub(crate) mod signature;

pub use crate::backend::{CpuArgKind, CpuBytes, CpuBytesMut};
pub use args::{Arg, ArrayArg, KernelArg, KernelArgs};
pub use options::{CompileOptions, ImageFormat, Origin};
pub use precompiled::CudaImage;
pub use ptx::parse_ptx;
pub use signature::{KernelDecl, ParamKind, parse_kernels};
pub use unigpu_core::{Grid, Scalar};

pub use crate::backend::{CpuArgs, CpuKernelFn};
pub(crate) use bounds::error as out_of_bounds;
pub(crate) use module::ModuleInner;
pub use module::{Kernel, Module};
pub(crate) use names::name_of;

/// The compiled-kernel caches' folder (CUDA kernels: the `cuda` feature).
#[cfg(feature = "cuda")]
pub mod cache {
    pub use crate::backend::{CACHE_DIR_ENV, disk_dir};
}
#[cfg(feature = "cuda")]
pub use cache::{CACHE_DIR_ENV, disk_dir};
