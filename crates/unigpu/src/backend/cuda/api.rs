//! The CUDA backend's marker type, what the contract's traits are
//! implemented for (wgpu-hal's `Api`): `mod.rs` names its handle types
//! (`Handles`) and lists the files that implement the operations on each.

/// The CUDA backend: the driver API through `unigpu-cuda-safe`.
#[derive(Debug)]
pub(crate) struct Cuda;
