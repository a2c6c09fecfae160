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
//!
//! The element-wise ops are also named by value: `ug_op_unary` with a
//! `ug_unary_op`, `ug_op_binary` with a `ug_binary_op`, `ug_op_compare`
//! with a `ug_compare_op` (a u8 mask out), which covers the ones without a
//! function of their own (`neg`, `exp`, `div`, `pow`, ...). Every one takes
//! views; those of two or more inputs broadcast them to the output's
//! shape (numpy's rule, as Python's).

use unigpu::Ops;
use unigpu::Scalar;
use unigpu::binding::{self, Binary, BinaryMath, CallError, Compare, Reduce, Unary, UnaryMath};
use unigpu_capi_runtime as runtime;
use unigpu_capi_runtime::Failure;

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

/// The element-wise ops of one input (`ug_op_unary`'s `op`, a `uint32_t`
/// holding one of these values). Computed in f32 for f16 and bf16 (f64 for
/// f64) and rounded once.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_unary_op {
    /// `max(x, 0)` (as `ug_op_relu`).
    Relu = 0,
    /// `1 / (1 + e^-x)` (as `ug_op_sigmoid`).
    Sigmoid = 1,
    /// As `ug_op_tanh`.
    Tanh = 2,
    /// `-x`.
    Neg = 3,
    /// `|x|`.
    Abs = 4,
    Floor = 5,
    Ceil = 6,
    /// To nearest, halves to even (numpy's and torch's `round`).
    Round = 7,
    /// `e^x`.
    Exp = 8,
    /// `ln x` (NaN below 0, -inf at 0).
    Log = 9,
    Sqrt = 10,
    /// `1 / sqrt(x)`.
    Rsqrt = 11,
    Sin = 12,
    Cos = 13,
    /// The tanh form, torch's `gelu(x, approximate="tanh")`.
    Gelu = 14,
    /// `x / (1 + e^-x)`.
    Silu = 15,
}

/// The element-wise ops of two inputs (`ug_op_binary`'s `op`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_binary_op {
    Add = 0,
    Sub = 1,
    Mul = 2,
    /// IEEE division (`x / 0` is ±inf, `0 / 0` NaN).
    Div = 3,
    /// The smaller element; NaN if either is NaN (numpy's `minimum`).
    Minimum = 4,
    /// The larger element; NaN if either is NaN (numpy's `maximum`).
    Maximum = 5,
    /// `a ** b` with C's `pow` special cases.
    Pow = 6,
}

/// The element-wise comparisons (`ug_op_compare`'s `op`); each gives a u8
/// mask of 0 and 1. A NaN compares unequal to everything (`NE` gives 1).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_compare_op {
    Lt = 0,
    Le = 1,
    Gt = 2,
    Ge = 3,
    Eq = 4,
    Ne = 5,
}

/// How `ug_op_unary` runs one `ug_unary_op`: the three older ops, or a
/// math op of the bindings.
enum UnaryKind {
    Plain(Unary),
    Math(UnaryMath),
}

/// A `ug_unary_op` value from C.
fn unary_op_arg(op: u32) -> Result<UnaryKind> {
    use UnaryKind::{Math, Plain};
    Ok(match op {
        0 => Plain(Unary::Relu),
        1 => Plain(Unary::Sigmoid),
        2 => Plain(Unary::Tanh),
        3 => Math(UnaryMath::Neg),
        4 => Math(UnaryMath::Abs),
        5 => Math(UnaryMath::Floor),
        6 => Math(UnaryMath::Ceil),
        7 => Math(UnaryMath::Round),
        8 => Math(UnaryMath::Exp),
        9 => Math(UnaryMath::Log),
        10 => Math(UnaryMath::Sqrt),
        11 => Math(UnaryMath::Rsqrt),
        12 => Math(UnaryMath::Sin),
        13 => Math(UnaryMath::Cos),
        14 => Math(UnaryMath::Gelu),
        15 => Math(UnaryMath::Silu),
        other => {
            return Err(Failure::invalid_argument(format!(
                "`op` is {other}, not a ug_unary_op value (0 to 15)"
            )));
        }
    })
}

/// `out = op(x)` element-wise for a `ug_unary_op` value `op`; `out` has
/// `x`'s shape (or both are 1-D of one length; `UG_SIZE_MISMATCH`
/// otherwise). `UG_INVALID_ARGUMENT` for an unknown `op`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_unary(
    stream: *const ug_stream,
    op: u32,
    x: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // Checked before the arrays: an unknown op is its own error.
        let kind = unary_op_arg(op)?;
        // SAFETY: the caller's promises (see # Safety).
        let (s, x, out) = unsafe {
            (
                stream_arg(stream),
                array_arg(x, "x")?,
                array_arg(out, "out")?,
            )
        };
        // No parameters: the math ops of this enum take none.
        let params = [Scalar::new(0u8), Scalar::new(0u8)];
        with_ops(s, x, |o| match kind {
            UnaryKind::Plain(op) => binding::unary(o, op, [x.arg(), out.arg()], ["x", "out"]),
            UnaryKind::Math(op) => {
                binding::unary_math(o, op, params, [x.arg(), out.arg()], ["x", "out"])
            }
        })
    })
}

/// The body of clamp and pow_scalar: `params` are C scalars (clamp's
/// bounds, pow_scalar's exponent twice), checked before anything runs.
///
/// # Safety
///
/// Each pointer is NULL or a live handle.
unsafe fn unary_math(
    stream: *const ug_stream,
    x: *const ug_array,
    out: *mut ug_array,
    op: UnaryMath,
    params: [(&ug_scalar, &str); 2],
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
        let [(a, na), (b, nb)] = params;
        let params = [scalar_arg(a, na)?, scalar_arg(b, nb)?];
        with_ops(s, x, |o| {
            binding::unary_math(o, op, params, [x.arg(), out.arg()], ["x", "out"])
        })
    })
}

/// `out = min(max(x, lo), hi)` element-wise, `out` of `x`'s shape
/// (torch's `clamp`: `lo > hi`
/// gives `hi`; a NaN gives NaN); `lo` and `hi` have `x`'s dtype
/// (`UG_DTYPE_MISMATCH`).
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_clamp(
    stream: *const ug_stream,
    x: *const ug_array,
    lo: ug_scalar,
    hi: ug_scalar,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        unary_math(
            stream,
            x,
            out,
            UnaryMath::Clamp,
            [(&lo, "lo.dtype"), (&hi, "hi.dtype")],
        )
    }
}

/// `out = x ** p` element-wise for a scalar `p` of `x`'s dtype, with C's
/// `pow` special cases; `out` of `x`'s shape.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_pow_scalar(
    stream: *const ug_stream,
    x: *const ug_array,
    p: ug_scalar,
    out: *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        unary_math(
            stream,
            x,
            out,
            UnaryMath::PowScalar,
            [(&p, "p.dtype"), (&p, "p.dtype")],
        )
    }
}

/// `out = op(a, b)` element-wise for a `ug_binary_op` value `op`, `a` and
/// `b` broadcast to `out`'s shape (numpy's rule; `UG_SIZE_MISMATCH` naming
/// the shapes when they do not broadcast). `out` may be `a` or `b`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `out` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_binary(
    stream: *const ug_stream,
    op: u32,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // Ok: one of the older three; Err: a math op of the bindings.
        let op = match op {
            0 => Ok(Binary::Add),
            1 => Ok(Binary::Sub),
            2 => Ok(Binary::Mul),
            3 => Err(BinaryMath::Div),
            4 => Err(BinaryMath::Minimum),
            5 => Err(BinaryMath::Maximum),
            6 => Err(BinaryMath::Pow),
            other => {
                return Err(Failure::invalid_argument(format!(
                    "`op` is {other}, not a ug_binary_op value (0 to 6)"
                )));
            }
        };
        // SAFETY: the caller's promises (see # Safety).
        let (s, a, b, out) = unsafe {
            (
                stream_arg(stream),
                array_arg(a, "a")?,
                array_arg(b, "b")?,
                array_arg(out, "out")?,
            )
        };
        let arrays = [a.arg(), b.arg(), out.arg()];
        let names = ["a", "b", "out"];
        with_ops(s, a, |o| match op {
            Ok(op) => binding::binary(o, op, arrays, names),
            Err(op) => binding::binary_math(o, op, arrays, names),
        })
    })
}

/// `mask = a op b` element-wise for a `ug_compare_op` value `op`: `mask`
/// is a u8 array of 0 and 1 (`UG_DTYPE_MISMATCH` otherwise), `a` and `b`
/// (a float dtype) broadcast to its shape.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `mask` are NULL or live
/// arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_compare(
    stream: *const ug_stream,
    op: u32,
    a: *const ug_array,
    b: *const ug_array,
    mask: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        let op = match op {
            0 => Compare::Lt,
            1 => Compare::Le,
            2 => Compare::Gt,
            3 => Compare::Ge,
            4 => Compare::Eq,
            5 => Compare::Ne,
            other => {
                return Err(Failure::invalid_argument(format!(
                    "`op` is {other}, not a ug_compare_op value (0 to 5)"
                )));
            }
        };
        // SAFETY: the caller's promises (see # Safety).
        let (s, a, b, mask) = unsafe {
            (
                stream_arg(stream),
                array_arg(a, "a")?,
                array_arg(b, "b")?,
                array_arg(mask, "mask")?,
            )
        };
        with_ops(s, a, |o| {
            binding::compare(o, op, [a.arg(), b.arg(), mask.arg()], ["a", "b", "mask"])
        })
    })
}

/// `out = mask != 0 ? a : b` element-wise (numpy's `where`): `mask` u8,
/// `a`, `b` and `out` of one float dtype, the three inputs broadcast to
/// `out`'s shape. `out` may be `a` or `b`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `mask`, `a`, `b`, `out` are NULL or
/// live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_where(
    stream: *const ug_stream,
    mask: *const ug_array,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: the caller's promises (see # Safety).
        let (s, mask, a, b, out) = unsafe {
            (
                stream_arg(stream),
                array_arg(mask, "mask")?,
                array_arg(a, "a")?,
                array_arg(b, "b")?,
                array_arg(out, "out")?,
            )
        };
        with_ops(s, a, |o| {
            binding::where_(
                o,
                [mask.arg(), a.arg(), b.arg(), out.arg()],
                ["mask", "a", "b", "out"],
            )
        })
    })
}
