//! Values handed to C and taken back: opaque handles, arrays and strings.
//! Each `into_*` has its `free_*`; the frees accept NULL and leave the last
//! error alone.

use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{Failure, StatusCode, panic_message, set_last_error};

/// Moves `value` to the heap and returns the pointer C holds as an opaque
/// handle; [`free_handle`] takes it back.
pub fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Destroys a handle from [`into_handle`]. NULL is a no-op.
///
/// The last error message is left alone (C code often cleans up before it
/// reports). A panicking destructor is caught and recorded as
/// "a Rust panic was caught while freeing a {what}: {panic message}".
///
/// # Safety
///
/// `handle` is NULL or a pointer from [`into_handle`] for this `T`, not freed
/// before and not used afterwards.
pub unsafe fn free_handle<T>(handle: *mut T, what: &str) {
    if handle.is_null() {
        return;
    }
    let freed = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: non-NULL, from `Box::into_raw` in `into_handle`, and owned by
        // nobody else from now on (the caller's promise).
        drop(unsafe { Box::from_raw(handle) });
    }));
    if let Err(payload) = freed {
        set_last_error(&format!(
            "a Rust panic was caught while freeing a {what}: {}",
            panic_message(payload.as_ref())
        ));
        if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(again);
        }
    }
}

/// Hands a vector to C as `(pointer, length)`; [`free_array`] takes it back.
/// An empty vector gives a dangling non-NULL pointer and length 0.
pub fn into_array<T>(values: Vec<T>) -> (*mut T, usize) {
    let boxed = values.into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed).cast(), len)
}

/// Frees an array from [`into_array`]. NULL is a no-op.
///
/// # Safety
///
/// `ptr` is NULL or a pointer from [`into_array`] for this `T` with the
/// length it returned, not freed before and not used afterwards.
pub unsafe fn free_array<T>(ptr: *mut T, len: usize) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: from `Box::into_raw` of a boxed slice of `len` elements in
    // `into_array`, owned by nobody else from now on (the caller's promise).
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
}

/// A string returned to C: `INVALID_ARGUMENT` ("`what`: the returned string
/// contains a NUL byte") if it cannot be a C string. Hand it over with
/// [`CString::into_raw`]; [`free_string`] takes it back.
pub fn c_string<S: StatusCode>(value: String, what: &str) -> Result<CString, Failure<S>> {
    CString::new(value).map_err(|_| {
        Failure::invalid_argument(format!("{what}: the returned string contains a NUL byte"))
    })
}

/// Frees a string from [`c_string`] (through [`CString::into_raw`]). NULL is
/// a no-op.
///
/// # Safety
///
/// `s` is NULL or a pointer from [`CString::into_raw`], not freed before
/// and not used afterwards.
pub unsafe fn free_string(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    // SAFETY: from `CString::into_raw`, owned by nobody else from now on (the
    // caller's promise).
    drop(unsafe { CString::from_raw(s) });
}
