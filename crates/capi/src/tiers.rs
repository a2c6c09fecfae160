//! The generated C tiers linked into the same library, so that one
//! `libunigpu.a` / `libunigpu.so` also exports them:
//!
//! - feature `cuda`: the direct CUDA runtime tier (`ug_cuda_rt_*`,
//!   include/ug_cuda_rt.h) from crates/cuda-rt;
//! - feature `torch`: the torch tier (`ug_torch_*`, include/ug_torch.h)
//!   from crates/torch-bridge.
//!
//! Their exports are `#[no_mangle]` functions of those crates; naming the
//! modules here links the crates in, and rustc keeps every exported symbol
//! of a linked crate in a cdylib (checked with `nm -D` by
//! .ci/capi-tests.sh).

#[cfg(feature = "cuda")]
pub use unigpu_cuda_rt::generated::capi as ug_cuda_rt;

#[cfg(feature = "torch")]
pub use unigpu_torch_bridge::generated::capi as ug_torch;
