//! Which host ranges are page-locked: a copy to or from one is a direct
//! DMA, so it skips the staging ring.
//!
//! (Advising huge pages for a new vector that a download fills, to make
//! its first touch cheaper, was measured on an H200 host in the same call
//! with and without the advice, and was no faster:
//! bench/results/2026-11-23/h200-huge-pages.txt.)

use std::collections::BTreeMap;
use std::sync::RwLock;

/// The page-locked allocations of this process that cuda-safe made
/// (`PinnedBuffer`s): start address to length in bytes.
static PAGE_LOCKED: RwLock<BTreeMap<usize, usize>> = RwLock::new(BTreeMap::new());

pub(crate) fn register_page_locked(start: usize, bytes: usize) {
    if bytes > 0 {
        let mut ranges = PAGE_LOCKED.write().unwrap_or_else(|e| e.into_inner());
        ranges.insert(start, bytes);
    }
}

pub(crate) fn unregister_page_locked(start: usize) {
    let mut ranges = PAGE_LOCKED.write().unwrap_or_else(|e| e.into_inner());
    ranges.remove(&start);
}

/// Whether `bytes` bytes at `ptr` lie inside one page-locked allocation.
pub(crate) fn is_page_locked(ptr: *const u8, bytes: usize) -> bool {
    let start = ptr as usize;
    let ranges = PAGE_LOCKED.read().unwrap_or_else(|e| e.into_inner());
    ranges
        .range(..=start)
        .next_back()
        .is_some_and(|(&base, &len)| start.saturating_add(bytes) <= base + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_page_locked_only_inside_one_registered_allocation() {
        let base = 0x7000_0000_0000usize;
        register_page_locked(base, 4096);
        register_page_locked(base + 8192, 4096);
        let at = |offset: usize| (base + offset) as *const u8;
        assert!(is_page_locked(at(0), 4096));
        assert!(is_page_locked(at(100), 10));
        assert!(!is_page_locked(at(4000), 200), "runs past the first");
        assert!(!is_page_locked(at(4096), 1), "the gap");
        assert!(is_page_locked(at(8192 + 4095), 1));
        assert!(!is_page_locked((base - 1) as *const u8, 1));
        unregister_page_locked(base);
        assert!(!is_page_locked(at(0), 1));
        unregister_page_locked(base + 8192);
        assert!(!is_page_locked(at(8192), 1));
    }
}
