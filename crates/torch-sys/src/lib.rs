//! libtorch for unigpu: the lowest layer of the torch tier.
//!
//! # Rules of this layer
//! - Linking is tch's `torch-sys` (found through `LIBTORCH`, or
//!   `LIBTORCH_USE_PYTORCH=1` with the Python that has torch on `PATH`), so
//!   unigpu and tch share one libtorch in a process.
//! - tch links libtorch with `--as-needed`, which drops libtorch_cuda: CUDA
//!   then looks absent, and the first `c10::cuda` call aborts the process.
//!   [`load_torch_cuda`] loads it explicitly; the c10 bridge calls its C++
//!   twin before every CUDA operation. Without libtorch_cuda (a CPU-only
//!   libtorch) it returns the reason, never aborts.
//! - Without the `torch` feature this crate is empty.

#[cfg(feature = "torch")]
mod with_torch {
    use std::sync::OnceLock;

    pub use torch_sys;

    /// Where libtorch's libraries were found at build time.
    pub const LIBTORCH_LIB_AT_BUILD: &str = env!("UNIGPU_LIBTORCH_LIB");

    /// Loads libtorch_cuda (RTLD_GLOBAL, kept for the life of the process)
    /// so libtorch registers its CUDA hooks. Searched first by name (the
    /// dynamic linker's path: `LD_LIBRARY_PATH`, rpath), then in the folder
    /// libtorch was linked from. `Err` says why CUDA through torch is
    /// unusable; calling it again returns the same answer.
    pub fn load_torch_cuda() -> Result<(), String> {
        static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
        LOADED.get_or_init(load).clone()
    }

    fn load() -> Result<(), String> {
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // Tests act out a CPU-only libtorch by pointing this at nothing.
        let candidates = match std::env::var("UNIGPU_TEST_TORCH_CUDA_LIB") {
            Ok(name) if !name.is_empty() => vec![name],
            _ => vec![
                "libtorch_cuda.so".to_string(),
                format!("{LIBTORCH_LIB_AT_BUILD}/libtorch_cuda.so"),
            ],
        };
        let mut errors = Vec::new();
        for name in &candidates {
            // SAFETY: loading libtorch_cuda runs its static initialisers,
            // which register CUDA hooks with the already-loaded libtorch;
            // that is what libtorch expects when it loads itself.
            match unsafe { Library::open(Some(name), RTLD_NOW | RTLD_GLOBAL) } {
                Ok(lib) => {
                    // Never unloaded: libtorch keeps pointers into it.
                    std::mem::forget(lib);
                    return Ok(());
                }
                Err(e) => errors.push(format!("{name}: {e}")),
            }
        }
        Err(format!(
            "libtorch_cuda could not be loaded (a CPU-only libtorch?): {}",
            errors.join("; ")
        ))
    }
}

#[cfg(feature = "torch")]
pub use with_torch::*;
