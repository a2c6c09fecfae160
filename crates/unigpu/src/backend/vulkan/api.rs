//! The Vulkan backend's marker type, what the contract's traits are
//! implemented for (wgpu-hal's `Api`): `mod.rs` names its handle types
//! (`Handles`) and lists the files that implement the operations on each.

/// The Vulkan backend: wgpu devices, worker-thread streams, WGSL ops.
#[derive(Debug)]
pub(crate) struct Vulkan;
