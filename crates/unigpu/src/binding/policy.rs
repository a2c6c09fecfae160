//! The bindings' policy itself (binding.rs says it in full): the shared
//! array and how a call locks its operands, the error kinds, and the
//! handle a call names an array or a view of it by. The ops in binding.rs
//! and the collectives and modules beside this file build on it; it
//! imports none of them.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{AnyArray, Error, Layout};

/// An array as the bindings hold it: shared by handles, locked per call.
pub type SharedArray = Arc<RwLock<AnyArray>>;

/// How a call uses one of its arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Read,
    Write,
}

/// One array argument of a call: the array, its use and the name a
/// refusal calls it by (`"out"`, `"args[2]"`).
#[derive(Debug, Clone, Copy)]
pub struct Operand<'a> {
    pub array: &'a RwLock<AnyArray>,
    pub use_: Use,
    pub name: &'a str,
}

impl<'a> Operand<'a> {
    pub fn read(array: &'a RwLock<AnyArray>, name: &'a str) -> Operand<'a> {
        Operand {
            array,
            use_: Use::Read,
            name,
        }
    }

    pub fn write(array: &'a RwLock<AnyArray>, name: &'a str) -> Operand<'a> {
        Operand {
            array,
            use_: Use::Write,
            name,
        }
    }
}

/// What a binding reports, by kind: the C status codes and the Python
/// exception classes are each a table over this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The binding refused the call's arguments (an array written twice).
    InvalidArgument,
    OutOfMemory,
    InvalidDevice,
    BackendUnavailable,
    Compile,
    KernelArgs,
    Unsupported,
    SizeMismatch,
    DTypeMismatch,
    ContextMismatch,
    Config,
    StreamWork,
    Torch,
    Driver,
    Dlpack,
    /// Precompiled code that is not what its label says, or that the
    /// device cannot run.
    Image,
    /// A collective that failed, timed out, or whose ranks could not
    /// meet; the communicator was aborted.
    Collective,
    /// An error of a kind the bindings do not name.
    Other,
}

impl ErrorKind {
    /// The kind of a facade error: an error in a kernel has the kind of
    /// what went wrong there.
    pub fn of(e: &Error) -> ErrorKind {
        match e.root() {
            Error::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            Error::InvalidDevice { .. } => ErrorKind::InvalidDevice,
            Error::BackendUnavailable { .. } => ErrorKind::BackendUnavailable,
            Error::Compile { .. } => ErrorKind::Compile,
            Error::KernelArgs { .. } => ErrorKind::KernelArgs,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            // A shape that does not fit is the same kind of mistake as a
            // length that does not: C and Python report both alike.
            Error::SizeMismatch { .. } | Error::Shape { .. } => ErrorKind::SizeMismatch,
            Error::DTypeMismatch { .. } => ErrorKind::DTypeMismatch,
            Error::ContextMismatch { .. } => ErrorKind::ContextMismatch,
            Error::Config(_) => ErrorKind::Config,
            Error::StreamWork { .. } => ErrorKind::StreamWork,
            Error::Torch { .. } => ErrorKind::Torch,
            Error::Driver { .. } => ErrorKind::Driver,
            Error::Dlpack { .. } => ErrorKind::Dlpack,
            Error::Image { .. } => ErrorKind::Image,
            Error::Collective { .. } | Error::Timeout { .. } | Error::Rendezvous { .. } => {
                ErrorKind::Collective
            }
            _ => ErrorKind::Other,
        }
    }
}

/// Why a binding call failed: refused by this module's rules, or an error
/// of the facade.
#[derive(Debug)]
pub enum CallError {
    /// The arguments break the aliasing rule; nothing ran.
    Refused {
        message: String,
    },
    Failed(Error),
}

impl CallError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::Refused { .. } => ErrorKind::InvalidArgument,
            CallError::Failed(e) => ErrorKind::of(e),
        }
    }
}

impl From<Error> for CallError {
    fn from(e: Error) -> CallError {
        CallError::Failed(e)
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Refused { message } => f.write_str(message),
            CallError::Failed(e) => e.fmt(f),
        }
    }
}

enum Guard<'a> {
    Read(RwLockReadGuard<'a, AnyArray>),
    Write(RwLockWriteGuard<'a, AnyArray>),
}

/// One array of the call, as its body sees it.
#[derive(Debug)]
pub enum View<'g> {
    Read(&'g AnyArray),
    Write(&'g mut AnyArray),
}

impl View<'_> {
    /// The array, for reading.
    pub fn get(&self) -> &AnyArray {
        match self {
            View::Read(a) => a,
            View::Write(a) => a,
        }
    }
}

/// The locks of one call (and the copies its aliased inputs read), held
/// until it is dropped.
pub struct Locked<'a> {
    /// One per distinct array, in the order first named.
    guards: Vec<Guard<'a>>,
    /// For each distinct array written and also read, the copy its reads
    /// see.
    copies: Vec<Option<AnyArray>>,
    /// For each operand, its use and the index of its array's guard.
    slots: Vec<(Use, usize)>,
}

#[cfg(test)]
impl Locked<'_> {
    /// For the module's tests: how many arrays are locked, and how many
    /// copies the aliased inputs read.
    pub(super) fn counts(&self) -> (usize, usize) {
        (self.guards.len(), self.copies.iter().flatten().count())
    }
}

impl std::fmt::Debug for Locked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked")
            .field("arrays", &self.guards.len())
            .field("copies", &self.copies.iter().flatten().count())
            .field("operands", &self.slots.len())
            .finish()
    }
}

pub(super) fn key(a: &RwLock<AnyArray>) -> usize {
    std::ptr::from_ref(a).addr()
}

pub(super) fn read_guard(l: &RwLock<AnyArray>) -> RwLockReadGuard<'_, AnyArray> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn write_guard(l: &RwLock<AnyArray>) -> RwLockWriteGuard<'_, AnyArray> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Locks the arrays of one call by the module's rule (see the module
/// docs): each distinct array once, in address order; an array written
/// twice is refused before any lock is taken; an array written and read
/// is copied (after locking) for its reads.
pub fn lock<'a>(operands: &[Operand<'a>]) -> Result<Locked<'a>, CallError> {
    // Distinct arrays: (lock, written?, read?).
    let mut distinct: Vec<(&'a RwLock<AnyArray>, bool, bool)> = Vec::new();
    let mut slots = Vec::with_capacity(operands.len());
    for (j, op) in operands.iter().enumerate() {
        let write = op.use_ == Use::Write;
        if write {
            if let Some(first) = operands[..j]
                .iter()
                .find(|o| o.use_ == Use::Write && std::ptr::eq(o.array, op.array))
            {
                return Err(CallError::Refused {
                    message: aliased_writes(first.name, op.name),
                });
            }
        }
        let i = match distinct.iter().position(|d| std::ptr::eq(d.0, op.array)) {
            Some(i) => i,
            None => {
                distinct.push((op.array, false, false));
                distinct.len() - 1
            }
        };
        distinct[i].1 |= write;
        distinct[i].2 |= !write;
        slots.push((op.use_, i));
    }
    let mut order: Vec<usize> = (0..distinct.len()).collect();
    order.sort_by_key(|&i| key(distinct[i].0));
    let mut guards: Vec<Option<Guard<'a>>> = (0..distinct.len()).map(|_| None).collect();
    for i in order {
        let (l, write, _) = distinct[i];
        guards[i] = Some(if write {
            Guard::Write(write_guard(l))
        } else {
            Guard::Read(read_guard(l))
        });
    }
    let guards: Vec<Guard<'a>> = guards.into_iter().flatten().collect();
    let mut copies = Vec::with_capacity(distinct.len());
    for (g, &(_, write, read)) in guards.iter().zip(&distinct) {
        copies.push(match g {
            Guard::Write(a) if write && read => Some(snapshot(a)?),
            _ => None,
        });
    }
    Ok(Locked {
        guards,
        copies,
        slots,
    })
}

/// The refusal's message: the same words in every binding.
pub fn aliased_writes(first: &str, second: &str) -> String {
    format!(
        "`{first}` and `{second}` are the same array, and both are written; pass separate arrays"
    )
}

/// A copy of `a`, ordered after the work pending on it (the copy is an
/// ordinary stream-ordered device copy; the array remembers it as a
/// reader, so the call's write waits for it).
fn snapshot(a: &AnyArray) -> crate::Result<AnyArray> {
    // A copy of the whole memory with the array's own layout, so that a
    // view's layout names the same elements in it. (A strided import is
    // copied compact: a view of one, aliased, is refused by its bounds.)
    if a.is_contiguous() {
        let mut copy = AnyArray::alloc(a.context(), a.dtype(), a.len())?;
        a.copy_to(&mut copy)?;
        return copy.reshape(a.shape().to_vec());
    }
    a.to_contiguous()
}

impl Locked<'_> {
    /// The operands' views, in the order they were passed to [`lock`]: the
    /// array itself for reads of an array not written, its copy for reads
    /// of one that is, and the one `&mut` for its write.
    pub fn views(&mut self) -> Vec<View<'_>> {
        let mut writes: Vec<Option<&mut AnyArray>> = Vec::with_capacity(self.guards.len());
        let mut reads: Vec<Option<&AnyArray>> = Vec::with_capacity(self.guards.len());
        for (g, copy) in self.guards.iter_mut().zip(&self.copies) {
            match g {
                Guard::Read(r) => {
                    reads.push(Some(&**r));
                    writes.push(None);
                }
                Guard::Write(w) => {
                    reads.push(copy.as_ref());
                    writes.push(Some(&mut **w));
                }
            }
        }
        self.slots
            .iter()
            .filter_map(|&(use_, i)| match use_ {
                Use::Read => reads[i].map(View::Read),
                // One write per array (checked in `lock`).
                Use::Write => writes[i].take().map(View::Write),
            })
            .collect()
    }
}

/// Locks `operands` and runs `f` with their views (in order).
pub fn with_arrays<R>(
    operands: &[Operand<'_>],
    f: impl FnOnce(Vec<View<'_>>) -> crate::Result<R>,
) -> Result<R, CallError> {
    let mut locked = lock(operands)?;
    Ok(f(locked.views())?)
}

/// The arrays of a call as (read ones, written ones), each in order.
pub fn split<'g>(views: Vec<View<'g>>) -> (Vec<&'g AnyArray>, Vec<&'g mut AnyArray>) {
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

/// One array argument as a binding names it: its shared array and, for
/// a view (Python's `a.T`, `a[1:]`), the layout of the view's elements in
/// that array's memory. Locking and aliasing go by the shared array, so a
/// view and its array are one array to the rule above.
#[derive(Debug, Clone, Copy)]
pub struct Handle<'a> {
    pub array: &'a RwLock<AnyArray>,
    pub layout: Option<&'a Layout>,
}

impl<'a> From<&'a SharedArray> for Handle<'a> {
    fn from(array: &'a SharedArray) -> Self {
        Handle {
            array,
            layout: None,
        }
    }
}

impl<'a> From<&'a RwLock<AnyArray>> for Handle<'a> {
    fn from(array: &'a RwLock<AnyArray>) -> Self {
        Handle {
            array,
            layout: None,
        }
    }
}
