//! Locking the arrays of one call.
//!
//! A `ug_array` is an `Arc<RwLock<AnyArray>>`: reads share it, writes take
//! it alone. A call that names several arrays locks each distinct array
//! once (so `ug_op_add(s, x, x, out)` reads `x` through one lock), in
//! address order (so two threads locking the same arrays cannot deadlock),
//! and refuses an array that is both written and used again in the same
//! call, which the facade's borrow rules cannot express
//! (`UG_INVALID_ARGUMENT`).

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use facade::AnyArray;
use unigpu_capi_runtime::Failure;

use crate::array::ug_array;
use crate::status::Result;

/// How a call uses one of its arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    Read,
    Write,
}

enum Guard<'a> {
    Read(RwLockReadGuard<'a, AnyArray>),
    Write(RwLockWriteGuard<'a, AnyArray>),
}

/// One array of the call, as the body sees it.
pub(crate) enum ArrayRef<'a> {
    Read(&'a AnyArray),
    Write(&'a mut AnyArray),
}

/// The locks of one call, held until it is dropped.
pub(crate) struct Locks<'a> {
    guards: Vec<Guard<'a>>,
    /// For each array argument, the index of its guard.
    slots: Vec<usize>,
}

fn key(a: &ug_array) -> usize {
    Arc::as_ptr(&a.inner).addr()
}

/// Locks `arrays` (each with its use and its parameter name).
pub(crate) fn lock<'a>(arrays: &[(&'a ug_array, Use, &str)]) -> Result<Locks<'a>> {
    // One entry per distinct array: its lock and the strongest use.
    let mut distinct: Vec<(usize, &'a RwLock<AnyArray>, Use)> = Vec::with_capacity(arrays.len());
    for (i, (a, use_, name)) in arrays.iter().enumerate() {
        let k = key(a);
        if let Some(j) = arrays[..i].iter().position(|(b, _, _)| key(b) == k) {
            let (_, other_use, other) = arrays[j];
            if *use_ == Use::Write || other_use == Use::Write {
                return Err(Failure::invalid_argument(format!(
                    "`{other}` and `{name}` are the same array, and one of them is written; use a separate output array"
                )));
            }
            continue;
        }
        distinct.push((k, &a.inner, *use_));
    }
    distinct.sort_by_key(|(k, _, _)| *k);
    let guards = distinct
        .iter()
        .map(|(_, lock, use_)| match use_ {
            Use::Read => Guard::Read(lock.read().unwrap_or_else(|e| e.into_inner())),
            Use::Write => Guard::Write(lock.write().unwrap_or_else(|e| e.into_inner())),
        })
        .collect();
    let slots = arrays
        .iter()
        .map(|(a, _, _)| {
            let k = key(a);
            distinct.iter().position(|(d, _, _)| *d == k).unwrap_or(0)
        })
        .collect();
    Ok(Locks { guards, slots })
}

impl Locks<'_> {
    /// The arrays, in the order they were passed to [`lock`].
    pub(crate) fn refs(&mut self) -> Vec<ArrayRef<'_>> {
        let mut by_guard: Vec<Option<ArrayRef<'_>>> = self
            .guards
            .iter_mut()
            .map(|g| {
                Some(match g {
                    Guard::Read(g) => ArrayRef::Read(g),
                    Guard::Write(g) => ArrayRef::Write(g),
                })
            })
            .collect();
        self.slots
            .iter()
            .filter_map(|&g| match by_guard.get_mut(g)? {
                Some(ArrayRef::Read(a)) => Some(ArrayRef::Read(a)),
                // A written array appears in one slot only (checked in `lock`).
                slot @ Some(ArrayRef::Write(_)) => slot.take(),
                None => None,
            })
            .collect()
    }
}

impl<'a> ArrayRef<'a> {
    /// The array, for reading.
    pub(crate) fn get(&self) -> &AnyArray {
        match self {
            ArrayRef::Read(a) => a,
            ArrayRef::Write(a) => a,
        }
    }
}

/// Runs `f` with one array locked for reading.
pub(crate) fn read<R>(a: &ug_array, f: impl FnOnce(&AnyArray) -> Result<R>) -> Result<R> {
    f(&a.inner.read().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f` with one array locked for writing.
pub(crate) fn write<R>(a: &ug_array, f: impl FnOnce(&mut AnyArray) -> Result<R>) -> Result<R> {
    f(&mut a.inner.write().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f` with `x` read and `out` written (`x_name`, `out_name` name them
/// in errors).
pub(crate) fn read_write<R>(
    (x, x_name): (&ug_array, &str),
    (out, out_name): (&ug_array, &str),
    f: impl FnOnce(&AnyArray, &mut AnyArray) -> Result<R>,
) -> Result<R> {
    let mut locks = lock(&[(x, Use::Read, x_name), (out, Use::Write, out_name)])?;
    match locks.refs().as_mut_slice() {
        [x, ArrayRef::Write(out)] => f(x.get(), out),
        _ => Err(Failure::invalid_argument("internal: lock layout")),
    }
}

/// Runs `f` with `a` and `b` read (they may be the same array).
pub(crate) fn read2<R>(
    (a, a_name): (&ug_array, &str),
    (b, b_name): (&ug_array, &str),
    f: impl FnOnce(&AnyArray, &AnyArray) -> Result<R>,
) -> Result<R> {
    let mut locks = lock(&[(a, Use::Read, a_name), (b, Use::Read, b_name)])?;
    match locks.refs().as_slice() {
        [a, b] => f(a.get(), b.get()),
        _ => Err(Failure::invalid_argument("internal: lock layout")),
    }
}

/// Runs `f` with `a` and `b` read (they may be the same array) and `out`
/// written.
pub(crate) fn read2_write<R>(
    (a, a_name): (&ug_array, &str),
    (b, b_name): (&ug_array, &str),
    (out, out_name): (&ug_array, &str),
    f: impl FnOnce(&AnyArray, &AnyArray, &mut AnyArray) -> Result<R>,
) -> Result<R> {
    let mut locks = lock(&[
        (a, Use::Read, a_name),
        (b, Use::Read, b_name),
        (out, Use::Write, out_name),
    ])?;
    match locks.refs().as_mut_slice() {
        [a, b, ArrayRef::Write(out)] => f(a.get(), b.get(), out),
        _ => Err(Failure::invalid_argument("internal: lock layout")),
    }
}
