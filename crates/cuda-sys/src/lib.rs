//! Raw CUDA bindings for unigpu: the lowest layer.
//!
//! # Rules of this layer
//! - The bindings are cudarc's `sys` and `result` modules, built with
//!   `dynamic-loading`: nothing links against libcuda or libnvrtc, so the
//!   workspace builds and tests on a machine with no CUDA installed at all.
//! - cudarc panics on the first call into a library it cannot load. Nothing
//!   above this crate may call into [`driver`] or [`nvrtc`] before
//!   [`probe()`] has reported the library as loadable; the probe itself only
//!   uses `dlopen` and never panics.
//! - NCCL ([`nccl`]) is loaded here too, by a loader of its own that never
//!   panics: [`nccl::nccl()`] returns its functions or why it cannot.
//! - No ownership, no RAII, no policy: that is the `unigpu-cuda-safe` crate's job.

pub mod nccl;
pub mod probe;

/// The CUDA driver API (`cu*`): raw `sys` bindings and cudarc's thin
/// `result` wrappers, which turn a `CUresult` into a `Result`.
pub mod driver {
    pub use cudarc::driver::{result, sys};
}

/// NVRTC, the run-time CUDA C++ compiler: raw bindings and `result` wrappers.
pub mod nvrtc {
    pub use cudarc::nvrtc::{result, sys};
}

/// The CUDA version these bindings were generated for (major, minor).
pub const BINDINGS_CUDA_VERSION: (u32, u32) = (13, 0);

pub use probe::{LibraryStatus, Probe, probe};
