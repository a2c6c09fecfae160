//! `libunigpu.a` / `libunigpu.so`: links crates/capi (and, with features
//! `torch` / `cuda`, the generated tiers it re-exports) into one C library.
//! Every `#[no_mangle]` export of a linked crate stays exported, so this
//! crate has no code of its own (.ci/capi-tests.sh checks the symbols with
//! `nm`).

pub use unigpu_capi::*;
