//! Typed device memory.

use std::fmt::Debug;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};

use crate::error::{Context as _, Result, SafeError};
use crate::{CudaDevice, CudaStreamHandle};

mod sealed {
    pub trait Sealed {}
}

/// The element types a [`DeviceBuffer`] may hold: plain numbers for which
/// every bit pattern is a valid value, so reading device memory back can
/// never produce an invalid Rust value.
pub trait Element:
    DeviceRepr + ValidAsZeroBits + bytemuck::Pod + Default + Debug + Send + Sync + sealed::Sealed
{
}

macro_rules! elements {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {}
    )*};
}
elements!(f32, f64, i32, u32, i64, u64, u8, half::f16, half::bf16);

/// `len` elements of `T` in device memory, freed (stream-ordered) on `Drop`.
///
/// Send + Sync: the buffer is a device address plus cudarc's read/write
/// events, which order every use across streams; sharing `&DeviceBuffer`
/// between threads only allows reads.
#[derive(Debug)]
pub struct DeviceBuffer<T: Element> {
    slice: CudaSlice<T>,
    device: CudaDevice,
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
        Ok(DeviceBuffer {
            slice,
            device: device.clone(),
        })
    }

    /// Allocates and zeroes (stream-ordered).
    pub fn zeros(stream: &CudaStreamHandle, len: usize) -> Result<Self> {
        let mut buf = Self::alloc(stream, len)?;
        if len > 0 {
            stream
                .cudarc_stream()
                .memset_zeros(&mut buf.slice)
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
            .memcpy_htod(host, &mut self.slice)
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
            .memcpy_dtoh(&self.slice, host)
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
            .memcpy_dtod(&self.slice, &mut dst.slice)
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
