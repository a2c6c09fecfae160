//! Arrays made with contents (`ug_array_ones`, `_full`, `_arange`,
//! `_linspace`, `_eye`), like another (`ug_array_zeros_like` ...), and
//! cast (`ug_array_astype`). The facade's `AnyArray` creators do the work,
//! the same ones Python's `Context.full` ... call, on the context's
//! default stream; a new array is contiguous.

use unigpu::{AnyArray, DType};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::array::{byte_len, new_array, ug_array};
use crate::context::ug_context;
use crate::locks;
use crate::shape::{shape_arg, unigpu_core_count};
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::types::{dtype_arg, scalar_arg, ug_scalar};

/// A shape from C whose element count and byte size of `dtype` fit.
///
/// # Safety
///
/// `shape` is NULL or valid for reads of `ndim` values.
unsafe fn sized_shape(dtype: DType, shape: *const usize, ndim: usize) -> Result<Vec<usize>> {
    // SAFETY: the caller's promise.
    let shape = unsafe { shape_arg(shape, ndim, "shape") }?;
    byte_len(dtype, unigpu_core_count(&shape)?)?;
    Ok(shape)
}

/// An array of `shape` (`ndim` extents, row-major) and `dtype` holding
/// ones (numpy's `ones`).
///
/// # Safety
///
/// `ctx` is NULL or a live context; `shape` is NULL or valid for reads of
/// `ndim` values (NULL only when `ndim` is 0); `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_ones(
    ctx: *const ug_context,
    dtype: u32,
    shape: *const usize,
    ndim: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let dtype = dtype_arg(dtype, "dtype")?;
            // SAFETY: NULL or valid for `ndim` reads (see # Safety).
            let shape = sized_shape(dtype, shape, ndim)?;
            AnyArray::ones(c, dtype, shape).or_status()
        })
    }
}

/// An array of `shape` (`ndim` extents) with every element `value`, of
/// `value`'s dtype (numpy's `full`).
///
/// # Safety
///
/// As `ug_array_ones`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_full(
    ctx: *const ug_context,
    shape: *const usize,
    ndim: usize,
    value: ug_scalar,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let value = scalar_arg(&value, "value.dtype")?;
            // SAFETY: NULL or valid for `ndim` reads (see # Safety).
            let shape = sized_shape(value.dtype(), shape, ndim)?;
            AnyArray::full(c, shape, value).or_status()
        })
    }
}

/// numpy's `arange(start, stop, step)` of `dtype`, 1-D:
/// `ceil((stop - start) / step)` elements (none when that is not
/// positive), computed in double then cast to `dtype` as
/// `ug_array_astype` casts. `UG_KERNEL_ARGS` for a step of 0, an argument
/// that is NaN or infinite, or more than 2^32 - 1 elements.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_arange(
    ctx: *const ug_context,
    dtype: u32,
    start: f64,
    stop: f64,
    step: f64,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let dtype = dtype_arg(dtype, "dtype")?;
            AnyArray::arange(c, dtype, start, stop, step).or_status()
        })
    }
}

/// numpy's `linspace(start, stop, num)` of `dtype`, 1-D: `num` values
/// evenly spaced from `start` to `stop`, both included (`num` 1:
/// `[start]`), computed in double; integer dtypes take the floor, then
/// the cast. `UG_KERNEL_ARGS` for a NaN or infinite bound or `num` above
/// 2^32 - 1.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_linspace(
    ctx: *const ug_context,
    dtype: u32,
    start: f64,
    stop: f64,
    num: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let dtype = dtype_arg(dtype, "dtype")?;
            AnyArray::linspace(c, dtype, start, stop, num).or_status()
        })
    }
}

/// A `rows` × `cols` array of `dtype` with ones on the main diagonal and
/// zeros elsewhere (numpy's `eye(rows, cols)`).
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_eye(
    ctx: *const ug_context,
    dtype: u32,
    rows: usize,
    cols: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let dtype = dtype_arg(dtype, "dtype")?;
            let len = rows.checked_mul(cols).ok_or_else(|| {
                Failure::invalid_argument(format!("{rows} x {cols}: the element count overflows"))
            })?;
            byte_len(dtype, len)?;
            AnyArray::eye(c, dtype, rows, cols).or_status()
        })
    }
}

/// What a `*_like` call fills the new array with.
enum Like {
    Zeros,
    Empty,
    Ones,
    Full(ug_scalar),
}

/// A new contiguous array of `like`'s shape and dtype in its context,
/// filled as `fill` says.
///
/// # Safety
///
/// `like` is NULL or a live array; `out` is NULL or valid for writes.
unsafe fn new_like(like: *const ug_array, out: *mut *mut ug_array, fill: Like) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let like = unsafe { runtime::handle_ref(like, "like") }?;
        let ctx = locks::read(like, |a| Ok(a.context().clone()))?;
        let (dtype, shape) = (like.dtype, like.layout.shape().to_vec());
        let len = like.len();
        let a = match fill {
            Like::Zeros => AnyArray::zeros(&ctx, dtype, len).and_then(|a| a.reshape(shape)),
            Like::Empty => AnyArray::alloc(&ctx, dtype, len).and_then(|a| a.reshape(shape)),
            Like::Ones => AnyArray::ones(&ctx, dtype, shape),
            Like::Full(value) => {
                let value = scalar_arg(&value, "value.dtype")?;
                if value.dtype() != dtype {
                    return Err(Failure::new(
                        ug_status::DTYPE_MISMATCH,
                        format!(
                            "full_like: `value` is {}, the array {}",
                            value.dtype().name(),
                            dtype.name()
                        ),
                    ));
                }
                AnyArray::full(&ctx, shape, value)
            }
        }
        .or_status()?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

/// A new zeroed array of `like`'s shape and dtype, in its context (a view
/// gives a contiguous array of the view's shape).
///
/// # Safety
///
/// `like` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_zeros_like(
    like: *const ug_array,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_like(like, out, Like::Zeros) }
}

/// As `ug_array_zeros_like`, the contents unspecified (as
/// `ug_array_alloc`).
///
/// # Safety
///
/// `like` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_empty_like(
    like: *const ug_array,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_like(like, out, Like::Empty) }
}

/// As `ug_array_zeros_like`, holding ones.
///
/// # Safety
///
/// `like` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_ones_like(
    like: *const ug_array,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_like(like, out, Like::Ones) }
}

/// As `ug_array_zeros_like`, every element `value`, which must have
/// `like`'s dtype (`UG_DTYPE_MISMATCH`).
///
/// # Safety
///
/// `like` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_full_like(
    like: *const ug_array,
    value: ug_scalar,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_like(like, out, Like::Full(value)) }
}

/// A new contiguous array of `x`'s shape (an array or a view) with every
/// element cast to `dtype` by Rust's `as` (docs/guide.md, "Casts"): float
/// to integer toward zero, saturating, NaN to 0; integer to integer
/// wrapping; to f16/bf16 through f32, rounded to nearest even. Any dtype
/// to any; the same dtype is a copy. On the default stream of `x`'s
/// context.
///
/// # Safety
///
/// `x` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_astype(
    x: *const ug_array,
    dtype: u32,
    out: *mut *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let x = unsafe { runtime::handle_ref(x, "x") }?;
        let dtype = dtype_arg(dtype, "dtype")?;
        let a = locks::read_view(x, |v| v.astype(dtype).or_status())?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}
