//! DLPack across the C ABI: arrays out as `DLManagedTensorVersioned`, and
//! tensors in as `DLManagedTensorVersioned` or the legacy `DLManagedTensor`,
//! sharing memory both ways (docs/dlpack.md).

use unigpu::AnyViewMut;
use unigpu::DlpackSync;
use unigpu::dlpack::DlpackTensor;
use unigpu_capi_runtime::{self as runtime, Failure};
use unigpu_core::dlpack::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use unigpu_cuda_safe::{CudaDevice, ForeignStream};

use crate::array::ug_array;
use crate::context::ug_context;
use crate::status::{OrStatus, Out, fail, ug_status};

/// `stream` of `ug_array_to_dlpack`: block until the array is ready.
pub const UG_DLPACK_SYNC_HOST: i64 = 0;
/// `stream` of `ug_array_to_dlpack`: no ordering at all.
pub const UG_DLPACK_NO_SYNC: i64 = -1;

/// Exports `array` as a DLPack tensor sharing its memory, written to `out`.
/// The consumer owns the tensor and must call its `deleter` exactly once;
/// the memory stays valid until then, also after `ug_array_free(array)`.
///
/// `stream` orders the array's pending work before the consumer:
/// `UG_DLPACK_SYNC_HOST` (0) blocks until it is done; `UG_DLPACK_NO_SYNC`
/// (-1) does nothing; any other value is the consumer's `CUstream` (1 and 2
/// are CUDA's legacy and per-thread default streams), which is made to wait
/// without blocking (cuda and torch arrays only). A CPU array takes 0 or -1.
///
/// # Safety
///
/// `array` is NULL or a live array; `out` is NULL or valid for writes; a
/// `stream` other than 0 and -1 is a live CUDA stream of the array's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_to_dlpack(
    array: *const ug_array,
    stream: i64,
    out: *mut *mut DLManagedTensorVersioned,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let array = unsafe { runtime::handle_ref(array, "array") }?;
        let mut a = array.inner.write().unwrap_or_else(|e| e.into_inner());
        let consumer = match stream {
            UG_DLPACK_SYNC_HOST | UG_DLPACK_NO_SYNC => None,
            s if s < -1 => {
                return Err(Failure::invalid_argument(format!(
                    "`stream` {s} is not a CUDA stream, 0 (block) or -1 (no ordering)"
                )));
            }
            s => {
                let ctx = a.context();
                if ctx.default_stream().cuda_handle().is_none() {
                    return Err(Failure::invalid_argument(format!(
                        "`stream` {s}: a {} array can only be exported with 0 (block) or -1 (no ordering)",
                        ctx.backend()
                    )));
                }
                let device = CudaDevice::open(ctx.device_id()).map_err(|e| fail(e.into()))?;
                // SAFETY: the caller promises a live stream of this device
                // (see # Safety); the ForeignStream lives for this call only.
                Some(unsafe { ForeignStream::from_raw(&device, s as u64) })
            }
        };
        let sync = match (&consumer, stream) {
            (Some(s), _) => DlpackSync::Stream(s),
            (None, UG_DLPACK_NO_SYNC) => DlpackSync::Unordered,
            (None, _) => DlpackSync::Host,
        };
        // A view exports its own shape, strides and first element.
        let tensor = AnyViewMut {
            array: &mut a,
            layout: array.view.then_some(&array.layout),
        }
        .to_dlpack(sync)
        .or_status()?;
        let raw = tensor
            .into_raw_versioned()
            .map_err(|_| Failure::new(ug_status::DLPACK, "the export has no versioned form"))?;
        out.write(raw);
        Ok(())
    })
}

/// Takes `tensor` as an array of `ctx` without copying, written to `out`.
/// The tensor is consumed in every case once it is not NULL: on success the
/// array owns it and calls its deleter when the array is freed and its work
/// is done; on failure (`UG_DLPACK` with the reason: wrong device, dtype,
/// negative strides, read-only, unknown major version) the deleter has
/// been called. The array keeps the tensor's shape and strides.
///
/// A tensor exported by this library (`ug_array_to_dlpack`) and imported
/// again shares the original array's memory and its record of pending
/// stream work (cpu, cuda, torch): a write through either, then a read
/// through the other on any stream, sees the write. Memory that comes
/// back through another library is a separate array, ordered by the
/// caller.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `tensor` is NULL or a tensor that
/// follows the DLPack contract and that nobody else owns; `out` is NULL or
/// valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_from_dlpack(
    ctx: *const ug_context,
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        import(ctx, out, tensor.is_null(), || {
            DlpackTensor::from_raw_versioned(tensor)
        })
    }
}

/// [`ug_array_from_dlpack`] for a legacy (pre-1.0) `DLManagedTensor`.
///
/// # Safety
///
/// As for `ug_array_from_dlpack`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_array_from_dlpack_legacy(
    ctx: *const ug_context,
    tensor: *mut DLManagedTensor,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        import(ctx, out, tensor.is_null(), || {
            DlpackTensor::from_raw_legacy(tensor)
        })
    }
}

/// The shared body of the imports. The tensor is taken (by `take`) before
/// anything else is checked, so that every later failure deletes it: the
/// contract is "consumed in every case", which a C caller can rely on
/// without knowing which check failed.
///
/// # Safety
///
/// `ctx` and `out` as for `ug_array_from_dlpack`; `take` wraps a tensor
/// pointer that satisfies that function's contract.
unsafe fn import(
    ctx: *const ug_context,
    out: *mut *mut ug_array,
    tensor_is_null: bool,
    take: impl FnOnce() -> unigpu_core::dlpack::Result<DlpackTensor>,
) -> ug_status {
    runtime::guard(|| {
        if tensor_is_null {
            return Err(Failure::null("tensor"));
        }
        // Taken first, so that every failure below deletes it.
        let tensor = take().map_err(|e| fail(e.into()))?;
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let array = ctx.ctx.from_dlpack(tensor).or_status()?;
        out.write(ug_array::handle(array));
        Ok(())
    })
}

/// The `(device_type, device_id)` of `ctx`'s arrays in DLPack's numbering
/// (CPU 1, CUDA 2), as `__dlpack_device__` gives it.
///
/// # Safety
///
/// `ctx` is NULL or a live context; the out-pointers are NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_dlpack_device(
    ctx: *const ug_context,
    device_type: *mut i32,
    device_id: *mut i32,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let (t, i) = unsafe {
            (
                Out::new(device_type, "device_type")?,
                Out::new(device_id, "device_id")?,
            )
        };
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let (dt, di) = ctx.ctx.dlpack_device();
        t.write(dt);
        i.write(di);
        Ok(())
    })
}
