//! The built-in ops on `ug_array`s, each on a stream or (NULL) on the
//! default stream of its first array's context.
//!
//! fill and copy take all nine dtypes; the math ops take f32, f64, f16 and
//! bf16 (`UG_UNSUPPORTED` for integers). Every operand, scalars included,
//! must have the first operand's dtype (`UG_DTYPE_MISMATCH`) and matching
//! lengths (`UG_SIZE_MISMATCH`). Element-wise ops and matmul are
//! stream-ordered like kernels; the reductions wait for their result.
//! The arrays are locked and aliased by the bindings' one rule
//! (`unigpu::binding`, as in Python): an output may be one of the inputs
//! (`ug_op_add(s, x, y, x)` is `x += y`), the input reading a copy taken
//! first.

use unigpu::Ops;
use unigpu::binding::{self, Binary, CallError, Reduce, Unary};
use unigpu_capi_runtime as runtime;

use crate::array::ug_array;
use crate::locks;
use crate::status::{Out, Result, ug_status};
use crate::stream::ug_stream;
use crate::types::{scalar_arg, to_c_scalar, ug_scalar};

/// Runs `f` with the ops of `first`'s context on `stream` (NULL: the
/// context's default stream).
fn with_ops<R>(
    stream: Option<&ug_stream>,
    first: &ug_array,
    f: impl FnOnce(Ops<'_>) -> std::result::Result<R, CallError>,
) -> Result<R> {
    let ctx = locks::read(first, |a| Ok(a.context().clone()))?;
    match stream {
        Some(s) => f(ctx.ops_on(&s.stream)),
        None => f(ctx.ops()),
    }
    .map_err(locks::fail_call)
}

/// An optional stream argument.
///
/// # Safety
///
/// `stream` is NULL or a live stream.
unsafe fn stream_arg<'a>(stream: *const ug_stream) -> Option<&'a ug_stream> {
    // SAFETY: NULL or live (the caller's promise).
    unsafe { stream.as_ref() }
}

/// An array argument (`UG_NULL_ARGUMENT` naming `what` for NULL).
///
/// # Safety
///
/// `a` is NULL or a live array.
unsafe fn array_arg<'a>(a: *const ug_array, what: &str) -> Result<&'a ug_array> {
    // SAFETY: NULL or live (the caller's promise).
    unsafe { runtime::handle_ref(a, what) }
}

/// Sets every element of `x` to `value`, which must have `x`'s dtype.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` is NULL or a live array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_fill(
    stream: *const ug_stream,
    x: *mut ug_array,
    value: ug_scalar,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, x) = unsafe { (stream_arg(stream), array_arg(x, "x")?) };
        let value = scalar_arg(&value, "value.dtype")?;
        with_ops(s, x, |o| binding::fill(o, x.arg(), value))
    })
}

/// `dst = src` (any dtype, same dtype and length).
///
/// # Safety
///
/// `stream` is NULL or a live stream; `src` and `dst` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_copy(
    stream: *const ug_stream,
    src: *const ug_array,
    dst: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, src, dst) = unsafe {
            (
                stream_arg(stream),
                array_arg(src, "src")?,
                array_arg(dst, "dst")?,
            )
        };
        with_ops(s, src, |o| {
            binding::copy(o, [src.arg(), dst.arg()], ["src", "dst"])
        })
    })
}

/// The body of the binary element-wise ops.
///
/// # Safety
///
/// Each pointer is NULL or a live handle.
unsafe fn binary(
    stream: *const ug_stream,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
    op: Binary,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, a, b, out) = unsafe {
            (
                stream_arg(stream),
                array_arg(a, "a")?,
                array_arg(b, "b")?,
                array_arg(out, "out")?,
            )
        };
        with_ops(s, a, |o| {
            binding::binary(o, op, [a.arg(), b.arg(), out.arg()], ["a", "b", "out"])
        })
    })
}

/// `out = a + b`, element-wise.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_add(
    stream: *const ug_stream,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { binary(stream, a, b, out, Binary::Add) }
}

/// `out = a - b`, element-wise.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_sub(
    stream: *const ug_stream,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { binary(stream, a, b, out, Binary::Sub) }
}

/// `out = a * b`, element-wise.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_mul(
    stream: *const ug_stream,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { binary(stream, a, b, out, Binary::Mul) }
}

/// `y = alpha * x + y`, one fused multiply-add per element; `alpha` has
/// the arrays' dtype.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `y` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_axpy(
    stream: *const ug_stream,
    alpha: ug_scalar,
    x: *const ug_array,
    y: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, x, y) = unsafe { (stream_arg(stream), array_arg(x, "x")?, array_arg(y, "y")?) };
        let alpha = scalar_arg(&alpha, "alpha.dtype")?;
        with_ops(s, x, |o| {
            binding::axpy(o, alpha, [x.arg(), y.arg()], ["x", "y"])
        })
    })
}

/// `x = alpha * x`; `alpha` has `x`'s dtype.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` is NULL or a live array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_scale(
    stream: *const ug_stream,
    alpha: ug_scalar,
    x: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, x) = unsafe { (stream_arg(stream), array_arg(x, "x")?) };
        let alpha = scalar_arg(&alpha, "alpha.dtype")?;
        with_ops(s, x, |o| binding::scale(o, alpha, x.arg()))
    })
}

/// The body of the unary element-wise ops.
///
/// # Safety
///
/// Each pointer is NULL or a live handle.
unsafe fn unary(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_array,
    op: Unary,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, x, out) = unsafe {
            (
                stream_arg(stream),
                array_arg(x, "x")?,
                array_arg(out, "out")?,
            )
        };
        with_ops(s, x, |o| {
            binding::unary(o, op, [x.arg(), out.arg()], ["x", "out"])
        })
    })
}

/// `out = max(x, 0)`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_relu(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { unary(stream, x, out, Unary::Relu) }
}

/// `out = 1 / (1 + e^-x)`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_sigmoid(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { unary(stream, x, out, Unary::Sigmoid) }
}

/// `out = tanh(x)`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_tanh(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { unary(stream, x, out, Unary::Tanh) }
}

/// The body of the reductions: waits for the result and writes it to `out`
/// as a scalar of the arrays' dtype.
///
/// # Safety
///
/// Each pointer is NULL or a live handle; `out` is NULL or valid for writes.
unsafe fn reduce(
    stream: *const ug_stream,
    x: *const ug_array,
    y: Option<*const ug_array>,
    out: *mut ug_scalar,
    op: Reduce,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: the caller's promises (see # Safety).
        let (s, x) = unsafe { (stream_arg(stream), array_arg(x, "x")?) };
        let y = match y {
            // SAFETY: the caller's promise (see # Safety).
            Some(y) => unsafe { array_arg(y, "y") }?,
            None => x,
        };
        let result = with_ops(s, x, |o| {
            binding::reduce(o, op, [x.arg(), y.arg()], ["x", "y"])
        })?;
        out.write(to_c_scalar(result));
        Ok(())
    })
}

/// The sum of the elements (0 for an empty array), as a scalar of `x`'s
/// dtype; accumulated in f32 (f64 for f64) on CUDA, f64 on the CPU.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` is NULL or a live array; `out`
/// is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_sum(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_scalar,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { reduce(stream, x, None, out, Reduce::Sum) }
}

/// The largest element (NaNs ignored unless all are NaN), as a scalar of
/// `x`'s dtype. `UG_SIZE_MISMATCH` for an empty array.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` is NULL or a live array; `out`
/// is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_max(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_scalar,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { reduce(stream, x, None, out, Reduce::Max) }
}

/// `sum(x[i] * y[i])`, as a scalar of the arrays' dtype.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `y` are NULL or live arrays;
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_dot(
    stream: *const ug_stream,
    x: *const ug_array,
    y: *const ug_array,
    out: *mut ug_scalar,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { reduce(stream, x, Some(y), out, Reduce::Dot) }
}

/// `c = a · b` for row-major `a` (m×k), `b` (k×n) and `c` (m×n); cuBLAS on
/// CUDA. `UG_SIZE_MISMATCH` when a length does not fit its shape.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `c` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_matmul(
    stream: *const ug_stream,
    a: *const ug_array,
    b: *const ug_array,
    c: *mut ug_array,
    m: usize,
    k: usize,
    n: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, a, b, c) = unsafe {
            (
                stream_arg(stream),
                array_arg(a, "a")?,
                array_arg(b, "b")?,
                array_arg(c, "c")?,
            )
        };
        with_ops(s, a, |o| {
            binding::matmul(o, [a.arg(), b.arg(), c.arg()], ["a", "b", "c"], (m, k, n))
        })
    })
}
