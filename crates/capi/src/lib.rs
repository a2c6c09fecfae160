//! The C API of unigpu: `libunigpu.a` and `libunigpu.so`, declared in
//! `include/unigpu.h` (generated from this crate by `cargo xtask gen`;
//! docs/c-api.md is the user's guide).
//!
//! # Rules of this layer (rustls-ffi is the model)
//!
//! - Everything C sees is prefixed `ug_`. Objects are opaque structs behind
//!   pointers (`ug_context*`, `ug_array*`, `ug_comm*`, ...); only plain
//!   values (`ug_scalar`, `ug_arg`, `ug_grid`, `ug_device_info`,
//!   `ug_cpu_arg`, `ug_param`, `ug_kernel_decl`) are `#[repr(C)]` structs.
//! - Every fallible call returns `ug_status`. Results go through
//!   out-parameters, written only on success (each body checks everything
//!   first and writes last, through [`status::Out`]).
//! - Every pointer argument is checked: NULL gives `UG_NULL_ARGUMENT`, a
//!   misaligned out-pointer or an oversized length `UG_INVALID_ARGUMENT`,
//!   a string that is not UTF-8 `UG_INVALID_UTF8`. Enum values from C come
//!   in as `uint32_t` and are converted with a check (`UG_INVALID_ARGUMENT`),
//!   since a Rust enum holding an undeclared value is undefined behaviour.
//! - Every fallible export runs inside the runtime's `guard`
//!   (crates/capi-runtime): a panic becomes `UG_PANIC`, never an abort or an
//!   unwind into C. A failure records its message for
//!   `ug_last_error_message(buf, len)`, one per thread (shared with the
//!   `ug_torch_*` / `ug_cuda_rt_*` tiers linked into the same library); a
//!   success clears it. The few infallible exports (`ug_version*`,
//!   `ug_status_name`, `ug_dtype_size`, the `ug_scalar_*` / `ug_arg_*` /
//!   `ug_param_*` / `ug_grid_for_elems` value constructors) only build plain values and
//!   cannot panic; the frees go through the runtime's `free_handle`, which
//!   catches a panicking destructor.
//! - Every `_free` accepts NULL and leaves the last error alone.
//! - Handles are thread-safe. A `ug_array` is an `Arc<RwLock<AnyArray>>`:
//!   reads share it, writes take it alone, and a call that names several
//!   arrays locks each once in address order ([`locks`]). The array's
//!   memory lives as long as anything holds the `Arc` (queued work, a
//!   DLPack export), not just the handle.
//! - This crate converts and checks; the facade (`unigpu`)
//!   does the work, dtype dispatch included (`AnyArray`, the `*_any` ops).
//! - `unsafe` is needed for raw pointers only; every block says why it is
//!   sound in a `// SAFETY:` line, and every export states the C caller's
//!   promises in `# Safety`.
//!
//! Features `torch` and `cuda` link the generated `ug_torch_*` and
//! `ug_cuda_rt_*` tiers into the same library (their headers are
//! include/ug_torch.h and include/ug_cuda_rt.h).

pub mod array;
pub mod comm;
pub mod context;
pub mod cpu_kernel;
pub mod create;
pub mod dlpack;
pub mod event;
pub mod graph;
pub mod info;
pub mod kernel;
mod locks;
pub mod ops;
pub mod pinned;
pub mod precompiled;
pub mod random;
pub mod shape;
pub mod status;
pub mod stream;
pub mod tiers;
pub mod types;
pub mod unified;

pub use array::*;
pub use comm::*;
pub use context::*;
pub use cpu_kernel::*;
pub use create::*;
pub use dlpack::*;
pub use event::*;
pub use graph::*;
pub use info::*;
pub use kernel::*;
pub use ops::*;
pub use pinned::*;
pub use precompiled::*;
pub use status::{ug_last_error_message, ug_status, ug_status_name, ug_string_free, ug_test_panic};
pub use stream::*;
pub use types::*;
pub use unified::*;
