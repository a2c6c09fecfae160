//! Host memory accounting, shared by the backends that keep data in host
//! memory (the cpu backend's arrays, and the pinned buffer of
//! `host_pinned.rs`); not a backend. A request larger than what is
//! available is an out-of-memory error, never an abort or a visit from the
//! OOM killer.

use sysinfo::{MemoryRefreshKind, RefreshKind, System};

use crate::{Error, Result};

/// Requests under this size skip the /proc read: they cannot exhaust a machine.
const CHECK_ABOVE_BYTES: usize = 256 << 20;

/// (available, total) bytes of system memory; (0, 0) where the OS will
/// not say, which makes large allocations fail cleanly rather than abort.
pub(crate) fn memory_info() -> (usize, usize) {
    let refresh = RefreshKind::nothing().with_memory(MemoryRefreshKind::nothing().with_ram());
    match System::new_with_specifics(refresh) {
        Ok(sys) => (
            usize::try_from(sys.available_memory()).unwrap_or(usize::MAX),
            usize::try_from(sys.total_memory()).unwrap_or(usize::MAX),
        ),
        Err(_) => (0, 0),
    }
}

/// A zeroed vector of `len` elements, or `Error::OutOfMemory`.
pub(crate) fn try_alloc_vec<T: Default + Clone>(len: usize) -> Result<Vec<T>> {
    let oom = |requested: usize| Error::OutOfMemory {
        requested,
        free: memory_info().0,
    };
    let bytes = len
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| oom(usize::MAX))?;
    if bytes > CHECK_ABOVE_BYTES && bytes > memory_info().0 {
        return Err(oom(bytes));
    }
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| oom(bytes))?;
    v.resize(len, T::default());
    Ok(v)
}
