//! `ug_array`: a device array of one of the nine element types.

use std::ffi::c_void;
use std::sync::{Arc, RwLock};

use unigpu::AnyArray;
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::context::ug_context;
use crate::locks;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::types::{dtype_arg, ug_dtype};

/// An array on a context's device. Thread-safe: calls that read it may run
/// at once from many threads; a call that writes it waits for them.
///
/// The array is shared (`Arc`): `ug_array_free` drops this handle's share,
/// and the memory is released when nothing else holds it (work still
/// queued on a stream, a DLPack export).
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_array {
    pub(crate) inner: unigpu::binding::SharedArray,
    /// Fixed for the handle's life, so the getters need no lock.
    pub(crate) dtype: unigpu::DType,
    /// The elements' layout in `inner`'s memory: the array's own, or a
    /// view's (`ug_array_transpose`, `ug_array_slice`, ...).
    pub(crate) layout: unigpu::Layout,
    pub(crate) view: bool,
}

impl ug_array {
    pub(crate) fn handle(a: AnyArray) -> *mut ug_array {
        runtime::into_handle(ug_array {
            dtype: a.dtype(),
            layout: a.layout().clone(),
            view: false,
            inner: Arc::new(RwLock::new(a)),
        })
    }

    /// A new handle: a view of the same memory with `layout`.
    pub(crate) fn view_handle(&self, layout: unigpu::Layout) -> *mut ug_array {
        runtime::into_handle(ug_array {
            inner: self.inner.clone(),
            dtype: self.dtype,
            layout,
            view: true,
        })
    }

    /// The array as the bindings' calls take it.
    pub(crate) fn arg(&self) -> unigpu::binding::Handle<'_> {
        unigpu::binding::Handle {
            array: &self.inner,
            layout: self.view.then_some(&self.layout),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.len()
    }
}

/// Makes an array in `ctx` with `make` and hands it out through `out`.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
pub(crate) unsafe fn new_array(
    ctx: *const ug_context,
    out: *mut *mut ug_array,
    make: impl FnOnce(&unigpu::Context) -> Result<AnyArray>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let a = make(&ctx.ctx)?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

/// An array of `len` elements of `dtype` (a `ug_dtype`) whose contents are
/// unspecified (zeros on the CPU backend). `UG_OUT_OF_MEMORY` when the
/// device cannot hold it.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_alloc(
    ctx: *const ug_context,
    dtype: u32,
    len: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let dtype = dtype_arg(dtype, "dtype")?;
            byte_len(dtype, len)?;
            AnyArray::alloc(c, dtype, len).or_status()
        })
    }
}

/// An array of `len` zeros of `dtype` (a `ug_dtype`).
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_zeros(
    ctx: *const ug_context,
    dtype: u32,
    len: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        new_array(ctx, out, |c| {
            let dtype = dtype_arg(dtype, "dtype")?;
            byte_len(dtype, len)?;
            AnyArray::zeros(c, dtype, len).or_status()
        })
    }
}

/// The byte size of `len` elements of `dtype`, or `UG_INVALID_ARGUMENT`
/// when it is more than `PTRDIFF_MAX` (no allocation can be that large:
/// the length is wrong, rather than the device short of memory, and the
/// message says so instead of a byte count that wrapped).
pub(crate) fn byte_len(dtype: unigpu::DType, len: usize) -> Result<usize> {
    len.checked_mul(dtype.size_bytes())
        .filter(|b| *b <= isize::MAX as usize)
        .ok_or_else(|| {
            Failure::invalid_argument(format!(
                "`len` is {len} elements of {dtype} ({} bytes each): more than \
                 PTRDIFF_MAX ({}) bytes",
                dtype.size_bytes(),
                isize::MAX
            ))
        })
}

/// An array holding a copy of `len` elements of `dtype` read from the host
/// memory at `data` (native byte order; any alignment). `data` may be NULL
/// when `len` is 0. Returns once `data` may be reused.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `data` is NULL or valid for reads of
/// `len` elements of `dtype`; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_upload(
    ctx: *const ug_context,
    dtype: u32,
    data: *const c_void,
    len: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    let make = |c: &unigpu::Context| {
        let dtype = dtype_arg(dtype, "dtype")?;
        let bytes = byte_len(dtype, len)?;
        // SAFETY: NULL or valid for `bytes` reads (see # Safety).
        let host = unsafe { runtime::slice_arg::<_, u8>(data.cast(), bytes, "data") }?;
        AnyArray::from_bytes(c, dtype, host).or_status()
    };
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_array(ctx, out, make) }
}

/// Overwrites every element of `array` from `size_bytes` bytes at `data`
/// (native byte order; any alignment). `UG_SIZE_MISMATCH` unless
/// `size_bytes` is the array's size in bytes. Returns once `data` may be
/// reused.
///
/// # Safety
///
/// `array` is NULL or a live array; `data` is NULL or valid for reads of
/// `size_bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_upload_from(
    array: *mut ug_array,
    data: *const c_void,
    size_bytes: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        // SAFETY: NULL or valid for `size_bytes` reads (see # Safety).
        let host = unsafe { runtime::slice_arg::<_, u8>(data.cast(), size_bytes, "data") }?;
        locks::write_view(array, |mut a| a.upload_bytes(host).or_status())
    })
}

/// Copies every element of `array` into the host buffer `dst` of
/// `size_bytes` bytes (native byte order; any alignment), after the work
/// that writes it. `UG_SIZE_MISMATCH` unless `size_bytes` is the array's
/// size in bytes (`ug_array_size_bytes`).
///
/// # Safety
///
/// `array` is NULL or a live array; `dst` is NULL or valid for writes of
/// `size_bytes` bytes, and not the memory of an array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_download(
    array: *const ug_array,
    dst: *mut c_void,
    size_bytes: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        // SAFETY: NULL or valid for `size_bytes` writes (see # Safety).
        let host = unsafe { runtime::slice_mut_arg::<_, u8>(dst.cast(), size_bytes, "dst") }?;
        locks::read_view(array, |a| a.download_bytes(host).or_status())
    })
}

/// Device-to-device copy of `src` into `dst` on `src`'s default stream.
/// `UG_DTYPE_MISMATCH` / `UG_SIZE_MISMATCH` unless both have the same dtype
/// and length. The same array as `src` and `dst` is left as it is.
///
/// # Safety
///
/// `src` and `dst` are NULL or live arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_copy(src: *const ug_array, dst: *mut ug_array) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let src = unsafe { runtime::handle_ref(src, "src") }?;
        // SAFETY: NULL or live (see # Safety).
        let dst = unsafe { runtime::handle_ref(dst, "dst") }?;
        if src.view || dst.view {
            // Views copy on the source's default stream through the ops.
            let ops_ctx = locks::read(src, |a| Ok(a.context().clone()))?;
            return unigpu::binding::copy(ops_ctx.ops(), [src.arg(), dst.arg()], ["src", "dst"])
                .map_err(locks::fail_call);
        }
        unigpu::binding::copy_to([&src.inner, &dst.inner], ["src", "dst"]).map_err(locks::fail_call)
    })
}

/// A copy of `array` in another context `ctx` (another device or backend).
///
/// # Safety
///
/// `array` is NULL or a live array; `ctx` is NULL or a live context; `out`
/// is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_to_context(
    array: *const ug_array,
    ctx: *const ug_context,
    out: *mut *mut ug_array,
) -> ug_status {
    let make = |c: &unigpu::Context| {
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        locks::read_view(array, |a| match a.layout {
            None => a.array.to_context(c).or_status(),
            Some(_) => a.to_contiguous().and_then(|x| x.to_context(c)).or_status(),
        })
    };
    // SAFETY: the caller's promises (see # Safety).
    unsafe { new_array(ctx, out, make) }
}

/// Reads a fixed property of `array` into `out`.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
unsafe fn getter<T>(
    array: *const ug_array,
    out: *mut T,
    f: impl FnOnce(&ug_array) -> T,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        out.write(f(array));
        Ok(())
    })
}

/// The number of elements.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_len(array: *const ug_array, out: *mut usize) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { getter(array, out, |a| a.len()) }
}

/// The size in bytes (elements times the element size).
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_size_bytes(array: *const ug_array, out: *mut usize) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { getter(array, out, |a| a.len() * a.dtype.size_bytes()) }
}

/// The element type.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_dtype(array: *const ug_array, out: *mut ug_dtype) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { getter(array, out, |a| ug_dtype::from_facade(a.dtype)) }
}

/// A handle to the context the array lives in (free it with
/// `ug_context_free`).
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_context(
    array: *const ug_array,
    out: *mut *mut ug_context,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        getter(array, out, |a| {
            runtime::into_handle(ug_context {
                ctx: a
                    .inner
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .context()
                    .clone(),
            })
        })
    }
}

/// Frees an array handle. NULL is a no-op. Work already queued on it
/// finishes first (the memory is released after it).
///
/// # Safety
///
/// `array` is NULL or an array from this library, not freed before and not
/// in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_free(array: *mut ug_array) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(array, "ug_array") }
}
