//! `ug_status`, the facade's errors as statuses, the last error message,
//! strings handed to C, and the panic test hook.

use std::ffi::{CStr, c_char};

use unigpu::Error;
use unigpu::binding::ErrorKind;
use unigpu_capi_runtime::{self as runtime, Failure, StatusCode};

/// The result of every fallible call. `UG_OK` means success and the
/// out-parameters were written; any other value means nothing was written
/// and `ug_last_error_message` returns the message.
/// cbindgen:prefix-with-name=false
/// cbindgen:rename-all=prefix:UG_
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_status {
    /// Success; out-parameters were written.
    OK = 0,
    /// A required pointer argument was NULL.
    NULL_ARGUMENT = 1,
    /// An argument was malformed: an unknown enum value, a misaligned
    /// pointer, an array written twice in one call, a bad grid.
    INVALID_ARGUMENT = 2,
    /// A string argument was not valid UTF-8.
    INVALID_UTF8 = 3,
    /// A Rust panic was caught at the boundary (a bug in unigpu).
    PANIC = 4,
    /// The device could not satisfy an allocation; the context stays usable.
    OUT_OF_MEMORY = 5,
    /// A device id past the end of the backend's device list.
    INVALID_DEVICE = 6,
    /// The backend cannot run here (no driver, no device, not built in).
    BACKEND_UNAVAILABLE = 7,
    /// Kernel source that did not compile; the message holds the log.
    COMPILE = 8,
    /// Launch arguments that do not fit the kernel, or no such kernel.
    KERNEL_ARGS = 9,
    /// The backend cannot do this (a kernel without a CPU implementation
    /// on the CPU backend, a math op on integers).
    UNSUPPORTED = 10,
    /// Operands or buffers of different sizes.
    SIZE_MISMATCH = 11,
    /// An operand or scalar of another element type than the call needs.
    DTYPE_MISMATCH = 12,
    /// Handles from different contexts or backends mixed in one call.
    CONTEXT_MISMATCH = 13,
    /// A bad configuration file or `UNIGPU_*` environment variable.
    CONFIG = 14,
    /// Work enqueued on a stream failed (reported by the next sync).
    STREAM_WORK = 15,
    /// A torch error not covered above (torch backend).
    TORCH = 16,
    /// A CUDA driver status not covered above.
    DRIVER = 17,
    /// An error of a kind this version of the C API does not name yet.
    OTHER = 18,
    /// A DLPack tensor that cannot be imported, or an array that cannot be
    /// exported as asked; the message says why. The tensor was deleted.
    DLPACK = 19,
    /// Precompiled code (`ug_module_load`) that is not what its kind says,
    /// is truncated, or has no code this device runs; the message says
    /// which, with the device's architecture.
    IMAGE = 20,
    /// A collective or a communicator wait that failed in the library that
    /// runs it (NCCL) or passed its deadline; the communicator was aborted
    /// and every later call on it fails.
    COLLECTIVE = 21,
}

impl StatusCode for ug_status {
    const OK: Self = ug_status::OK;
    const NULL_ARGUMENT: Self = ug_status::NULL_ARGUMENT;
    const INVALID_ARGUMENT: Self = ug_status::INVALID_ARGUMENT;
    const INVALID_UTF8: Self = ug_status::INVALID_UTF8;
    const PANIC: Self = ug_status::PANIC;
}

/// Every status, in value order.
const ALL_STATUSES: [ug_status; 22] = [
    ug_status::OK,
    ug_status::NULL_ARGUMENT,
    ug_status::INVALID_ARGUMENT,
    ug_status::INVALID_UTF8,
    ug_status::PANIC,
    ug_status::OUT_OF_MEMORY,
    ug_status::INVALID_DEVICE,
    ug_status::BACKEND_UNAVAILABLE,
    ug_status::COMPILE,
    ug_status::KERNEL_ARGS,
    ug_status::UNSUPPORTED,
    ug_status::SIZE_MISMATCH,
    ug_status::DTYPE_MISMATCH,
    ug_status::CONTEXT_MISMATCH,
    ug_status::CONFIG,
    ug_status::STREAM_WORK,
    ug_status::TORCH,
    ug_status::DRIVER,
    ug_status::OTHER,
    ug_status::DLPACK,
    ug_status::IMAGE,
    ug_status::COLLECTIVE,
];

impl ug_status {
    /// The C name, as a NUL-terminated string.
    pub fn name(self) -> &'static CStr {
        match self {
            ug_status::OK => c"UG_OK",
            ug_status::NULL_ARGUMENT => c"UG_NULL_ARGUMENT",
            ug_status::INVALID_ARGUMENT => c"UG_INVALID_ARGUMENT",
            ug_status::INVALID_UTF8 => c"UG_INVALID_UTF8",
            ug_status::PANIC => c"UG_PANIC",
            ug_status::OUT_OF_MEMORY => c"UG_OUT_OF_MEMORY",
            ug_status::INVALID_DEVICE => c"UG_INVALID_DEVICE",
            ug_status::BACKEND_UNAVAILABLE => c"UG_BACKEND_UNAVAILABLE",
            ug_status::COMPILE => c"UG_COMPILE",
            ug_status::KERNEL_ARGS => c"UG_KERNEL_ARGS",
            ug_status::UNSUPPORTED => c"UG_UNSUPPORTED",
            ug_status::SIZE_MISMATCH => c"UG_SIZE_MISMATCH",
            ug_status::DTYPE_MISMATCH => c"UG_DTYPE_MISMATCH",
            ug_status::CONTEXT_MISMATCH => c"UG_CONTEXT_MISMATCH",
            ug_status::CONFIG => c"UG_CONFIG",
            ug_status::STREAM_WORK => c"UG_STREAM_WORK",
            ug_status::TORCH => c"UG_TORCH",
            ug_status::DRIVER => c"UG_DRIVER",
            ug_status::OTHER => c"UG_OTHER",
            ug_status::DLPACK => c"UG_DLPACK",
            ug_status::IMAGE => c"UG_IMAGE",
            ug_status::COLLECTIVE => c"UG_COLLECTIVE",
        }
    }
}

/// What an export's body returns.
pub(crate) type Result<T = ()> = std::result::Result<T, Failure<ug_status>>;

/// The status for a facade error: a table over the kinds the bindings
/// share (`unigpu::binding::ErrorKind`; Python's exception classes are
/// the other table).
pub(crate) fn status_of(e: &Error) -> ug_status {
    status_of_kind(ErrorKind::of(e))
}

/// The status of each error kind.
pub(crate) fn status_of_kind(kind: ErrorKind) -> ug_status {
    match kind {
        ErrorKind::InvalidArgument => ug_status::INVALID_ARGUMENT,
        ErrorKind::OutOfMemory => ug_status::OUT_OF_MEMORY,
        ErrorKind::InvalidDevice => ug_status::INVALID_DEVICE,
        ErrorKind::BackendUnavailable => ug_status::BACKEND_UNAVAILABLE,
        ErrorKind::Compile => ug_status::COMPILE,
        ErrorKind::KernelArgs => ug_status::KERNEL_ARGS,
        ErrorKind::Unsupported => ug_status::UNSUPPORTED,
        ErrorKind::SizeMismatch => ug_status::SIZE_MISMATCH,
        ErrorKind::DTypeMismatch => ug_status::DTYPE_MISMATCH,
        ErrorKind::ContextMismatch => ug_status::CONTEXT_MISMATCH,
        ErrorKind::Config => ug_status::CONFIG,
        ErrorKind::StreamWork => ug_status::STREAM_WORK,
        ErrorKind::Torch => ug_status::TORCH,
        ErrorKind::Driver => ug_status::DRIVER,
        ErrorKind::Dlpack => ug_status::DLPACK,
        ErrorKind::Image => ug_status::IMAGE,
        ErrorKind::Collective => ug_status::COLLECTIVE,
        _ => ug_status::OTHER,
    }
}

/// A facade error as a failure: its status and its `Display` message, in
/// the C API's words where the facade's name Rust (issue 25): the
/// operation named as the `ug_*` function a C caller called, not
/// `AnyArray::download_bytes`, and a byte count called bytes, not
/// elements.
pub(crate) fn fail(e: Error) -> Failure<ug_status> {
    let status = status_of(&e);
    let message = match &e {
        Error::SizeMismatch {
            what,
            expected,
            actual,
        } => {
            let (what, unit) = c_what(what);
            format!("size mismatch in {what}: expected {expected} {unit}, got {actual}")
        }
        Error::DTypeMismatch {
            what,
            expected,
            actual,
        } => format!(
            "dtype mismatch in {}: expected {expected}, got {actual}",
            c_what(what).0
        ),
        Error::ContextMismatch { what } => format!(
            "{}: the operands belong to different contexts or backends",
            c_what(what).0
        ),
        _ => e.to_string(),
    };
    Failure::new(status, message)
}

/// The C function a facade error's `what` (`Type::method (operand)`)
/// stands for, and the unit of its sizes: `bytes` for the byte-slice
/// methods behind `ug_array_upload`, `ug_array_upload_from` and
/// `ug_array_download`, `elements` otherwise. A `what` that names no Rust
/// method is kept as it is.
pub(crate) fn c_what(what: &str) -> (String, &'static str) {
    let (call, operand) = match what.split_once(' ') {
        Some((call, rest)) => (call, Some(rest)),
        None => (what, None),
    };
    let Some((ty, method)) = call.split_once("::") else {
        return (what.to_owned(), "elements");
    };
    let (function, unit) = match (ty, method) {
        ("AnyArray", "from_bytes") => ("ug_array_upload".to_owned(), "bytes"),
        ("AnyArray", "upload_bytes") => ("ug_array_upload_from".to_owned(), "bytes"),
        ("AnyArray", "download_bytes") => ("ug_array_download".to_owned(), "bytes"),
        // `ug_array_copy` copies on a stream (the default one).
        ("AnyArray" | "GpuArray", "copy_to") | ("Stream", "copy") => {
            ("ug_array_copy".to_owned(), "elements")
        }
        ("AnyArray" | "GpuArray", "download" | "download_into") => {
            ("ug_array_download".to_owned(), "elements")
        }
        ("AnyArray" | "GpuArray", "upload_from") => ("ug_array_upload_from".to_owned(), "elements"),
        ("AnyArray" | "GpuArray", m) => (format!("ug_array_{m}"), "elements"),
        (t, m) => (format!("ug_{}_{m}", t.to_lowercase()), "elements"),
    };
    let operand = match operand {
        // "(bytes)" is the byte buffer: `size_bytes` in the C signatures.
        Some("(bytes)") => " (`size_bytes`)".to_owned(),
        Some(o) => format!(" {o}"),
        None => String::new(),
    };
    (format!("{function}{operand}"), unit)
}

/// `?` for facade results inside an export's body (the orphan rule forbids
/// `From<unigpu::Error> for Failure<ug_status>`).
pub(crate) trait OrStatus<T> {
    fn or_status(self) -> Result<T>;
}

impl<T> OrStatus<T> for unigpu::Result<T> {
    fn or_status(self) -> Result<T> {
        self.map_err(fail)
    }
}

/// A checked out-parameter: non-NULL, aligned, and (the C caller's
/// promise, made to [`Out::new`]) valid for writes during the call.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `p` with [`runtime::out_arg`]: `UG_NULL_ARGUMENT` for NULL,
    /// `UG_INVALID_ARGUMENT` when misaligned.
    ///
    /// # Safety
    ///
    /// `p` is NULL or valid for writes of a `T` until the export returns.
    pub(crate) unsafe fn new(p: *mut T, what: &str) -> Result<Out<T>> {
        Ok(Out(runtime::out_arg(p, what)?))
    }

    /// Writes the result. Call it last, once nothing can fail any more, so
    /// that a failed call writes nothing.
    pub(crate) fn write(self, value: T) {
        // SAFETY: non-NULL and aligned (checked in `new`), valid for writes
        // (the promise made to `new`).
        unsafe { self.0.write(value) }
    }
}

/// Copies this thread's last error message into `buf`, like `snprintf`: at
/// most `len - 1` bytes and a NUL. Returns the message's full length in
/// bytes (without the NUL), 0 when the last call on this thread succeeded.
/// `buf` may be NULL (or `len` 0) to ask for the length first.
///
/// One message is kept per thread, shared with the `ug_torch_*` and
/// `ug_cuda_rt_*` functions of the same library. A successful call clears it; a
/// `_free` leaves it alone.
///
/// # Safety
///
/// `buf` is NULL or valid for `len` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_last_error_message(buf: *mut c_char, len: usize) -> usize {
    // SAFETY: the caller's promise (see # Safety) is the runtime's contract.
    unsafe { runtime::last_error_message(buf, len) }
}

/// The name of a status value ("UG_OK", "UG_SIZE_MISMATCH", ...), or
/// "UG_UNKNOWN_STATUS" for a value that is not one. The string is static:
/// do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn ug_status_name(status: i32) -> *const c_char {
    ALL_STATUSES
        .iter()
        .find(|s| **s as i32 == status)
        .map_or(c"UG_UNKNOWN_STATUS", |s| s.name())
        .as_ptr()
}

/// Frees a string returned by this library (`char**` out-parameters).
/// NULL is a no-op.
///
/// # Safety
///
/// `s` is NULL or a string this library returned, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_string_free(s: *mut c_char) {
    // SAFETY: the caller's promise (see # Safety) is the runtime's contract.
    unsafe { runtime::free_string(s) }
}

/// Hands a Rust string to C through an out-parameter (freed with
/// `ug_string_free`).
pub(crate) fn write_string(out: Out<*mut c_char>, value: String, what: &str) -> Result {
    let s = runtime::c_string(value, what)?;
    out.write(s.into_raw());
    Ok(())
}

/// Panics inside Rust on purpose, within the same boundary as every other
/// function, and so returns `UG_PANIC` with "a Rust panic was caught at the
/// C boundary: <message>" as the last error. It has no other effect.
///
/// It exists so that programs and language bindings can test how they
/// handle `UG_PANIC` (which otherwise only a bug in unigpu produces); the
/// process never aborts. `message` may be NULL.
///
/// # Safety
///
/// `message` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_test_panic(message: *const c_char) -> ug_status {
    runtime::guard(|| {
        let message = if message.is_null() {
            "ug_test_panic"
        } else {
            // SAFETY: non-NULL, NUL-terminated (see # Safety).
            unsafe { runtime::str_arg(message, "message") }?
        };
        std::panic::panic_any(message.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::c_what;

    /// The facade's names for the calls a C caller makes come out as
    /// functions the header declares, with the unit of their sizes.
    #[test]
    fn rust_names_become_the_c_functions_the_header_declares() {
        let header = include_str!("../../../include/unigpu.h");
        for (what, function, unit) in [
            (
                "AnyArray::download_bytes (bytes)",
                "ug_array_download (`size_bytes`)",
                "bytes",
            ),
            (
                "AnyArray::upload_bytes (bytes)",
                "ug_array_upload_from (`size_bytes`)",
                "bytes",
            ),
            ("AnyArray::from_bytes", "ug_array_upload", "bytes"),
            ("AnyArray::copy_to (dst)", "ug_array_copy (dst)", "elements"),
            ("GpuArray::copy_to", "ug_array_copy", "elements"),
            ("Stream::copy", "ug_array_copy", "elements"),
            ("GpuArray::to_dlpack", "ug_array_to_dlpack", "elements"),
            (
                "Stream::upload_pinned (dst)",
                "ug_stream_upload_pinned (dst)",
                "elements",
            ),
            (
                "Stream::download_pinned (dst)",
                "ug_stream_download_pinned (dst)",
                "elements",
            ),
            ("Stream::wait", "ug_stream_wait", "elements"),
            ("Stream::prefetch", "ug_stream_prefetch", "elements"),
            ("Event::record", "ug_event_record", "elements"),
            ("Event::elapsed_ms", "ug_event_elapsed_ms", "elements"),
            ("Graph::launch", "ug_graph_launch", "elements"),
        ] {
            assert_eq!(c_what(what), (function.to_owned(), unit), "{what}");
            let name = function.split(' ').next().unwrap();
            assert!(
                header.contains(&format!(" {name}(")),
                "{what} -> {name}, which unigpu.h does not declare"
            );
        }
        // What names no Rust method stays as it is.
        assert_eq!(c_what("add"), ("add".to_owned(), "elements"));
        assert_eq!(
            c_what("matmul a (rows)"),
            ("matmul a (rows)".to_owned(), "elements")
        );
    }
}
