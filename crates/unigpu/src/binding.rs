//! The one policy of the language bindings (the C API in crates/capi, the
//! Python package in python/): how a call that names several shared
//! arrays locks them and treats an array named twice, which kinds of error
//! there are, and the built-in op kinds they dispatch on. Both bindings
//! call this module, so the same call behaves the same in C and Python.
//!
//! A binding's array is a [`SharedArray`] (`Arc<RwLock<AnyArray>>`):
//! reads share it, writes take it alone. [`lock`] locks each distinct
//! array of a call once, in address order (two threads naming the same
//! arrays in any order cannot deadlock), with one aliasing rule:
//!
//! - an array may be read several times in a call (`add(x, x, out)`);
//! - an array the call writes may also be one of its inputs
//!   (`add(x, y, out=x)`, a kernel's `const float*` and `float*` on the
//!   same array): the inputs that name it read a copy of it taken under
//!   the write lock before the call, so the call sees the array as it was
//!   before (what a Rust caller gets by copying the input first, the only
//!   way the borrow rules allow);
//! - an array may not be written twice in one call (two outputs of a
//!   kernel launch): there is no order in which both writes mean
//!   something, so the call is refused ([`ErrorKind::InvalidArgument`],
//!   [`CallError::Refused`]) before anything runs.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::any_array::{AnyView, AnyViewMut};
use crate::{AnyArray, Error, Layout, Ops, Scalar};

pub use crate::ops::kinds::{Binary, BinaryMath, Compare, Reduce, Unary, UnaryMath};

mod comm;
mod precompiled;

pub use comm::{SendRecvOp, all_reduce, broadcast, collective, send_recv};
pub use precompiled::{BoundModule, Declaration, ImageKind, load_module};

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

impl std::fmt::Debug for Locked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked")
            .field("arrays", &self.guards.len())
            .field("copies", &self.copies.iter().flatten().count())
            .field("operands", &self.slots.len())
            .finish()
    }
}

fn key(a: &RwLock<AnyArray>) -> usize {
    std::ptr::from_ref(a).addr()
}

fn read_guard(l: &RwLock<AnyArray>) -> RwLockReadGuard<'_, AnyArray> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write_guard(l: &RwLock<AnyArray>) -> RwLockWriteGuard<'_, AnyArray> {
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

/// The first array a call writes, as its body sees it.
fn written(w: Vec<&mut AnyArray>) -> &mut AnyArray {
    w.into_iter()
        .next()
        .expect("every call below names one written array")
}

/// `out = a ∘ b` on `ops`, with `a`, `b` read and `out` written under the
/// module's rule; `a` and `b` broadcast to `out`'s shape.
pub fn binary<'a>(
    ops: Ops<'_>,
    op: Binary,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(out.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.binary_any(
                op,
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `out = op(x)` on `ops`.
pub fn unary<'a>(
    ops: Ops<'_>,
    op: Unary,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [x, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(out.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.unary_any(
                op,
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `out = op(x)` for the math ops of one input on `ops` (`params`: see
/// [`Ops::unary_math_any`]).
pub fn unary_math<'a>(
    ops: Ops<'_>,
    op: UnaryMath,
    params: [Scalar; 2],
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [x, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(out.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.unary_math_any(
                op,
                params,
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `out = op(a, b)` (`div`, `minimum`, `maximum`, `pow`) on `ops`,
/// broadcasting as [`binary`].
pub fn binary_math<'a>(
    ops: Ops<'_>,
    op: BinaryMath,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(out.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.binary_math_any(
                op,
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `mask = a op b` (a u8 0/1 mask) on `ops`, broadcasting as [`binary`].
pub fn compare<'a>(
    ops: Ops<'_>,
    op: Compare,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, mask] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(mask.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.compare_any(
                op,
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: mask.layout,
                },
            )
        },
    )
}

/// `out = mask != 0 ? a : b` on `ops` (`mask` u8), the four broadcast to
/// `out`'s shape.
pub fn where_<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 4],
    names: [&str; 4],
) -> Result<(), CallError> {
    let [mask, a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(mask.array, names[0]),
            Operand::read(a.array, names[1]),
            Operand::read(b.array, names[2]),
            Operand::write(out.array, names[3]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.where_any(
                AnyView {
                    array: r[0],
                    layout: mask.layout,
                },
                AnyView {
                    array: r[1],
                    layout: a.layout,
                },
                AnyView {
                    array: r[2],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// A reduction on `ops`: `Sum` and `Max` of `x`, `Dot` of `x` and `y`
/// (`y` is ignored by the others).
pub fn reduce<'a>(
    ops: Ops<'_>,
    op: Reduce,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<Scalar, CallError> {
    let [x, y] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::read(y.array, names[1]),
        ],
        |v| {
            let (r, _) = split(v);
            let xv = AnyView {
                array: r[0],
                layout: x.layout,
            };
            match op {
                Reduce::Sum => ops.sum_any(xv),
                Reduce::Max => ops.max_any(xv),
                Reduce::Dot => ops.dot_any(
                    xv,
                    AnyView {
                        array: r[1],
                        layout: y.layout,
                    },
                ),
            }
        },
    )
}

/// `dst = src` on `ops` (`copy(x, x)` leaves `x` as it is).
pub fn copy<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [src, dst] = arrays.map(Into::into);
    if std::ptr::eq(src.array, dst.array) && src.layout == dst.layout {
        // The rule's result (the array as it was) without the copy it
        // would take.
        return with_arrays(&[Operand::read(src.array, names[0])], |_| Ok(()));
    }
    with_arrays(
        &[
            Operand::read(src.array, names[0]),
            Operand::write(dst.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.copy_any(
                AnyView {
                    array: r[0],
                    layout: src.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: dst.layout,
                },
            )
        },
    )
}

/// `dst = src` on `src`'s default stream ([`AnyArray::copy_to`];
/// `copy_to(x, x)` leaves `x` as it is).
pub fn copy_to([src, dst]: [&RwLock<AnyArray>; 2], names: [&str; 2]) -> Result<(), CallError> {
    if std::ptr::eq(src, dst) {
        return with_arrays(&[Operand::read(src, names[0])], |_| Ok(()));
    }
    with_arrays(
        &[Operand::read(src, names[0]), Operand::write(dst, names[1])],
        |v| {
            let (r, w) = split(v);
            r[0].copy_to(written(w))
        },
    )
}

/// Every element of `x` set to `value` on `ops`.
pub fn fill<'a>(ops: Ops<'_>, x: impl Into<Handle<'a>>, value: Scalar) -> Result<(), CallError> {
    let x = x.into();
    let mut g = write_guard(x.array);
    Ok(ops.fill_any(
        AnyViewMut {
            array: &mut g,
            layout: x.layout,
        },
        value,
    )?)
}

/// `x = alpha·x` on `ops`.
pub fn scale<'a>(ops: Ops<'_>, alpha: Scalar, x: impl Into<Handle<'a>>) -> Result<(), CallError> {
    let x = x.into();
    let mut g = write_guard(x.array);
    Ok(ops.scale_any(
        alpha,
        AnyViewMut {
            array: &mut g,
            layout: x.layout,
        },
    )?)
}

/// `y = alpha·x + y` on `ops`.
pub fn axpy<'a>(
    ops: Ops<'_>,
    alpha: Scalar,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [x, y] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(y.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.axpy_any(
                alpha,
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: y.layout,
                },
            )
        },
    )
}

/// `c = a·b` (row-major `m×k`, `k×n`) on `ops`.
pub fn matmul<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
    mkn: (usize, usize, usize),
) -> Result<(), CallError> {
    let [a, b, c] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(c.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.matmul_any(
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: c.layout,
                },
                mkn,
            )
        },
    )
}

/// `out = softmax(x)` along `axis` (`log`: `log_softmax`), `out` of `x`'s
/// shape; `out` may not be `x` itself (a row is read after parts of it
/// are written).
pub fn softmax<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
    axis: usize,
    log: bool,
) -> Result<(), CallError> {
    let [x, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(out.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.softmax_any(
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                axis,
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
                log,
            )
        },
    )
}

/// `out = a·b` of 2-D arrays or views, the sizes from their shapes; when
/// any is 3-D, a batched product ([`Ops::bmm`](crate::Ops::bmm)).
pub fn mm<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(out.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.mm_any(
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::{Context, DType};

    fn array(ctx: &Context, values: &[f32]) -> RwLock<AnyArray> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        RwLock::new(AnyArray::from_bytes(ctx, DType::F32, &bytes).unwrap())
    }

    fn values(a: &RwLock<AnyArray>) -> Vec<f32> {
        let a = read_guard(a);
        let mut bytes = vec![0u8; a.len() * 4];
        a.download_bytes(&mut bytes).unwrap();
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.random_range(-4..=4) as f32).collect()
    }

    #[test]
    fn an_output_that_is_also_an_input_reads_the_input_as_it_was() {
        let ctx = Context::cpu().unwrap();
        let mut rng = StdRng::seed_from_u64(27);
        for n in [1, 7, 64, 1000] {
            let (xv, yv) = (random(&mut rng, n), random(&mut rng, n));
            let (x, y) = (array(&ctx, &xv), array(&ctx, &yv));
            // x = x + y
            binary(ctx.ops(), Binary::Add, [&x, &y, &x], ["a", "b", "out"]).unwrap();
            let want: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| a + b).collect();
            assert_eq!(values(&x), want);
            // y = y * y
            binary(ctx.ops(), Binary::Mul, [&y, &y, &y], ["a", "b", "out"]).unwrap();
            let want: Vec<f32> = yv.iter().map(|v| v * v).collect();
            assert_eq!(values(&y), want);
            // x = relu(x)
            let before = values(&x);
            unary(ctx.ops(), Unary::Relu, [&x, &x], ["x", "out"]).unwrap();
            let want: Vec<f32> = before.iter().map(|v| v.max(0.0)).collect();
            assert_eq!(values(&x), want);
            // y = 2·y + y
            let before = values(&y);
            axpy(ctx.ops(), Scalar::new(2.0f32), [&y, &y], ["x", "y"]).unwrap();
            let want: Vec<f32> = before.iter().map(|v| 3.0 * v).collect();
            assert_eq!(values(&y), want);
            // copy(x, x) leaves x as it is
            let before = values(&x);
            copy(ctx.ops(), [&x, &x], ["src", "dst"]).unwrap();
            assert_eq!(values(&x), before);
            ctx.default_stream().sync().unwrap();
        }
    }

    #[test]
    fn the_math_ops_comparisons_and_where_follow_the_same_rule() {
        let ctx = Context::cpu().unwrap();
        let mut rng = StdRng::seed_from_u64(28);
        for n in [1, 7, 64, 1000] {
            let (xv, yv) = (random(&mut rng, n), random(&mut rng, n));
            let (x, y) = (array(&ctx, &xv), array(&ctx, &yv));
            // x = clamp(x, -1, 2), in place
            let params = [Scalar::new(-1.0f32), Scalar::new(2.0f32)];
            unary_math(ctx.ops(), UnaryMath::Clamp, params, [&x, &x], ["x", "out"]).unwrap();
            let xc: Vec<f32> = xv.iter().map(|v| v.clamp(-1.0, 2.0)).collect();
            assert_eq!(values(&x), xc);
            // y = maximum(y, x), in place
            binary_math(
                ctx.ops(),
                BinaryMath::Maximum,
                [&y, &x, &y],
                ["a", "b", "out"],
            )
            .unwrap();
            let ym: Vec<f32> = yv.iter().zip(&xc).map(|(a, b)| a.max(*b)).collect();
            assert_eq!(values(&y), ym);
            // mask = x < y (u8), then x = mask ? x : y, in place
            let mask = RwLock::new(AnyArray::alloc(&ctx, DType::U8, n).unwrap());
            compare(ctx.ops(), Compare::Lt, [&x, &y, &mask], ["a", "b", "mask"]).unwrap();
            let mut m = vec![0u8; n];
            read_guard(&mask).download_bytes(&mut m).unwrap();
            let want: Vec<u8> = xc.iter().zip(&ym).map(|(a, b)| u8::from(a < b)).collect();
            assert_eq!(m, want);
            where_(ctx.ops(), [&mask, &x, &y, &x], ["mask", "a", "b", "out"]).unwrap();
            let want: Vec<f32> = (0..n)
                .map(|i| if m[i] != 0 { xc[i] } else { ym[i] })
                .collect();
            assert_eq!(values(&x), want);
            // A float mask is refused with the dtype error, not a panic.
            let e = where_(ctx.ops(), [&x, &x, &y, &y], ["mask", "a", "b", "out"]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::DTypeMismatch);
            ctx.default_stream().sync().unwrap();
        }
    }

    #[test]
    fn an_array_written_twice_is_refused_before_anything_is_locked() {
        let ctx = Context::cpu().unwrap();
        let (x, y) = (array(&ctx, &[1.0]), array(&ctx, &[2.0]));
        // Held for writing elsewhere: a refusal must not wait for it.
        let _held = write_guard(&y);
        let e = lock(&[
            Operand::read(&x, "args[0]"),
            Operand::write(&y, "args[1]"),
            Operand::read(&y, "args[2]"),
            Operand::write(&y, "args[3]"),
        ])
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            e.to_string(),
            "`args[1]` and `args[3]` are the same array, and both are written; pass separate arrays"
        );
    }

    #[test]
    fn each_distinct_array_is_locked_once_in_address_order() {
        let ctx = Context::cpu().unwrap();
        let mut rng = StdRng::seed_from_u64(4);
        let arrays: Vec<RwLock<AnyArray>> = (0..6).map(|i| array(&ctx, &[i as f32])).collect();
        for _ in 0..200 {
            // Random operands: each array read, written or both, any order.
            let mut ops = Vec::new();
            let mut written = vec![false; arrays.len()];
            for _ in 0..rng.random_range(1..10) {
                let i = rng.random_range(0..arrays.len());
                let write = !written[i] && rng.random_bool(0.3);
                written[i] |= write;
                ops.push(if write {
                    Operand::write(&arrays[i], "w")
                } else {
                    Operand::read(&arrays[i], "r")
                });
            }
            let mut locked = lock(&ops).unwrap();
            let distinct: std::collections::BTreeSet<usize> =
                ops.iter().map(|o| key(o.array)).collect();
            assert_eq!(locked.guards.len(), distinct.len());
            let copies = locked.copies.iter().flatten().count();
            let views = locked.views();
            assert_eq!(views.len(), ops.len());
            for (v, o) in views.iter().zip(&ops) {
                // Every view is its operand's array (or a copy of it) with
                // its use.
                assert_eq!(matches!(v, View::Write(_)), o.use_ == Use::Write);
                let i = arrays
                    .iter()
                    .position(|a| std::ptr::eq(a, o.array))
                    .unwrap();
                let mut b = [0u8; 4];
                v.get().download_bytes(&mut b).unwrap();
                assert_eq!(f32::from_ne_bytes(b), i as f32);
            }
            let read_and_written = (0..arrays.len())
                .filter(|&i| {
                    written[i]
                        && ops
                            .iter()
                            .any(|o| o.use_ == Use::Read && std::ptr::eq(o.array, &arrays[i]))
                })
                .count();
            assert_eq!(copies, read_and_written);
        }
        // Two threads locking the same arrays in opposite orders.
        let (a, b) = (&arrays[0], &arrays[1]);
        std::thread::scope(|s| {
            for flip in [false, true] {
                s.spawn(move || {
                    for _ in 0..500 {
                        let (p, q) = if flip { (b, a) } else { (a, b) };
                        let mut l = lock(&[Operand::read(p, "p"), Operand::write(q, "q")]).unwrap();
                        drop(l.views());
                    }
                });
            }
        });
    }
}
