//! `ug_pinned`: host memory that copies on a stream read and write without
//! staging (page-locked on CUDA), and the copies between it and arrays.

use std::ffi::c_void;
use std::sync::RwLock;

use unigpu::AnyPinned;
use unigpu_capi_runtime as runtime;

use crate::array::ug_array;
use crate::context::ug_context;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::stream::ug_stream;
use crate::types::{dtype_arg, ug_dtype};

/// `len` elements of host memory that `ug_stream_upload_pinned` and
/// `ug_stream_download_pinned` copy without staging: page-locked on CUDA
/// (the copy calls return at once), ordinary memory on the CPU and torch
/// backends (the copies finish before they return). Thread-safe. Freeing
/// it waits for the copies still pending on it.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_pinned {
    inner: RwLock<AnyPinned>,
    /// Fixed for the buffer's life, so the getters need no lock.
    dtype: unigpu::DType,
    len: usize,
}

fn read<R>(p: &ug_pinned, f: impl FnOnce(&AnyPinned) -> Result<R>) -> Result<R> {
    f(&p.inner.read().unwrap_or_else(|e| e.into_inner()))
}

fn write<R>(p: &ug_pinned, f: impl FnOnce(&mut AnyPinned) -> Result<R>) -> Result<R> {
    f(&mut p.inner.write().unwrap_or_else(|e| e.into_inner()))
}

/// `len` zeroed elements of `dtype` (a `ug_dtype`) of pinned host memory
/// for `ctx`'s device. Page-locked memory is scarce: keep a few buffers
/// and reuse them.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_pinned_new(
    ctx: *const ug_context,
    dtype: u32,
    len: usize,
    out: *mut *mut ug_pinned,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let dtype = dtype_arg(dtype, "dtype")?;
        crate::array::byte_len(dtype, len)?;
        let p = AnyPinned::new(&ctx.ctx, dtype, len).or_status()?;
        out.write(runtime::into_handle(ug_pinned {
            dtype,
            len,
            inner: RwLock::new(p),
        }));
        Ok(())
    })
}

/// The number of elements.
///
/// # Safety
///
/// `pinned` is NULL or a live pinned buffer; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_pinned_len(pinned: *const ug_pinned, out: *mut usize) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let p = unsafe { runtime::handle_ref(pinned, "pinned") }?;
        out.write(p.len);
        Ok(())
    })
}

/// The element type.
///
/// # Safety
///
/// `pinned` is NULL or a live pinned buffer; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_pinned_dtype(
    pinned: *const ug_pinned,
    out: *mut ug_dtype,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let p = unsafe { runtime::handle_ref(pinned, "pinned") }?;
        out.write(ug_dtype::from_facade(p.dtype));
        Ok(())
    })
}

/// Waits for the downloads pending into `pinned`, then writes to `out`
/// the address of its elements, to read (`len` elements, native byte
/// order). The address is valid until `ug_pinned_free`; read it only
/// until another download into the buffer is enqueued, then call this
/// again to wait for that one.
///
/// # Safety
///
/// `pinned` is NULL or a live pinned buffer; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_pinned_data(
    pinned: *const ug_pinned,
    out: *mut *const c_void,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let p = unsafe { runtime::handle_ref(pinned, "pinned") }?;
        let ptr = read(p, |p| {
            p.with_bytes(|b| b.as_ptr().cast::<c_void>()).or_status()
        })?;
        out.write(ptr);
        Ok(())
    })
}

/// As `ug_pinned_data`, for writing: waits for every copy pending from or
/// into the buffer. Write only until a copy from or into it is enqueued.
///
/// # Safety
///
/// `pinned` is NULL or a live pinned buffer; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_pinned_data_mut(
    pinned: *mut ug_pinned,
    out: *mut *mut c_void,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let p = unsafe { runtime::handle_ref(pinned, "pinned") }?;
        let ptr = write(p, |p| {
            p.with_bytes_mut(|b| b.as_mut_ptr().cast::<c_void>())
                .or_status()
        })?;
        out.write(ptr);
        Ok(())
    })
}

/// The stream a copy runs on: `stream`, or (NULL) the array's context's
/// default stream.
fn stream_of(stream: Option<&ug_stream>, a: &unigpu::AnyArray) -> unigpu::Stream {
    match stream {
        Some(s) => s.stream.clone(),
        None => a.context().default_stream().clone(),
    }
}

/// Copies `src` into `dst` (same dtype and length), ordered on `stream`
/// (NULL: `dst`'s default stream). On CUDA it returns at once;
/// `ug_pinned_data_mut(src)` waits for the copy.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `src` is NULL or a live pinned
/// buffer; `dst` is NULL or a live array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_upload_pinned(
    stream: *const ug_stream,
    src: *const ug_pinned,
    dst: *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { stream.as_ref() };
        // SAFETY: NULL or live (see # Safety).
        let src = unsafe { runtime::handle_ref(src, "src") }?;
        // SAFETY: NULL or live (see # Safety).
        let dst = unsafe { runtime::handle_ref(dst, "dst") }?;
        // The pinned buffer is always locked first, then the array, so
        // that two copies cannot wait on each other.
        read(src, |p| {
            crate::locks::write(dst, |a| stream_of(s, a).upload_pinned_any(p, a).or_status())
        })
    })
}

/// Copies `src` into `dst` (same dtype and length), ordered on `stream`
/// (NULL: `src`'s default stream). On CUDA it returns at once;
/// `ug_pinned_data(dst)` waits for the copy.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `src` is NULL or a live array; `dst`
/// is NULL or a live pinned buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_download_pinned(
    stream: *const ug_stream,
    src: *const ug_array,
    dst: *mut ug_pinned,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { stream.as_ref() };
        // SAFETY: NULL or live (see # Safety).
        let src = unsafe { runtime::handle_ref(src, "src") }?;
        // SAFETY: NULL or live (see # Safety).
        let dst = unsafe { runtime::handle_ref(dst, "dst") }?;
        write(dst, |p| {
            crate::locks::read(src, |a| {
                stream_of(s, a).download_pinned_any(a, p).or_status()
            })
        })
    })
}

/// Frees a pinned buffer, after the copies still pending on it. NULL is a
/// no-op.
///
/// # Safety
///
/// `pinned` is NULL or a pinned buffer from this library, not freed before
/// and not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_pinned_free(pinned: *mut ug_pinned) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(pinned, "ug_pinned") }
}
