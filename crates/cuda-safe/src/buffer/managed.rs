//! Managed (unified) memory: one address that both the host and the
//! device use, migrated page by page by the driver. Not from the caching
//! allocator: `cuMemAllocManaged`, freed with `cuMemFree`.

use std::sync::Mutex;

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdevice_attribute, CUmemAttach_flags, CUmemLocationType};

use super::{DeviceBuffer, Memory};
use crate::error::{Context as _, Result, SafeError};
use crate::uses::Uses;
use crate::{CudaDevice, CudaStreamHandle, Element};

/// Where [`DeviceBuffer::prefetch`] moves a managed buffer's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManagedLocation {
    /// The buffer's device.
    Device,
    /// Host memory.
    Host,
}

/// Held from the free-memory check until the zeroing has made the memory
/// resident, so that two allocations at once cannot both pass the check
/// with the same free bytes.
static MANAGED: Mutex<()> = Mutex::new(());

impl CudaDevice {
    /// Why managed memory cannot be used on this device, if it cannot.
    fn managed_unsupported(&self) -> Result<Option<String>> {
        let ctx = self.cudarc_context();
        let managed = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)
            .call("cuDeviceGetAttribute")?;
        if managed == 0 {
            return Ok(Some(format!(
                "CUDA device {} has no managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY is 0)",
                self.ordinal()
            )));
        }
        let concurrent = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
            .call("cuDeviceGetAttribute")?;
        if concurrent == 0 {
            // Without it the host may not touch any managed memory while
            // the device runs anything, which a safe slice cannot promise.
            return Ok(Some(format!(
                "CUDA device {} lacks concurrent managed access \
                 (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0: a GPU before Pascal, or \
                 Windows/WSL), so host access to managed memory could fault while any work runs; \
                 use device arrays with pinned buffers instead",
                self.ordinal()
            )));
        }
        Ok(None)
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// `len` zeroed elements of managed memory (`cuMemAllocManaged`,
    /// attached globally), usable by kernels and copies like any buffer
    /// and readable and writable from the host through
    /// [`Self::managed_slice`] and [`Self::managed_slice_mut`].
    ///
    /// Never more than the device has free: managed memory can be
    /// over-subscribed (pages evicted to the host), which can stall or hang
    /// a GPU, so a request over the driver's free bytes (after emptying
    /// the caching allocator) is refused with [`SafeError::OutOfMemory`]
    /// and the free figure. The memory is made resident on the device and
    /// zeroed there before this returns (it waits for `stream`), so the
    /// next request's check counts it.
    ///
    /// `Unsupported` on a device without managed memory or without
    /// concurrent managed access.
    pub fn managed(stream: &CudaStreamHandle, len: usize) -> Result<Self> {
        let device = stream.device();
        if let Some(why) = device.managed_unsupported()? {
            return Err(SafeError::Unsupported { what: why });
        }
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            return Err(SafeError::OutOfMemory {
                requested: usize::MAX,
                free: device.free_bytes(),
            });
        };
        if bytes == 0 {
            let memory = Memory::Managed;
            return Ok(Self::wrap(0, 0, memory, Uses::default(), device));
        }
        let _one_at_a_time = MANAGED.lock().unwrap_or_else(|e| e.into_inner());
        let mut free = device.memory_info()?.0;
        if bytes > free {
            device.empty_cache()?;
            free = device.memory_info()?.0;
        }
        if bytes > free {
            return Err(SafeError::OutOfMemory {
                requested: bytes,
                free,
            });
        }
        stream.bind()?;
        // SAFETY: a plain managed allocation in the bound context, owned by
        // the buffer made below, which frees it (`Released`).
        let ptr = unsafe { result::malloc_managed(bytes, CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }
            .map_err(|e| {
                if SafeError::is_oom(&e) {
                    SafeError::OutOfMemory {
                        requested: bytes,
                        free: device.free_bytes(),
                    }
                } else {
                    SafeError::driver("cuMemAllocManaged", e)
                }
            })?;
        let mut buf = Self::wrap(ptr, len, Memory::Managed, Uses::default(), device);
        buf.prefetch(stream, ManagedLocation::Device)?;
        let (dst, _end) = buf.ptr_for_write(stream)?;
        // SAFETY: `dst` is this buffer's `bytes` bytes, ordered on `stream`
        // after the prefetch.
        unsafe { result::memset_d8_async(dst, 0, bytes, stream.cu_stream()) }
            .call("cuMemsetD8Async")?;
        drop(_end);
        stream.synchronize()?;
        Ok(buf)
    }

    /// Whether the memory is managed ([`Self::managed`]).
    pub fn is_managed(&self) -> bool {
        matches!(self.memory, Some(Memory::Managed))
    }

    fn check_managed(&self, what: &str) -> Result<()> {
        if self.is_managed() {
            Ok(())
        } else {
            Err(SafeError::Unsupported {
                what: format!(
                    "{what} needs managed memory, and this buffer is device memory \
                     (make it with DeviceBuffer::managed)"
                ),
            })
        }
    }

    /// The contents, seen from the host, once the pending writes to the
    /// buffer (on any stream) are done. Pages move to the host as they are
    /// touched; [`Self::prefetch`] to the host first moves them in bulk.
    pub fn managed_slice(&self) -> Result<&[T]> {
        self.check_managed("a host view")?;
        self.uses.synchronize_writes().call("cuStreamSynchronize")?;
        if self.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: `len` elements of managed memory (zeroed when made, every
        // bit pattern a valid `T`) that live as long as `self`. The device
        // may access managed memory while the host does (concurrent managed
        // access, checked when made); no write to it is pending (waited
        // for above) and none can be enqueued while `&self` is borrowed
        // (writes need `&mut`).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len) })
    }

    /// The contents for writing from the host, once every pending use of
    /// the buffer (on any stream) is done.
    pub fn managed_slice_mut(&mut self) -> Result<&mut [T]> {
        self.check_managed("a host view")?;
        self.uses.synchronize().call("cuStreamSynchronize")?;
        if self.len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `managed_slice`, and no device work reads or writes
        // the memory any more (all waited for) nor can start while `&mut
        // self` is borrowed.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, self.len) })
    }

    /// Moves the pages of a managed buffer to `to`, ordered on `stream`
    /// after the buffer's pending writes. Contents do not change, so it is
    /// ordered as a read: a reader on another stream stays correct, only
    /// slower. Returns at once.
    pub fn prefetch(&self, stream: &CudaStreamHandle, to: ManagedLocation) -> Result<()> {
        self.check_managed("prefetch")?;
        if self.is_empty() {
            return Ok(());
        }
        let location = sys::CUmemLocation {
            type_: match to {
                ManagedLocation::Device => CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                ManagedLocation::Host => CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
            },
            id: match to {
                ManagedLocation::Device => self.device.ordinal() as i32,
                ManagedLocation::Host => 0,
            },
        };
        let (ptr, _end) = self.ptr_for_read(stream)?;
        stream.bind()?;
        // SAFETY: `ptr` is this buffer's `num_bytes` bytes of managed memory,
        // kept alive until the work on `stream` is done (its `Drop` waits).
        unsafe { result::mem_prefetch_async(ptr, self.num_bytes(), location, stream.cu_stream()) }
            .call("cuMemPrefetchAsync")
    }
}
