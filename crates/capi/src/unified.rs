//! Unified (managed) memory arrays: `ug_array`s that kernels use on the
//! device and the host reads and writes in place through a pointer.

use std::ffi::c_void;

use unigpu::{AnyArray, Location};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::array::ug_array;
use crate::context::ug_context;
use crate::locks;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::stream::ug_stream;
use crate::types::dtype_arg;

/// Where `ug_stream_prefetch` moves a unified array's memory. Inputs are
/// `uint32_t` holding one of these values.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_location {
    /// The array's device: kernels then run without page faults.
    Device = 0,
    /// Host memory: host reads and writes then run without page faults.
    Host = 1,
}

fn location_arg(value: u32) -> Result<Location> {
    match value {
        0 => Ok(Location::Device),
        1 => Ok(Location::Host),
        other => Err(Failure::invalid_argument(format!(
            "`to` is {other}, not a ug_location value (0 device, 1 host)"
        ))),
    }
}

/// An array of `len` zeros of `dtype` (a `ug_dtype`) in unified memory:
/// usable by every op, kernel and copy like any array, and readable and
/// writable in place from the host through `ug_array_host_view` and
/// `ug_array_host_view_mut`. Managed memory (`cuMemAllocManaged`) on
/// CUDA, plain host memory on the CPU backend; `UG_UNSUPPORTED` on torch
/// (and on a CUDA device without concurrent managed access).
/// `UG_OUT_OF_MEMORY` for more than the device has free (managed memory
/// is never over-subscribed: that can hang a GPU); the message holds the
/// free bytes.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_alloc_unified(
    ctx: *const ug_context,
    dtype: u32,
    len: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let dtype = dtype_arg(dtype, "dtype")?;
        crate::array::byte_len(dtype, len)?;
        let a = AnyArray::alloc_unified(&ctx.ctx, dtype, len).or_status()?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

/// Writes true to `out` when `array` is unified memory
/// (`ug_array_alloc_unified`).
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_is_unified(array: *const ug_array, out: *mut bool) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        out.write(locks::read(array, |a| Ok(a.is_unified()))?);
        Ok(())
    })
}

/// Waits until the work that writes `array` (on any stream) is done, then
/// writes to `out` the host address of its elements, to read in place
/// (`ug_array_size_bytes` bytes, native byte order). The address stays
/// valid while the array's memory lives (until `ug_array_free` and the
/// end of the work queued on it). Reading is safe until work that writes
/// the array is enqueued: after such work, call this again to wait for
/// it. `UG_UNSUPPORTED` for an array not made by `ug_array_alloc_unified`.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_host_view(
    array: *const ug_array,
    out: *mut *const c_void,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let ptr = locks::read(array, |a| {
            a.with_host_bytes(|b| b.as_ptr().cast::<c_void>())
                .or_status()
        })?;
        out.write(ptr);
        Ok(())
    })
}

/// As `ug_array_host_view`, for writing: waits until every use of `array`
/// (on any stream) is done. Writing is safe until work that uses the
/// array is enqueued; work enqueued after the writes sees them.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_host_view_mut(
    array: *mut ug_array,
    out: *mut *mut c_void,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let ptr = locks::write(array, |a| {
            a.with_host_bytes_mut(|b| b.as_mut_ptr().cast::<c_void>())
                .or_status()
        })?;
        out.write(ptr);
        Ok(())
    })
}

/// Moves a unified array's memory to `to` (a `ug_location`), ordered on
/// `stream` (NULL: the array's context's default stream) after the work
/// that writes it; returns at once. A hint: the contents never change.
/// Does nothing on the CPU backend. `UG_UNSUPPORTED` for an array not made
/// by `ug_array_alloc_unified`; `UG_CONTEXT_MISMATCH` for a stream of
/// another backend.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `array` is NULL or a live array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_prefetch(
    stream: *const ug_stream,
    array: *const ug_array,
    to: u32,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { stream.as_ref() };
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let to = location_arg(to)?;
        locks::read(array, |a| {
            match s {
                Some(s) => a.prefetch(&s.stream, to),
                None => a.prefetch(a.context().default_stream(), to),
            }
            .or_status()
        })
    })
}
