//! What a device is: name, capability, memory.

use crate::backend::Backend;

/// Free and total memory of a device, in bytes. For the CPU backend this is
/// system RAM (available and total).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    pub free: usize,
    pub total: usize,
}

/// What a device's caching allocator holds, in bytes unless named
/// otherwise. From [`crate::Context::memory_stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Held from the driver: in use or cached.
    pub reserved: usize,
    /// Handed out to live arrays (sizes rounded up to 512 bytes).
    pub in_use: usize,
    /// Reserved but unused: what [`crate::Context::empty_cache`] may release.
    pub cached: usize,
    /// The most `in_use` has been.
    pub peak_in_use: usize,
    /// Driver allocations held.
    pub segments: usize,
    /// Allocations served from the cache.
    pub hits: u64,
    /// Allocations that needed a new driver allocation.
    pub misses: u64,
    /// Allocations that ran out of memory, emptied the cache and retried.
    pub oom_retries: u64,
}

/// One device as `unigpu info` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub backend: Backend,
    pub ordinal: usize,
    pub name: String,
    /// (major, minor) for CUDA devices; `None` for the CPU and Vulkan adapters.
    pub compute_capability: Option<(i32, i32)>,
    pub memory: MemoryInfo,
    /// Further facts as (name, value) pairs, for backends with more to say
    /// (a Vulkan adapter's type, driver, features and limits); empty
    /// otherwise.
    pub details: Vec<(String, String)>,
}

/// Where [`crate::Stream::prefetch`] moves a unified array's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// The context's device: kernels then run without page faults.
    Device,
    /// Host memory: host views then read without page faults.
    Host,
}
