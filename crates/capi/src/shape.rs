//! Shapes and views from C: an array's shape and strides, arrays made with
//! a shape, and views (`ug_array_reshape`, `_transpose`, `_slice`,
//! `_index`) that share an array's memory. A view is a `ug_array` handle
//! like any other (free it with `ug_array_free`; the memory lives while any
//! handle does), taken by every op; kernels take whole arrays only
//! (`ug_array_contiguous` makes one).

use unigpu::{AnyArray, Layout};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::array::{byte_len, ug_array};
use crate::context::ug_context;
use crate::locks;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::stream::ug_stream;
use crate::types::dtype_arg;

/// A shape argument: `ndim` extents at `shape` (NULL when `ndim` is 0).
///
/// # Safety
///
/// `shape` is NULL or valid for reads of `ndim` `size_t`s.
pub(crate) unsafe fn shape_arg(shape: *const usize, ndim: usize, what: &str) -> Result<Vec<usize>> {
    // SAFETY: the caller's promise.
    let dims = unsafe { runtime::slice_arg::<_, usize>(shape, ndim, what) }?;
    Ok(dims.to_vec())
}

fn shape_fail(e: unigpu::ShapeError) -> Failure<ug_status> {
    Failure::new(ug_status::SIZE_MISMATCH, e.0)
}

/// Runs `f` on `array`'s layout and hands out the view it makes.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
unsafe fn new_view(
    array: *const ug_array,
    out: *mut *mut ug_array,
    f: impl FnOnce(&Layout) -> std::result::Result<Layout, unigpu::ShapeError>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let layout = f(&array.layout).map_err(shape_fail)?;
        out.write(array.view_handle(layout));
        Ok(())
    })
}

/// An array of `shape` (`ndim` extents, row-major) and `dtype` holding
/// zeros.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `shape` is NULL or valid for reads of
/// `ndim` values (NULL only when `ndim` is 0); `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_zeros_nd(
    ctx: *const ug_context,
    dtype: u32,
    shape: *const usize,
    ndim: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        // SAFETY: NULL or valid for `ndim` reads (see # Safety).
        let shape = unsafe { shape_arg(shape, ndim, "shape") }?;
        let dtype = dtype_arg(dtype, "dtype")?;
        let len = unigpu_core_count(&shape)?;
        byte_len(dtype, len)?;
        let a = AnyArray::zeros(&ctx.ctx, dtype, len)
            .and_then(|a| a.reshape(shape))
            .or_status()?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

pub(crate) fn unigpu_core_count(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            Failure::invalid_argument(format!("shape {shape:?}: the element count overflows"))
        })
}

/// The number of axes, into `out`.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_ndim(array: *const ug_array, out: *mut usize) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        out.write(array.layout.ndim());
        Ok(())
    })
}

/// Writes the extent of each axis to `shape` (`capacity` entries there;
/// `UG_INVALID_ARGUMENT`, nothing written, when fewer than `ug_array_ndim`).
///
/// # Safety
///
/// `array` is NULL or a live array; `shape` is NULL or valid for writes of
/// `capacity` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_shape(
    array: *const ug_array,
    shape: *mut usize,
    capacity: usize,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { write_axes(array, shape, capacity, |l| l.shape().to_vec()) }
}

/// Writes the step between neighbours along each axis, in elements
/// (negative for a reversed axis, 0 for a broadcast one), to `strides`
/// (`capacity` entries there, as `ug_array_shape`).
///
/// # Safety
///
/// `array` is NULL or a live array; `strides` is NULL or valid for writes
/// of `capacity` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_strides(
    array: *const ug_array,
    strides: *mut isize,
    capacity: usize,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { write_axes(array, strides, capacity, |l| l.strides().to_vec()) }
}

/// Writes one value per axis of `array` (from `f`) to `dst`.
///
/// # Safety
///
/// As [`ug_array_shape`].
unsafe fn write_axes<T: Copy>(
    array: *const ug_array,
    dst: *mut T,
    capacity: usize,
    f: impl FnOnce(&Layout) -> Vec<T>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let values = f(&array.layout);
        if capacity < values.len() {
            return Err(Failure::invalid_argument(format!(
                "the array has {} axes; `capacity` is {capacity}",
                values.len()
            )));
        }
        // SAFETY: NULL or valid for `capacity` writes (see # Safety).
        let dst = unsafe { runtime::slice_mut_arg::<_, T>(dst, capacity, "the output") }?;
        dst[..values.len()].copy_from_slice(&values);
        Ok(())
    })
}

/// A view of `array` with `shape` (`ndim` extents), the same elements in
/// row-major order, into `out`; `UG_SIZE_MISMATCH` naming both shapes when
/// the counts differ or the strides cannot express it without a copy (a
/// transposed array flattened: `ug_array_contiguous` first).
///
/// # Safety
///
/// `array` is NULL or a live array; `shape` is NULL or valid for reads of
/// `ndim` values; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_reshape(
    array: *const ug_array,
    shape: *const usize,
    ndim: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: NULL or valid for `ndim` reads (see # Safety).
    let shape = match unsafe { shape_arg(shape, ndim, "shape") } {
        Ok(s) => s,
        Err(f) => return f.record(),
    };
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_view(array, out, |l| l.reshape(&shape)) }
}

/// A view with the axes reordered: axis `i` of the view is axis `axes[i]`
/// of `array`; `axes` NULL (and `naxes` 0) reverses them all (a matrix
/// transposed).
///
/// # Safety
///
/// `array` is NULL or a live array; `axes` is NULL or valid for reads of
/// `naxes` values; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_transpose(
    array: *const ug_array,
    axes: *const usize,
    naxes: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: NULL or valid for `naxes` reads (see # Safety).
    let axes = match unsafe { shape_arg(axes, naxes, "axes") } {
        Ok(a) => a,
        Err(f) => return f.record(),
    };
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_view(array, out, |l| {
            if axes.is_empty() && l.ndim() > 0 {
                Ok(l.transpose())
            } else {
                l.permute(&axes)
            }
        })
    }
}

/// A view of elements `start..stop` of `axis`, every `|step|`-th: from
/// `start` upwards for a positive step, from `stop - 1` downwards for a
/// negative one (`step` 0 is refused). The axis is kept.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_slice(
    array: *const ug_array,
    axis: usize,
    start: usize,
    stop: usize,
    step: isize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_view(array, out, |l| l.slice(axis, start..stop, step)) }
}

/// A view of element `index` of `axis`, the axis removed.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_index(
    array: *const ug_array,
    axis: usize,
    index: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_view(array, out, |l| l.index(axis, index)) }
}

/// Whether the elements are one row-major run of the memory (1) or not
/// (0), into `out`.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_is_contiguous(
    array: *const ug_array,
    out: *mut i32,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        out.write(i32::from(array.layout.is_contiguous()));
        Ok(())
    })
}

/// A new contiguous array with the elements and shape of `array` (a view
/// or an array), copied on the device.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_contiguous(
    array: *const ug_array,
    out: *mut *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let a = locks::read_view(array, |v| v.to_contiguous().or_status())?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

/// `out = a · b` for 2-D arrays or views (`a` m×k, `b` k×n, `out` m×n),
/// the sizes taken from their shapes, on `stream` (NULL: the default
/// stream of `a`'s context). When any of them is 3-D, a batched product:
/// `out` (B, m, n) and `a` (B, m, k), `b` (B, k, n), where either may be
/// 2-D (or hold one matrix) and then serves every batch. Views whose
/// matrices are transposed (`ug_array_transpose` of the last two axes) or
/// sliced are read in place, without a copy. `UG_SIZE_MISMATCH` naming the
/// shapes when they do not fit.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `a`, `b`, `out` are NULL or live
/// arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_mm(
    stream: *const ug_stream,
    a: *const ug_array,
    b: *const ug_array,
    out: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let (a, b, out) = unsafe {
            (
                runtime::handle_ref(a, "a")?,
                runtime::handle_ref(b, "b")?,
                runtime::handle_ref(out, "out")?,
            )
        };
        // SAFETY: NULL or live (see # Safety).
        let stream = unsafe { stream.as_ref() };
        let ctx = locks::read(a, |x| Ok(x.context().clone()))?;
        let ops = match stream {
            Some(s) => ctx.ops_on(&s.stream),
            None => ctx.ops(),
        };
        unigpu::binding::mm(ops, [a.arg(), b.arg(), out.arg()], ["a", "b", "out"])
            .map_err(locks::fail_call)
    })
}

/// The reductions over axes (`ug_op_reduce_axes`'s `op`, a `uint32_t`
/// holding one of these values).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_axes_op {
    Sum = 0,
    Mean = 1,
    Max = 2,
    Min = 3,
    ArgMax = 4,
    ArgMin = 5,
}

/// `op` over `axes` (`naxes` of them; `axes` NULL: every axis) of `x`,
/// into a new array `out`: the reduced axes removed, or kept with extent 1
/// when `keepdims` is not 0 (numpy's `axis=`, `keepdims=`). Sum and mean
/// accumulate in f32 (f64 for f64); max and min propagate NaN. ArgMax and
/// ArgMin take one axis (or NULL: the flattened array) and give u32
/// indices, the first extreme's, or the first NaN's. On `stream` (NULL:
/// the default stream of `x`'s context).
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` is NULL or a live array; `axes`
/// is NULL or valid for reads of `naxes` values; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_reduce_axes(
    stream: *const ug_stream,
    op: u32,
    x: *const ug_array,
    axes: *const usize,
    naxes: usize,
    keepdims: i32,
    out: *mut *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let x = unsafe { runtime::handle_ref(x, "x") }?;
        // SAFETY: NULL or live (see # Safety).
        let stream = unsafe { stream.as_ref() };
        let axes: Option<Vec<usize>> = if axes.is_null() {
            None
        } else {
            // SAFETY: non-NULL and valid for `naxes` reads (see # Safety).
            Some(unsafe { runtime::slice_arg::<_, usize>(axes, naxes, "axes") }?.to_vec())
        };
        let op = match op {
            0 => ug_axes_op::Sum,
            1 => ug_axes_op::Mean,
            2 => ug_axes_op::Max,
            3 => ug_axes_op::Min,
            4 => ug_axes_op::ArgMax,
            5 => ug_axes_op::ArgMin,
            other => {
                return Err(Failure::invalid_argument(format!(
                    "`op` is {other}, not a ug_axes_op value (0 to 5)"
                )));
            }
        };
        let single = match (&axes, op) {
            (Some(a), ug_axes_op::ArgMax | ug_axes_op::ArgMin) if a.len() != 1 => {
                return Err(Failure::invalid_argument(
                    "argmax and argmin take one axis (or NULL)",
                ));
            }
            (Some(a), _) => a.first().copied(),
            (None, _) => None,
        };
        let keep = keepdims != 0;
        let a = locks::read_view(x, |v| {
            let ctx = v.array.context().clone();
            let ops = match stream {
                Some(s) => ctx.ops_on(&s.stream),
                None => ctx.ops(),
            };
            let axes = axes.as_deref();
            match op {
                ug_axes_op::Sum => ops.sum_axes_any(v, axes, keep),
                ug_axes_op::Mean => ops.mean_axes_any(v, axes, keep),
                ug_axes_op::Max => ops.max_axes_any(v, axes, keep),
                ug_axes_op::Min => ops.min_axes_any(v, axes, keep),
                ug_axes_op::ArgMax => ops.arg_extreme_any(v, single, keep, true),
                ug_axes_op::ArgMin => ops.arg_extreme_any(v, single, keep, false),
            }
            .or_status()
        })?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

/// `out = softmax(x)` along `axis` (`log` 0), or `log_softmax(x)` (`log`
/// not 0), `out` of `x`'s shape (a view is fine). `out` may be `x` (the
/// bindings' rule: `x` is then read from a copy taken first).
///
/// # Safety
///
/// `stream` is NULL or a live stream; `x` and `out` are NULL or live
/// arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_op_softmax(
    stream: *const ug_stream,
    x: *const ug_array,
    axis: usize,
    log: i32,
    out: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let (x, out) = unsafe {
            (
                runtime::handle_ref(x, "x")?,
                runtime::handle_ref(out, "out")?,
            )
        };
        // SAFETY: NULL or live (see # Safety).
        let stream = unsafe { stream.as_ref() };
        let ctx = locks::read(x, |a| Ok(a.context().clone()))?;
        let ops = match stream {
            Some(s) => ctx.ops_on(&s.stream),
            None => ctx.ops(),
        };
        unigpu::binding::softmax(ops, [x.arg(), out.arg()], ["x", "out"], axis, log != 0)
            .map_err(locks::fail_call)
    })
}
