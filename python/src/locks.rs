//! Locking several arrays for one call without deadlocks.
//!
//! Each Python `Array` holds its `AnyArray` behind an `RwLock`. A call that
//! uses several arrays locks each distinct array once (read, or write if
//! any use writes it), in address order, so two threads that lock the same
//! arrays cannot wait on each other. Callers hold the GIL released.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use unigpu::AnyArray;

/// A held lock.
pub(crate) enum Guard<'l> {
    Read(RwLockReadGuard<'l, AnyArray>),
    Write(RwLockWriteGuard<'l, AnyArray>),
}

/// One use of an array in a call.
pub(crate) enum View<'g> {
    Read(&'g AnyArray),
    Write(&'g mut AnyArray),
}

/// The locks for `uses` (array, written?), and for each use the index of
/// its lock. Two writing uses of one array, or a writing and a reading one,
/// are the caller's to rule out (see [`conflict`]); here the lock is taken
/// for writing if any use writes.
pub(crate) fn lock_all<'l>(uses: &[(&'l RwLock<AnyArray>, bool)]) -> (Vec<Guard<'l>>, Vec<usize>) {
    let mut distinct: Vec<(&'l RwLock<AnyArray>, bool)> = Vec::with_capacity(uses.len());
    let mut index = Vec::with_capacity(uses.len());
    for &(lock, write) in uses {
        match distinct.iter().position(|(l, _)| std::ptr::eq(*l, lock)) {
            Some(i) => {
                distinct[i].1 |= write;
                index.push(i);
            }
            None => {
                index.push(distinct.len());
                distinct.push((lock, write));
            }
        }
    }
    let mut order: Vec<usize> = (0..distinct.len()).collect();
    order.sort_by_key(|&i| std::ptr::from_ref(distinct[i].0) as usize);
    let mut guards: Vec<Option<Guard<'l>>> = (0..distinct.len()).map(|_| None).collect();
    for i in order {
        let (lock, write) = distinct[i];
        guards[i] = Some(if write {
            Guard::Write(lock.write().unwrap_or_else(|e| e.into_inner()))
        } else {
            Guard::Read(lock.read().unwrap_or_else(|e| e.into_inner()))
        });
    }
    (guards.into_iter().flatten().collect(), index)
}

/// The views for each use, in order: the same `&AnyArray` for every
/// reading use of a lock, the one `&mut AnyArray` for its writing use.
/// `None` where a written array is used twice.
pub(crate) fn views<'g>(
    guards: &'g mut [Guard<'_>],
    index: &[usize],
    writes: impl Iterator<Item = bool>,
) -> Option<Vec<View<'g>>> {
    let mut slots: Vec<Option<View<'g>>> = guards
        .iter_mut()
        .map(|g| {
            Some(match g {
                Guard::Read(r) => View::Read(r),
                Guard::Write(w) => View::Write(w),
            })
        })
        .collect();
    index
        .iter()
        .zip(writes)
        .map(|(&i, write)| match slots.get_mut(i)? {
            Some(View::Read(r)) if !write => Some(View::Read(r)),
            slot => slot.take(),
        })
        .collect()
}

/// The positions of two uses of one array where at least one writes it, if
/// any: Rust's borrow rules (and the backends' ordering) allow an array to
/// be read several times or written once in a call, not both.
pub(crate) fn conflict(uses: &[(&RwLock<AnyArray>, bool)]) -> Option<(usize, usize)> {
    for (j, (b, wb)) in uses.iter().enumerate() {
        for (i, (a, wa)) in uses[..j].iter().enumerate() {
            if std::ptr::eq(*a, *b) && (*wa || *wb) {
                return Some((i, j));
            }
        }
    }
    None
}

/// Splits views into the read ones and the written ones, each in order.
pub(crate) fn split<'g>(views: Vec<View<'g>>) -> (Vec<&'g AnyArray>, Vec<&'g mut AnyArray>) {
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    for v in views {
        match v {
            View::Read(r) => reads.push(r),
            View::Write(w) => writes.push(w),
        }
    }
    (reads, writes)
}

/// Locks `uses` and runs `f` with their views (in the order of `uses`).
/// Call with the GIL released.
pub(crate) fn with_arrays<R>(
    uses: &[(&RwLock<AnyArray>, bool)],
    f: impl FnOnce(Vec<View<'_>>) -> unigpu::Result<R>,
) -> unigpu::Result<R> {
    let (mut guards, index) = lock_all(uses);
    let views = views(&mut guards, &index, uses.iter().map(|u| u.1)).ok_or(
        unigpu::Error::ContextMismatch {
            what: "an array written by this call is also used elsewhere in it",
        },
    )?;
    f(views)
}
