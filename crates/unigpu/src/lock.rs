//! Locking that survives a panic elsewhere.

use std::sync::{Mutex, MutexGuard};

/// Locks, ignoring poison: nothing in this crate panics while holding a
/// lock (user closures run outside every lock, under catch_unwind), so a
/// poisoned lock's data is still whole.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
