//! Locking the arrays of one call, by the bindings' one rule
//! (`unigpu::binding`, shared with the Python package): each distinct
//! array is locked once, in address order; an array may be read several
//! times (`ug_op_add(s, x, x, out)`); an output that is also an input
//! works, the input reading a copy taken first (`ug_op_add(s, x, y, x)`
//! is `x += y`); an array written twice in one call is refused
//! (`UG_INVALID_ARGUMENT`).

use unigpu::binding::CallError;
use unigpu::{AnyArray, AnyView, AnyViewMut};
use unigpu_capi_runtime::Failure;

use crate::array::ug_array;
use crate::status::{Result, fail};

/// A refusal or facade error of the shared layer as the C API reports it.
pub(crate) fn fail_call(e: CallError) -> Failure<crate::status::ug_status> {
    match e {
        CallError::Refused { message } => Failure::invalid_argument(message),
        CallError::Failed(e) => fail(e),
    }
}

/// Runs `f` with one array locked for reading.
pub(crate) fn read<R>(a: &ug_array, f: impl FnOnce(&AnyArray) -> Result<R>) -> Result<R> {
    f(&a.inner.read().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f` with one array (or view) locked for reading.
pub(crate) fn read_view<R>(a: &ug_array, f: impl FnOnce(AnyView<'_>) -> Result<R>) -> Result<R> {
    let g = a.inner.read().unwrap_or_else(|e| e.into_inner());
    f(AnyView {
        array: &g,
        layout: a.view.then_some(&a.layout),
    })
}

/// Runs `f` with one array (or view) locked for writing.
pub(crate) fn write_view<R>(
    a: &ug_array,
    f: impl FnOnce(AnyViewMut<'_>) -> Result<R>,
) -> Result<R> {
    let mut g = a.inner.write().unwrap_or_else(|e| e.into_inner());
    f(AnyViewMut {
        array: &mut g,
        layout: a.view.then_some(&a.layout),
    })
}

/// Runs `f` with one array locked for writing.
pub(crate) fn write<R>(a: &ug_array, f: impl FnOnce(&mut AnyArray) -> Result<R>) -> Result<R> {
    f(&mut a.inner.write().unwrap_or_else(|e| e.into_inner()))
}
