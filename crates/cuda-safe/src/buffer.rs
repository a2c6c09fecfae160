//! Typed device memory.

use std::any::Any;
use std::fmt::Debug;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};

use crate::dlpack::{self, ManagedTensor};

use crate::error::{Context as _, Result, SafeError};
use crate::{CudaDevice, CudaStreamHandle};

mod sealed {
    pub trait Sealed {
        /// The element's DLPack dtype.
        const DLPACK: crate::dlpack::ffi::DLDataType;
    }
}

/// The element types a [`DeviceBuffer`] may hold: plain numbers for which
/// every bit pattern is a valid value, so reading device memory back can
/// never produce an invalid Rust value.
pub trait Element:
    DeviceRepr + ValidAsZeroBits + bytemuck::Pod + Default + Debug + Send + Sync + sealed::Sealed
{
}

macro_rules! elements {
    ($($t:ty => $code:ident),*) => {$(
        impl sealed::Sealed for $t {
            const DLPACK: crate::dlpack::ffi::DLDataType = crate::dlpack::ffi::DLDataType {
                code: crate::dlpack::ffi::$code,
                bits: (8 * std::mem::size_of::<$t>()) as u8,
                lanes: 1,
            };
        }
        impl Element for $t {}
    )*};
}
elements!(
    f32 => kDLFloat, f64 => kDLFloat, half::f16 => kDLFloat, half::bf16 => kDLBfloat,
    i32 => kDLInt, u32 => kDLUInt, i64 => kDLInt, u64 => kDLUInt, u8 => kDLUInt
);

/// `len` elements of `T` in device memory, freed (stream-ordered) on `Drop`.
///
/// Send + Sync: the buffer is a device address plus cudarc's read/write
/// events, which order every use across streams; sharing `&DeviceBuffer`
/// between threads only allows reads.
///
/// A buffer exported through DLPack ([`DeviceBuffer::to_dlpack`]) keeps its
/// memory until both the buffer and every exported tensor are gone; one
/// imported from DLPack ([`DeviceBuffer::from_dlpack`]) never frees the
/// memory itself but, once its work is done, calls the producer's deleter.
#[derive(Debug)]
pub struct DeviceBuffer<T: Element> {
    /// Taken out only in `Drop`.
    slice: ManuallyDrop<CudaSlice<T>>,
    device: CudaDevice,
    /// Shared with the tensors exported from this buffer; made by the first
    /// export.
    lease: OnceLock<Arc<Lease>>,
    /// The producer's tensor when the memory came from another library.
    imported: Option<ManagedTensor>,
}

/// Where a buffer's memory waits, after the buffer is dropped, for the
/// last tensor exported from it to be deleted.
#[derive(Debug, Default)]
struct Lease {
    parked: Mutex<Option<Box<dyn Any + Send>>>,
}

/// A buffer's memory on its way out: freed stream-ordered when it is ours,
/// handed back to its producer after its work when it was imported.
struct Memory<T> {
    slice: Option<CudaSlice<T>>,
    imported: Option<ManagedTensor>,
}

impl<T> Drop for Memory<T> {
    fn drop(&mut self) {
        let Some(slice) = self.slice.take() else {
            return;
        };
        let Some(tensor) = self.imported.take() else {
            return drop(slice); // cudarc frees it, stream-ordered
        };
        // Not ours to free: wait for our work on it to finish, then let the
        // producer have it back.
        let stream = slice.stream().clone();
        slice.leak();
        if let Err(e) = stream.synchronize() {
            stream.context().record_err(Err::<(), _>(e));
        }
        drop(tensor);
    }
}

impl<T: Element> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: `slice` is never used again: this is the drop.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        let memory = Memory {
            slice: Some(slice),
            imported: self.imported.take(),
        };
        match self.lease.take() {
            // Parked even if no export is left: dropping our Arc below then
            // frees it, so there is no window where both sides let go.
            Some(lease) => {
                *lease.parked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(memory));
            }
            None => drop(memory),
        }
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// Allocates without initialising. Every bit pattern is a valid `T`
    /// ([`Element`]), so the contents are arbitrary but never unsound.
    pub fn alloc(stream: &CudaStreamHandle, len: usize) -> Result<Self> {
        let device = stream.device();
        let cu = stream.cudarc_stream();
        if len.checked_mul(std::mem::size_of::<T>()).is_none() {
            return Err(SafeError::OutOfMemory {
                requested: usize::MAX,
                free: device.free_bytes(),
            });
        }
        let mut slice = if len == 0 {
            cu.null::<T>().call("cuMemAllocAsync")
        } else {
            // SAFETY: `T: Element` is `Pod`: whatever bytes the allocation holds
            // form a valid `T`, so exposing them uninitialised is sound.
            match unsafe { cu.alloc::<T>(len) } {
                // The pool keeps freed memory (see `CudaDevice::open`): give it
                // back and try once more before calling it out of memory.
                Err(e) if SafeError::is_oom(&e) => {
                    device.trim_pool();
                    // SAFETY: as above.
                    unsafe { cu.alloc::<T>(len) }.map_err(|e| oom_or::<T>(device, len, e))
                }
                other => other.map_err(|e| oom_or::<T>(device, len, e)),
            }
        }?;
        // Count the stream-ordered allocation as a write on `stream`, so the
        // first use on another stream waits for it (the pool may hand out
        // memory that earlier work on `stream` is still freeing).
        drop(slice.device_ptr_mut(cu));
        Ok(Self::wrap(slice, device, None))
    }

    fn wrap(slice: CudaSlice<T>, device: &CudaDevice, imported: Option<ManagedTensor>) -> Self {
        DeviceBuffer {
            slice: ManuallyDrop::new(slice),
            device: device.clone(),
            lease: OnceLock::new(),
            imported,
        }
    }

    /// Allocates and zeroes (stream-ordered).
    pub fn zeros(stream: &CudaStreamHandle, len: usize) -> Result<Self> {
        let mut buf = Self::alloc(stream, len)?;
        if len > 0 {
            stream
                .cudarc_stream()
                .memset_zeros(&mut *buf.slice)
                .call("cuMemsetD8Async")?;
        }
        Ok(buf)
    }

    /// Allocates and copies `host` in. Returns once `host` may be reused.
    pub fn from_host(stream: &CudaStreamHandle, host: &[T]) -> Result<Self> {
        let mut buf = Self::alloc(stream, host.len())?;
        buf.write_from(stream, host)?;
        Ok(buf)
    }

    pub fn len(&self) -> usize {
        self.slice.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn num_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// Copies `host` into the buffer on `stream`; lengths must match.
    pub fn write_from(&mut self, stream: &CudaStreamHandle, host: &[T]) -> Result<()> {
        check_len("upload", self.len(), host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        stream
            .cudarc_stream()
            .memcpy_htod(host, &mut *self.slice)
            .call("cuMemcpyHtoDAsync")
    }

    /// Copies the buffer into `host` after the work before it on `stream`
    /// (and any stream that wrote the buffer) is done; blocks until then.
    pub fn read_into(&self, stream: &CudaStreamHandle, host: &mut [T]) -> Result<()> {
        check_len("download", self.len(), host.len())?;
        if host.is_empty() {
            return stream.synchronize();
        }
        stream
            .cudarc_stream()
            .memcpy_dtoh(&*self.slice, host)
            .call("cuMemcpyDtoHAsync")
    }

    /// Like [`Self::read_into`], into a new vector.
    pub fn to_host(&self, stream: &CudaStreamHandle) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.len()];
        self.read_into(stream, &mut out)?;
        Ok(out)
    }

    /// Device-to-device copy into `dst`, stream-ordered; lengths must match.
    pub fn copy_to(&self, stream: &CudaStreamHandle, dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("copy_to", self.len(), dst.len())?;
        if self.is_empty() {
            return Ok(());
        }
        stream
            .cudarc_stream()
            .memcpy_dtod(&*self.slice, &mut *dst.slice)
            .call("cuMemcpyDtoDAsync")
    }

    /// Copies the whole buffer to the raw device address `dst` on `stream`,
    /// after the buffer's pending writes on any stream.
    ///
    /// # Safety
    /// `dst` is `self.num_bytes()` bytes of device memory in this buffer's
    /// context that nothing else uses until the copy completes on `stream`,
    /// and that stays allocated until then.
    pub unsafe fn copy_to_raw(&self, stream: &CudaStreamHandle, dst: u64) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let cu = stream.cudarc_stream();
        let (src, _read) = self.slice.device_ptr(cu);
        // SAFETY: `src` is this buffer (read tracked by `_read`); `dst` per the
        // caller's contract; both in the stream's context.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(dst, src, self.num_bytes(), cu.cu_stream())
        }
        .call("cuMemcpyDtoDAsync")
    }

    /// Overwrites the whole buffer from the raw device address `src` on
    /// `stream`, after the buffer's pending uses on any stream.
    ///
    /// # Safety
    /// `src` is `self.num_bytes()` bytes of device memory in this buffer's
    /// context that nothing writes until the copy completes on `stream`, and
    /// that stays allocated until then.
    pub unsafe fn copy_from_raw(&mut self, stream: &CudaStreamHandle, src: u64) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let bytes = self.num_bytes();
        let cu = stream.cudarc_stream();
        let (dst, _write) = self.slice.device_ptr_mut(cu);
        // SAFETY: `dst` is this buffer (write tracked by `_write`); `src` per
        // the caller's contract; both in the stream's context.
        unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, cu.cu_stream()) }
            .call("cuMemcpyDtoDAsync")
    }

    /// A new buffer with the same contents.
    pub fn try_clone(&self, stream: &CudaStreamHandle) -> Result<Self> {
        let mut out = Self::alloc(stream, self.len())?;
        self.copy_to(stream, &mut out)?;
        Ok(out)
    }

    /// Exports the buffer as a DLPack CUDA tensor sharing its memory. The
    /// tensor keeps the memory alive after the buffer is dropped. Returns an
    /// event, recorded on `stream` after every pending use of the buffer,
    /// that the consumer must wait for (on its stream, or on the host)
    /// before touching the data.
    pub fn to_dlpack(
        &mut self,
        stream: &CudaStreamHandle,
    ) -> Result<(ManagedTensor, crate::CudaEventHandle)> {
        let cu = stream.cudarc_stream();
        let len = self.len();
        // Waits on `stream` for the buffer's pending reads and writes, and
        // counts the consumer's use as a write on `stream`.
        let data = {
            let (data, _write) = self.slice.device_ptr_mut(cu);
            data
        };
        let ready = crate::CudaEventHandle::new(&self.device)?;
        ready.record(stream)?;
        let lease = self.lease.get_or_init(Arc::default).clone();
        let desc = dlpack::Export {
            data,
            device: dlpack::ffi::DLDevice {
                device_type: dlpack::ffi::kDLCUDA,
                device_id: self.device.ordinal() as i32,
            },
            dtype: T::DLPACK,
            len,
            read_only: false,
        };
        // SAFETY: the owner is the buffer's lease: when the buffer drops, its
        // memory is parked in the lease instead of freed, so it lives until
        // the last exported tensor lets go of the lease.
        let tensor = unsafe { ManagedTensor::export(Box::new(lease), desc) };
        Ok((tensor, ready))
    }

    /// Takes a DLPack tensor in this buffer's device memory as a buffer,
    /// without copying. The tensor must be on `stream`'s device (kDLCUDA
    /// with its ordinal), hold `T`s, be contiguous and writable. Work on
    /// the buffer starts on `stream`; ordering it after the producer's work
    /// is the caller's duty, as DLPack specifies. When the buffer is
    /// dropped, its work is waited for and the producer's deleter called.
    pub fn from_dlpack(stream: &CudaStreamHandle, tensor: ManagedTensor) -> Result<Self> {
        let view = tensor.view()?;
        let device = stream.device();
        let ours = dlpack::ffi::DLDevice {
            device_type: dlpack::ffi::kDLCUDA,
            device_id: device.ordinal() as i32,
        };
        if view.device != ours {
            return Err(SafeError::Dlpack {
                message: format!(
                    "the tensor is on DLPack device ({}, {}), this context is CUDA device {} ({}, {})",
                    view.device.device_type,
                    view.device.device_id,
                    device.ordinal(),
                    ours.device_type,
                    ours.device_id
                ),
            });
        }
        view.expect_dtype::<T>()?;
        if tensor.is_read_only() {
            return Err(SafeError::Dlpack {
                message: "the tensor is read-only, and unigpu arrays are writable".into(),
            });
        }
        let cu = stream.cudarc_stream();
        let slice = if view.len == 0 {
            cu.null::<T>().call("cuMemAllocAsync")?
        } else {
            // SAFETY: the tensor (kept in the buffer until its memory is
            // released) guarantees `view.len` elements at `view.data` in this
            // device's memory (checked: device, dtype, extent, alignment);
            // `Memory::drop` leaks the slice instead of freeing it.
            unsafe { cu.upgrade_device_ptr::<T>(view.data, view.len) }
        };
        Ok(Self::wrap(slice, device, Some(tensor)))
    }

    /// Whether the memory came from another library through DLPack.
    pub fn is_imported(&self) -> bool {
        self.imported.is_some()
    }

    /// The underlying cudarc slice, for the layers that launch kernels.
    pub fn as_cudarc(&self) -> &CudaSlice<T> {
        &self.slice
    }

    /// Mutable access to the underlying cudarc slice.
    pub fn as_cudarc_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(SafeError::SizeMismatch {
            what,
            expected,
            actual,
        })
    }
}

fn oom_or<T>(device: &CudaDevice, len: usize, err: cudarc::driver::DriverError) -> SafeError {
    if SafeError::is_oom(&err) {
        SafeError::OutOfMemory {
            requested: len.saturating_mul(std::mem::size_of::<T>()),
            free: device.free_bytes(),
        }
    } else {
        SafeError::driver("cuMemAllocAsync", err)
    }
}
