//! What a device is: name, capability, memory.

use crate::backend::Backend;

/// Free and total memory of a device, in bytes. For the CPU backend this is
/// system RAM (available and total).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    pub free: usize,
    pub total: usize,
}

/// One device as `unigpu info` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub backend: Backend,
    pub ordinal: usize,
    pub name: String,
    /// (major, minor) for CUDA devices; `None` for the CPU.
    pub compute_capability: Option<(i32, i32)>,
    pub memory: MemoryInfo,
}
