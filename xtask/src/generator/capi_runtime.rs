//! The generator's side of the C-ABI runtime crate (`crates/capi-runtime`,
//! package `unigpu-capi-runtime`): every generated `capi.rs` calls it
//! instead of carrying its own copy of the panic boundary, the last error
//! and the pointer checks. Its hosting crate must depend on the package
//! (optionally, behind the feature that enables the generated code).

/// The package the crate hosting a generated `capi.rs` depends on.
pub const PACKAGE: &str = "unigpu-capi-runtime";

/// Its name in Rust paths; generated code imports it as `runtime`.
pub const CRATE: &str = "unigpu_capi_runtime";

/// The associated constants of the runtime's `StatusCode` trait, each named
/// like the C suffix (`abi::STATUSES`) of the status it stands for.
pub const STATUS_CONSTS: &[&str] = &[
    "OK",
    "NULL_ARGUMENT",
    "INVALID_ARGUMENT",
    "INVALID_UTF8",
    "PANIC",
];
