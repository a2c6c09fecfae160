//! The CPU backend's marker type, what the contract's traits are
//! implemented for (wgpu-hal's `Api`): `mod.rs` names its handle types
//! (`Handles`) and lists the files that implement the operations on each.

/// The CPU backend: host memory, one worker thread per stream.
#[derive(Debug)]
pub(crate) struct Cpu;
