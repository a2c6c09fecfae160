//! Kernels implemented in C for the CPU backend: a C function pointer
//! becomes a kernel's CPU implementation and receives the launch's
//! arguments as scalars and raw host pointers.

use std::ffi::{CStr, c_char, c_void};

use unigpu::kernel::{CpuArgKind, CpuArgs, CpuBytes, CpuBytesMut};
use unigpu::{Error, Kernel};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::kernel::{ug_grid, ug_kernel};
use crate::status::{Out, ug_status, ug_status_name};
use crate::types::{to_c_scalar, ug_arg_kind, ug_dtype, ug_value};

/// One argument of a launch, as a C CPU implementation sees it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ug_cpu_arg {
    /// What the argument is.
    pub kind: ug_arg_kind,
    /// The scalar's or the array's element type.
    pub dtype: ug_dtype,
    /// The scalar's value (`UG_ARG_KIND_SCALAR` only).
    pub value: ug_value,
    /// The array's elements on the host (`UG_ARG_KIND_ARRAY_IN` and
    /// `_ARRAY_OUT`); NULL for scalars. Valid until the function returns.
    pub data: *const c_void,
    /// The same pointer, writable, for `UG_ARG_KIND_ARRAY_OUT`; NULL
    /// otherwise (an input must not be written).
    pub data_mut: *mut c_void,
    /// The array's length in elements; 0 for scalars.
    pub len: usize,
}

impl std::fmt::Debug for ug_cpu_arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ug_cpu_arg")
            .field("kind", &self.kind)
            .field("dtype", &self.dtype)
            .field("data", &self.data)
            .field("len", &self.len)
            .finish()
    }
}

/// A kernel's CPU implementation written in C. It receives the launch's
/// `n_args` arguments, its grid (for implementations that use it) and the
/// `user_data` given with it, runs the kernel's work over the host arrays,
/// and returns 0 (`UG_OK`) on success. Any other value fails the launch:
/// the next sync of the stream returns `UG_STREAM_WORK` with a message
/// naming the kernel, the value and the NUL-terminated text the function
/// may write into `message` (`message_len` bytes, zeroed before the call).
///
/// It runs on the stream's worker thread, after the work its arrays depend
/// on, so it must be safe to call from any thread, and must not call back
/// into unigpu.
#[allow(non_camel_case_types)]
pub type ug_cpu_kernel_fn = Option<
    unsafe extern "C" fn(
        args: *const ug_cpu_arg,
        n_args: usize,
        grid: *const ug_grid,
        user_data: *mut c_void,
        message: *mut c_char,
        message_len: usize,
    ) -> i32,
>;

/// Frees the `user_data` of a C CPU implementation; called once, when the
/// last kernel handle and queued launch using it are gone.
#[allow(non_camel_case_types)]
pub type ug_free_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The bytes a failing C implementation may write its message into.
const MESSAGE_LEN: usize = 256;

/// A C function with its user data, as a kernel's CPU implementation.
struct CImpl {
    f: unsafe extern "C" fn(
        *const ug_cpu_arg,
        usize,
        *const ug_grid,
        *mut c_void,
        *mut c_char,
        usize,
    ) -> i32,
    user_data: *mut c_void,
    free: ug_free_fn,
}

// SAFETY: `ug_kernel_cpu` and `ug_kernel_with_cpu` document that the
// function and `user_data` must be usable from any thread (the stream's
// worker calls it); the pointer itself is only handed back to C.
unsafe impl Send for CImpl {}
// SAFETY: as for `Send`: concurrent calls are the C function's contract.
unsafe impl Sync for CImpl {}

impl Drop for CImpl {
    fn drop(&mut self) {
        if let Some(free) = self.free {
            // SAFETY: `free` and `user_data` came together from C, which
            // promised that `free(user_data)` may be called once, from any
            // thread; this is the one time (the implementation is dropped once).
            unsafe { free(self.user_data) }
        }
    }
}

impl CImpl {
    fn call(&self, a: &CpuArgs) -> unigpu::Result<()> {
        // The host memory of the array arguments, locked while `f` runs.
        let mut reads: Vec<CpuBytes<'_>> = Vec::new();
        let mut writes: Vec<CpuBytesMut<'_>> = Vec::new();
        let mut args = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            let arg = match a.kind(i) {
                Some(CpuArgKind::Scalar(s)) => {
                    let c = to_c_scalar(s);
                    ug_cpu_arg {
                        kind: ug_arg_kind::Scalar,
                        dtype: ug_dtype::from_facade(s.dtype()),
                        value: c.value,
                        data: std::ptr::null(),
                        data_mut: std::ptr::null_mut(),
                        len: 0,
                    }
                }
                Some(CpuArgKind::Array { dtype, writable }) => {
                    let size = dtype.size_bytes();
                    let (kind, data, data_mut, bytes) = if writable {
                        let mut b = a.bytes_mut(i)?;
                        let p = b.as_mut_ptr();
                        let n = b.len();
                        writes.push(b);
                        (ug_arg_kind::ArrayOut, p.cast_const(), p, n)
                    } else {
                        let b = a.bytes(i)?;
                        let p = b.as_ptr();
                        let n = b.len();
                        reads.push(b);
                        (ug_arg_kind::ArrayIn, p, std::ptr::null_mut(), n)
                    };
                    ug_cpu_arg {
                        kind,
                        dtype: ug_dtype::from_facade(dtype),
                        value: ug_value { u64: 0 },
                        data: data.cast(),
                        data_mut: data_mut.cast(),
                        len: bytes / size,
                    }
                }
                None => break,
            };
            args.push(arg);
        }
        let grid = ug_grid::from_facade(a.grid());
        let mut message = [0 as c_char; MESSAGE_LEN];
        // SAFETY: `args` holds `args.len()` initialized entries whose array
        // pointers point into host memory kept locked by `reads` and `writes` (written
        // ones through write locks) until after the call; `grid` and
        // `message` are live locals. The C function's own contract is the
        // C caller's promise (ug_kernel_cpu's # Safety).
        let code = unsafe {
            (self.f)(
                args.as_ptr(),
                args.len(),
                &grid,
                self.user_data,
                message.as_mut_ptr(),
                MESSAGE_LEN,
            )
        };
        drop((reads, writes));
        if code == 0 {
            return Ok(());
        }
        message[MESSAGE_LEN - 1] = 0;
        // SAFETY: NUL-terminated: the last byte was just set to 0.
        let text = unsafe { CStr::from_ptr(message.as_ptr()) }.to_string_lossy();
        // SAFETY: `ug_status_name` returns a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(ug_status_name(code)) }.to_string_lossy();
        let name = if name == "UG_UNKNOWN_STATUS" {
            String::new()
        } else {
            format!(" ({name})")
        };
        let detail = if text.is_empty() {
            String::new()
        } else {
            format!(": {text}")
        };
        Err(Error::StreamWork {
            message: format!("the C CPU implementation returned {code}{name}{detail}"),
        })
    }
}

/// Takes the function pointer and user data from C, or fails with nothing
/// taken (so C still owns `user_data`).
fn c_impl(
    f: ug_cpu_kernel_fn,
    user_data: *mut c_void,
    free: ug_free_fn,
) -> Result<CImpl, Failure<ug_status>> {
    let f = f.ok_or_else(|| Failure::null("func"))?;
    Ok(CImpl { f, user_data, free })
}

/// A kernel called `name` with only a CPU implementation, the C function
/// `func`: a C program's way to run its own kernels on the CPU backend. The
/// arguments are not checked against a declaration (there is none); the
/// function sees them as launched. On another backend its launch fails with
/// `UG_UNSUPPORTED`.
///
/// On success the kernel owns `user_data` and calls `free_user_data(user_data)`
/// (when not NULL) once, when the last handle and queued launch using it
/// are gone; on failure nothing is called and `user_data` stays the caller's.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `out` is NULL or valid for
/// writes. `func` and `free_user_data` must be safe to call from any thread
/// with `user_data`, and `func` must honour the `ug_cpu_kernel_fn` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_kernel_cpu(
    name: *const c_char,
    func: ug_cpu_kernel_fn,
    user_data: *mut c_void,
    free_user_data: ug_free_fn,
    out: *mut *mut ug_kernel,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or NUL-terminated (see # Safety).
        let name = unsafe { runtime::str_arg(name, "name") }?;
        let imp = c_impl(func, user_data, free_user_data)?;
        let kernel = Kernel::cpu_only(name, None, move |a: &CpuArgs| imp.call(a));
        out.write(runtime::into_handle(ug_kernel { kernel }));
        Ok(())
    })
}

/// A new kernel handle: `kernel` with the C function `func` as its CPU
/// implementation (used on the CPU backend; CUDA still runs the compiled
/// kernel). The declaration read from the source still checks every launch.
/// `kernel` itself is unchanged. Ownership of `user_data` as for
/// `ug_kernel_cpu`.
///
/// # Safety
///
/// `kernel` is NULL or a live kernel; `out` is NULL or valid for writes.
/// `func` and `free_user_data` as for `ug_kernel_cpu`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_kernel_with_cpu(
    kernel: *const ug_kernel,
    func: ug_cpu_kernel_fn,
    user_data: *mut c_void,
    free_user_data: ug_free_fn,
    out: *mut *mut ug_kernel,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let kernel = unsafe { runtime::handle_ref(kernel, "kernel") }?;
        let imp = c_impl(func, user_data, free_user_data)?;
        let kernel = kernel
            .kernel
            .clone()
            .with_cpu(move |a: &CpuArgs| imp.call(a));
        out.write(runtime::into_handle(ug_kernel { kernel }));
        Ok(())
    })
}
