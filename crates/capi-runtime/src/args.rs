//! Checks that turn the raw pointers of an export's arguments into Rust
//! values: NULL, alignment, size, UTF-8, aliasing and overlap are checked
//! here; the rest (liveness, validity for the length) is the C caller's
//! promise, passed on through each function's `# Safety`.
//!
//! `what` names the C parameter in the message (`"`out` is NULL"`).

use std::ffi::{CStr, c_char};

use crate::{Failure, StatusCode};

/// Checks an out-parameter: non-NULL (`NULL_ARGUMENT`) and aligned
/// (`INVALID_ARGUMENT`). Returns it for writing once the call has succeeded.
pub fn out_arg<S: StatusCode, T>(p: *mut T, what: &str) -> Result<*mut T, Failure<S>> {
    if p.is_null() {
        Err(Failure::null(what))
    } else if !p.is_aligned() {
        Err(Failure::invalid_argument(format!("`{what}` is misaligned")))
    } else {
        Ok(p)
    }
}

/// A shared handle argument: NULL gives `NULL_ARGUMENT`.
///
/// # Safety
///
/// `p` is NULL or points to a live `T` that is not mutably borrowed for `'a`.
pub unsafe fn handle_ref<'a, S: StatusCode, T>(
    p: *const T,
    what: &str,
) -> Result<&'a T, Failure<S>> {
    // SAFETY: the caller's promise; `as_ref` turns NULL into `None`.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(what))
}

/// A mutable handle argument: NULL gives `NULL_ARGUMENT`. Check it against
/// the other handle arguments of its type with [`distinct`] first.
///
/// # Safety
///
/// `p` is NULL or points to a live `T` that is not otherwise borrowed for `'a`.
pub unsafe fn handle_mut<'a, S: StatusCode, T>(
    p: *mut T,
    what: &str,
) -> Result<&'a mut T, Failure<S>> {
    // SAFETY: the caller's promise; `as_mut` turns NULL into `None`.
    unsafe { p.as_mut() }.ok_or_else(|| Failure::null(what))
}

/// A NUL-terminated UTF-8 string argument: NULL gives `NULL_ARGUMENT`,
/// invalid UTF-8 `INVALID_UTF8`.
///
/// # Safety
///
/// `p` is NULL or a NUL-terminated string that stays live and unchanged for `'a`.
pub unsafe fn str_arg<'a, S: StatusCode>(
    p: *const c_char,
    what: &str,
) -> Result<&'a str, Failure<S>> {
    if p.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-NULL (checked), NUL-terminated and live for `'a` (the caller's promise).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|e| Failure::new(S::INVALID_UTF8, format!("`{what}` is not valid UTF-8: {e}")))
}

/// The checks of a non-empty `(p, len)` buffer: `p` non-NULL
/// (`NULL_ARGUMENT`), aligned for `T`, and `len` elements at most
/// `isize::MAX` bytes (`INVALID_ARGUMENT`, "`what_len` is too large").
pub fn check_buffer<S: StatusCode, T>(
    p: *const T,
    len: usize,
    what: &str,
) -> Result<(), Failure<S>> {
    if p.is_null() {
        Err(Failure::null(what))
    } else if !p.is_aligned() {
        Err(Failure::invalid_argument(format!("`{what}` is misaligned")))
    } else if len
        .checked_mul(size_of::<T>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        Err(Failure::invalid_argument(format!(
            "`{what}_len` is too large"
        )))
    } else {
        Ok(())
    }
}

/// An input slice argument `(p, len)`. With `len` 0 it is empty whatever `p`
/// is (NULL included); otherwise [`check_buffer`] applies.
///
/// # Safety
///
/// Unless `len` is 0, `p` is NULL or valid for `len` reads of `T`, and not
/// written, during `'a`.
pub unsafe fn slice_arg<'a, S: StatusCode, T>(
    p: *const T,
    len: usize,
    what: &str,
) -> Result<&'a [T], Failure<S>> {
    if len == 0 {
        return Ok(&[]);
    }
    check_buffer(p, len, what)?;
    // SAFETY: non-NULL, aligned and at most isize::MAX bytes (checked);
    // valid for `len` reads and not written during 'a (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// An output slice argument `(p, len)`. With `len` 0 it is empty whatever `p`
/// is (NULL included); otherwise [`check_buffer`] applies. Check it against
/// the other slice arguments with [`disjoint`] first.
///
/// # Safety
///
/// Unless `len` is 0, `p` is NULL or valid for `len` writes of `T`, and not
/// otherwise accessed, during `'a`.
pub unsafe fn slice_mut_arg<'a, S: StatusCode, T>(
    p: *mut T,
    len: usize,
    what: &str,
) -> Result<&'a mut [T], Failure<S>> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_buffer(p, len, what)?;
    // SAFETY: non-NULL, aligned and at most isize::MAX bytes (checked);
    // valid for `len` writes and not otherwise accessed during 'a (the
    // caller's promise).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// Two handle arguments of one type, one of them mutable, must not be the
/// same handle (`INVALID_ARGUMENT`). NULL is left to [`handle_ref`] /
/// [`handle_mut`].
pub fn distinct<S: StatusCode, T>(
    a: *const T,
    b: *const T,
    a_name: &str,
    b_name: &str,
) -> Result<(), Failure<S>> {
    if !a.is_null() && std::ptr::eq(a, b) {
        return Err(Failure::invalid_argument(format!(
            "`{a_name}` and `{b_name}` are the same handle, and one of them is mutable"
        )));
    }
    Ok(())
}

/// A written slice must not overlap another slice argument
/// (`INVALID_ARGUMENT`). Empty slices overlap nothing; a range whose end
/// overflows the address space is "too large".
pub fn disjoint<S: StatusCode, A, B>(
    a: *const A,
    a_len: usize,
    b: *const B,
    b_len: usize,
    a_name: &str,
    b_name: &str,
) -> Result<(), Failure<S>> {
    let range =
        |p: usize, bytes: Option<usize>| bytes.and_then(|n| p.checked_add(n)).map(|end| (p, end));
    let a_bytes = a_len.checked_mul(size_of::<A>());
    let b_bytes = b_len.checked_mul(size_of::<B>());
    if a_bytes == Some(0) || b_bytes == Some(0) {
        return Ok(());
    }
    match (range(a.addr(), a_bytes), range(b.addr(), b_bytes)) {
        (Some((a0, a1)), Some((b0, b1))) if a1 <= b0 || b1 <= a0 => Ok(()),
        (Some(_), Some(_)) => Err(Failure::invalid_argument(format!(
            "`{a_name}` and `{b_name}` overlap, and one of them is written"
        ))),
        _ => Err(Failure::invalid_argument(format!(
            "`{a_name}` or `{b_name}` is too large"
        ))),
    }
}
