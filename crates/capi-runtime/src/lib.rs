//! The C-ABI runtime of unigpu: what every `extern "C"` export needs, once.
//!
//! The tier-2 modules that `cargo xtask gen` writes (`ug_fixture_*`, `ug_cuda_rt_*`,
//! `ug_torch_*`) and the hand-written C API (`ug_*`) all sit on this crate.
//! Each keeps its own `#[repr(C)]` status enum with its own values and tells
//! the runtime which of its variants mean what by implementing
//! [`StatusCode`]. Everything else lives here:
//!
//! - [`Failure`]: a failed call (a status and a message), the error type of
//!   every export's body. Each tier converts its own errors into it with a
//!   `From` impl in its own crate (see [`Failure`]).
//! - [`guard`]: the panic boundary. It runs the body, turns a panic into
//!   [`StatusCode::PANIC`], records the message of a failure and clears it on
//!   success.
//! - The last error: [`set_last_error`], [`clear_last_error`],
//!   [`last_error`], and [`last_error_message`], which implements every
//!   `<prefix>_last_error_message(buf, len)` export.
//! - Argument checks that turn raw pointers into references only after
//!   checking them: [`out_arg`], [`handle_ref`], [`handle_mut`], [`str_arg`],
//!   [`check_buffer`], [`slice_arg`], [`slice_mut_arg`], [`distinct`],
//!   [`disjoint`].
//! - Values handed to C and taken back: [`into_handle`] / [`free_handle`],
//!   [`into_array`] / [`free_array`], [`c_string`] / [`free_string`].
//!
//! # Rules of this layer
//!
//! - Nothing panics across the C boundary. Export bodies run inside
//!   [`guard`]; the helpers that run outside it ([`last_error_message`], the
//!   frees, [`set_last_error`]) do not panic themselves, and [`free_handle`]
//!   catches a panicking destructor.
//! - Every raw pointer is checked before a reference is made from it: NULL
//!   gives `NULL_ARGUMENT`; a misaligned pointer, a length whose byte size
//!   exceeds `isize::MAX`, two handles that alias where one is mutable, and a
//!   written slice overlapping another slice give `INVALID_ARGUMENT`; a string
//!   that is not UTF-8 gives `INVALID_UTF8`. What cannot be checked (that
//!   memory is live and valid for its length) is the C caller's promise: each
//!   `unsafe fn` here states it in `# Safety`, and each export repeats it in
//!   its own.
//! - A successful call (through [`guard`]) clears the last error, a failed
//!   one replaces it; frees leave it alone (C code often cleans up before it
//!   reports), unless a destructor panics.
//! - The messages are part of the contract: C programs and tests compare
//!   them. Change them together with those tests.
//! - `unsafe` is allowed; each block says why it is sound in a `// SAFETY:`
//!   line. Only `std` is used.
//!
//! # One last-error slot
//!
//! The last error is one thread-local of this crate, so every tier linked
//! into one Rust artifact (a binary, a `cdylib` or a `staticlib`) shares it:
//! after a failed `ug_fixture_*` call, `ug_fixture_last_error_message` and
//! `ug_cuda_rt_last_error_message` both return its message, and a successful
//! call into any tier clears it. (Two separate Rust staticlibs linked into
//! one C program each carry their own copy of this crate, so each has its own
//! slot.)
//!
//! # Example
//!
//! ```
//! use std::ffi::{CString, c_char};
//! use unigpu_capi_runtime::{self as runtime, StatusCode};
//!
//! /// `ex_status` in C.
//! #[repr(C)]
//! #[derive(Debug, Clone, Copy, PartialEq, Eq)]
//! pub enum Status {
//!     Ok = 0,
//!     NullArgument = 1,
//!     InvalidArgument = 2,
//!     InvalidUtf8 = 3,
//!     Panic = 4,
//! }
//!
//! impl StatusCode for Status {
//!     const OK: Self = Self::Ok;
//!     const NULL_ARGUMENT: Self = Self::NullArgument;
//!     const INVALID_ARGUMENT: Self = Self::InvalidArgument;
//!     const INVALID_UTF8: Self = Self::InvalidUtf8;
//!     const PANIC: Self = Self::Panic;
//! }
//!
//! /// Writes the length of `name` in bytes to `out`.
//! ///
//! /// # Safety
//! ///
//! /// `name` is NULL or NUL-terminated; `out` is NULL or valid for writes.
//! pub unsafe extern "C" fn ex_name_len(name: *const c_char, out: *mut usize) -> Status {
//!     runtime::guard(|| {
//!         let out = runtime::out_arg(out, "out")?;
//!         // SAFETY: NULL or NUL-terminated (see # Safety).
//!         let name = unsafe { runtime::str_arg(name, "name") }?;
//!         // SAFETY: non-NULL and aligned (checked above), valid for writes (see # Safety).
//!         unsafe { out.write(name.len()) };
//!         Ok(())
//!     })
//! }
//!
//! /// `snprintf`-style copy of this thread's last error message.
//! ///
//! /// # Safety
//! ///
//! /// `buf` is NULL or valid for `len` writes.
//! pub unsafe extern "C" fn ex_last_error_message(buf: *mut c_char, len: usize) -> usize {
//!     // SAFETY: the caller's promise (see # Safety) is the runtime's contract.
//!     unsafe { runtime::last_error_message(buf, len) }
//! }
//!
//! let name = CString::new("héllo").unwrap();
//! let mut n = 0;
//! // SAFETY: a NUL-terminated string and a valid out-pointer.
//! assert_eq!(unsafe { ex_name_len(name.as_ptr(), &mut n) }, Status::Ok);
//! assert_eq!(n, 6);
//! // SAFETY: NULL is rejected before any access.
//! let status = unsafe { ex_name_len(std::ptr::null(), &mut n) };
//! assert_eq!(status, Status::NullArgument);
//! let mut buf = [0 as c_char; 64];
//! // SAFETY: `buf` is valid for 64 writes.
//! let len = unsafe { ex_last_error_message(buf.as_mut_ptr(), buf.len()) };
//! assert_eq!(len, "`name` is NULL".len());
//! ```

mod args;
mod last_error;
mod owned;

#[cfg(test)]
mod tests;

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use args::{
    check_buffer, disjoint, distinct, handle_mut, handle_ref, out_arg, slice_arg, slice_mut_arg,
    str_arg,
};
pub use last_error::{clear_last_error, last_error, last_error_message, set_last_error};
pub use owned::{c_string, free_array, free_handle, free_string, into_array, into_handle};

/// A C status enum, as the runtime sees it: which of its values mean
/// success and the failures the runtime itself detects.
///
/// Each C API implements it for its own `#[repr(C)]` enum, keeping its own
/// values (`UG_FIXTURE_OK = 0`, …) and any further codes of its own (`EXCEPTION`,
/// out of memory, …), which its [`Failure`]s may carry.
pub trait StatusCode: Copy {
    /// Success: the out-parameters were written.
    const OK: Self;
    /// A required pointer argument was NULL.
    const NULL_ARGUMENT: Self;
    /// An argument was malformed: a misaligned or aliased pointer, an
    /// oversized length, overlapping slices, a NUL in a returned string.
    const INVALID_ARGUMENT: Self;
    /// A string argument was not valid UTF-8.
    const INVALID_UTF8: Self;
    /// A Rust panic was caught at the boundary (a bug).
    const PANIC: Self;
}

/// A failed call: the status the export returns and the message
/// `<prefix>_last_error_message` copies out.
///
/// A tier turns its own error type into a `Failure` of its own status enum
/// with a `From` impl in its own crate, so that `?` works in an export's
/// body (the orphan rule allows it, since the error type is local there):
///
/// ```
/// # use unigpu_capi_runtime::{self as runtime, Failure, StatusCode};
/// # #[repr(C)]
/// # #[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// # pub enum Status { Ok, NullArgument, InvalidArgument, InvalidUtf8, Exception, Panic }
/// # impl StatusCode for Status {
/// #     const OK: Self = Self::Ok;
/// #     const NULL_ARGUMENT: Self = Self::NullArgument;
/// #     const INVALID_ARGUMENT: Self = Self::InvalidArgument;
/// #     const INVALID_UTF8: Self = Self::InvalidUtf8;
/// #     const PANIC: Self = Self::Panic;
/// # }
/// mod safe {
///     #[derive(Debug)]
///     pub struct Error(pub String);
///     impl std::fmt::Display for Error {
///         fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///             f.write_str(&self.0)
///         }
///     }
///     pub fn divide(a: i64, b: i64) -> Result<i64, Error> {
///         a.checked_div(b).ok_or_else(|| Error("division by zero".into()))
///     }
/// }
///
/// impl From<safe::Error> for Failure<Status> {
///     fn from(e: safe::Error) -> Self {
///         Self::new(Status::Exception, e.to_string())
///     }
/// }
///
/// let status = runtime::guard(|| {
///     safe::divide(1, 0)?;
///     Ok(())
/// });
/// assert_eq!(status, Status::Exception);
/// assert_eq!(runtime::last_error(), "division by zero");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure<S> {
    status: S,
    message: String,
}

impl<S: StatusCode> Failure<S> {
    /// A failure with this status and message.
    pub fn new(status: S, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// `NULL_ARGUMENT`: "`what` is NULL".
    pub fn null(what: &str) -> Self {
        Self::new(S::NULL_ARGUMENT, format!("`{what}` is NULL"))
    }

    /// `INVALID_ARGUMENT` with this message.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(S::INVALID_ARGUMENT, message)
    }

    /// The status the export returns.
    pub fn status(&self) -> S {
        self.status
    }

    /// The message recorded for the caller.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Records the message as this thread's last error and returns the
    /// status (what [`guard`] does with a failure).
    pub fn record(self) -> S {
        set_last_error(&self.message);
        self.status
    }
}

/// The message of a caught panic: its `&str` or `String` payload, or
/// "a non-string panic payload".
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a non-string panic payload"
    }
}

/// Runs an export's body: the panic boundary of every fallible export.
///
/// `Ok(())` clears the last error and returns [`StatusCode::OK`]; a
/// [`Failure`] is recorded and its status returned; a panic becomes
/// [`StatusCode::PANIC`] with "a Rust panic was caught at the C boundary:
/// {panic message}". A body must write its out-parameters only once nothing can
/// fail any more, so that a failed call writes nothing.
///
/// The body is treated as unwind safe: after a panic the caller gets
/// `PANIC`, which reports a bug, and the objects the body touched may be in
/// whatever state the panic left them.
pub fn guard<S: StatusCode>(call: impl FnOnce() -> Result<(), Failure<S>>) -> S {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(())) => {
            clear_last_error();
            S::OK
        }
        Ok(Err(failure)) => failure.record(),
        Err(payload) => {
            let failure = Failure::new(
                S::PANIC,
                format!(
                    "a Rust panic was caught at the C boundary: {}",
                    panic_message(payload.as_ref())
                ),
            );
            drop_payload(payload);
            failure.record()
        }
    }
}

/// Drops a panic payload without letting a panicking `Drop` of the payload
/// itself escape (a second payload is leaked rather than dropped).
fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}
