//! The generated C tiers linked into the same library, so that one
//! `libunigpu.a` / `libunigpu.so` also exports them:
//!
//! - feature `cuda`: the direct CUDA runtime tier (`rt_cuda_*`,
//!   include/rt_cuda.h) from crates/cuda-rt;
//! - feature `torch`: the torch tier (`ug_torch_*`, include/ug_torch.h)
//!   from crates/c10-bridge.
//!
//! Their exports are `#[no_mangle]` functions of those crates; naming the
//! modules here links the crates in, and rustc keeps every exported symbol
//! of a linked crate in a cdylib (checked with `nm -D` by
//! .ci/capi-tests.sh).

#[cfg(feature = "cuda")]
pub use unigpu_cuda_rt::generated::capi as rt_cuda;

#[cfg(feature = "torch")]
pub use unigpu_c10_bridge::generated::capi as ug_torch;
