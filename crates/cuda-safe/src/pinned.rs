//! Page-locked host memory that copies on a stream read and write
//! directly, without staging: the DMA engine's full rate (about 55 GB/s on
//! an H200), and the copy call returns at once.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};

use cudarc::driver::{result, sys};

use crate::buffer::Kept;
use crate::error::{Context as _, Result, SafeError};
use crate::host_memory::{register_page_locked, unregister_page_locked};
use crate::kernel::BufferArg;
use crate::uses::{UseEnd, Uses};
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};

/// `len` elements of `T` in page-locked host memory (`cuMemHostAlloc`),
/// zeroed when made. Copies to and from device buffers on a stream are
/// truly asynchronous; the host sees the contents through
/// [`Self::as_slice`] and [`Self::as_mut_slice`], which first wait for the
/// copies that would race with it. Dropping waits for pending copies,
/// then frees.
///
/// It is also a kernel argument ([`BufferArg`]) where the device has
/// unified addressing: the kernel reads and writes the host memory itself,
/// through the same address (the driver maps every page-locked allocation
/// on such devices). Its launches, and the replays of graphs that
/// captured one, are ordered like copies, and the drop waits for them.
///
/// Send + Sync: an address plus its use record behind a mutex; `&self`
/// gives shared reads only.
#[derive(Debug)]
pub struct PinnedBuffer<T: Element> {
    /// From `cuMemHostAlloc`; 0 when `len` is 0.
    ptr: usize,
    len: usize,
    uses: Uses,
    device: CudaDevice,
    /// The device has unified addressing: its kernels reach the memory
    /// through the host's address.
    unified: bool,
    _element: PhantomData<T>,
}

impl<T: Element> PinnedBuffer<T> {
    pub fn new(device: &CudaDevice, len: usize) -> Result<Self> {
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            return Err(SafeError::OutOfMemory {
                requested: usize::MAX,
                free: 0,
            });
        };
        let ptr = if bytes == 0 {
            0
        } else {
            device
                .cudarc_context()
                .bind_to_thread()
                .call("cuCtxSetCurrent")?;
            // SAFETY: a plain page-locked allocation, freed in `Drop`.
            let p = unsafe { result::malloc_host(bytes, 0) }.map_err(|e| {
                if SafeError::is_oom(&e) {
                    SafeError::OutOfMemory {
                        requested: bytes,
                        free: 0,
                    }
                } else {
                    SafeError::driver("cuMemHostAlloc", e)
                }
            })?;
            // SAFETY: `p` is `bytes` bytes just allocated and owned here.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
            register_page_locked(p as usize, bytes);
            p as usize
        };
        let unified = device
            .cudarc_context()
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
            .call("cuDeviceGetAttribute")?
            != 0;
        Ok(PinnedBuffer {
            ptr,
            len,
            uses: Uses::default(),
            device: device.clone(),
            unified,
            _element: PhantomData,
        })
    }

    /// Whether kernels can take the buffer as an argument (the device has
    /// unified addressing).
    pub fn kernels_can_take(&self) -> bool {
        self.unified
    }

    /// The address a kernel uses: the host's own, on a device with unified
    /// addressing (`Unsupported` on one without); and whether `stream`
    /// captures a graph (the use is then recorded, not run: the capture
    /// keeps the use record, so each replay is ordered through it).
    fn kernel_ptr(&self, stream: &CudaStreamHandle) -> Result<(u64, bool)> {
        self.check(stream, "a pinned buffer as a kernel argument", self.len)?;
        if !self.unified {
            return Err(SafeError::Unsupported {
                what: "a pinned buffer as a kernel argument on a device without unified \
                       addressing"
                    .into(),
            });
        }
        let capturing = stream
            .device()
            .captures()
            .note_use(stream.cudarc_stream(), || {
                Kept::uses_only(self.uses.share())
            });
        Ok((self.ptr as u64, capturing))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The contents, once the copies pending into the buffer are done.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.uses.synchronize_writes().call("cuStreamSynchronize")?;
        if self.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: `len` initialised elements (zeroed at birth, then written
        // only by copies, which are over) that live as long as `self`; no
        // copy writes them while `&self` is borrowed (writes need `&mut`).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len) })
    }

    /// The contents for writing, once every pending copy from or into the
    /// buffer is done.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.uses.synchronize().call("cuStreamSynchronize")?;
        if self.len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `as_slice`, and no copy reads the memory any more
        // (all synchronized) nor can start while `&mut self` is borrowed.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, self.len) })
    }

    fn check(&self, stream: &CudaStreamHandle, what: &'static str, other: usize) -> Result<()> {
        if stream.device() != &self.device {
            return Err(SafeError::DeviceMismatch { what });
        }
        if other != self.len {
            return Err(SafeError::SizeMismatch {
                what,
                expected: other,
                actual: self.len,
            });
        }
        Ok(())
    }
}

impl PinnedBuffer<u32> {
    /// Element 0, replaced by `value` in one atomic step, without waiting
    /// for anything: for a word that kernels write (as a [`BufferArg`])
    /// while the host reads it, after the caller has waited for the
    /// launches whose writes it wants.
    pub fn swap_first(&self, value: u32) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        // SAFETY: `ptr` is a live, 4-aligned allocation of at least one u32
        // (page-locked memory is page-aligned); every host access to it
        // that may meet a kernel's write goes through this atomic.
        let word = unsafe { AtomicU32::from_ptr(self.ptr as *mut u32) };
        Some(word.swap(value, Ordering::AcqRel))
    }
}

impl<T: Element> BufferArg for PinnedBuffer<T> {
    fn read_ptr(&self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)> {
        let (ptr, capturing) = self.kernel_ptr(stream)?;
        if capturing {
            return Ok((ptr, UseEnd::none()));
        }
        let end = self
            .uses
            .read_on(stream.cudarc_stream(), stream.device().events())?;
        Ok((ptr, end))
    }

    fn write_ptr(&mut self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)> {
        let (ptr, capturing) = self.kernel_ptr(stream)?;
        if capturing {
            return Ok((ptr, UseEnd::none()));
        }
        let end = self
            .uses
            .write_on(stream.cudarc_stream(), stream.device().events())?;
        Ok((ptr, end))
    }

    fn buffer_device(&self) -> &CudaDevice {
        &self.device
    }
}

impl<T: Element> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // A copy still reading or writing the memory must end before it goes.
        let ctx = self.device.cudarc_context();
        ctx.record_err(self.uses.synchronize());
        if self.ptr != 0 {
            unregister_page_locked(self.ptr);
            // SAFETY: from `cuMemHostAlloc`, and no copy uses it any more.
            ctx.record_err(unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) });
        }
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// Copies `src` into the buffer on `stream`, asynchronously: returns at
    /// once, and `src` cannot be written (`as_mut_slice` waits) until the
    /// copy is done.
    pub fn write_from_pinned(
        &mut self,
        stream: &CudaStreamHandle,
        src: &PinnedBuffer<T>,
    ) -> Result<()> {
        src.check(stream, "upload from pinned memory", self.len())?;
        stream
            .device()
            .captures()
            .refuse(stream.cudarc_stream(), "a copy from a pinned buffer")?;
        if self.is_empty() {
            return Ok(());
        }
        let (dst, _end) = self.ptr_for_write(stream)?;
        let _end_src = src
            .uses
            .read_on(stream.cudarc_stream(), stream.device().events())?;
        stream.bind()?;
        // SAFETY: both are `num_bytes` bytes (lengths checked); `src` is
        // page-locked and kept (its `Drop` and `as_mut_slice` wait for this
        // copy); `dst` is ordered on `stream`.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                dst,
                src.ptr as *const std::ffi::c_void,
                src.num_bytes(),
                stream.cu_stream(),
            )
        }
        .result()
        .call("cuMemcpyHtoDAsync")
    }

    /// Copies the buffer into `dst` on `stream`, asynchronously: `dst`'s
    /// `as_slice` waits for it.
    pub fn read_into_pinned(
        &self,
        stream: &CudaStreamHandle,
        dst: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        dst.check(stream, "download into pinned memory", self.len())?;
        stream
            .device()
            .captures()
            .refuse(stream.cudarc_stream(), "a copy into a pinned buffer")?;
        if self.is_empty() {
            return Ok(());
        }
        let (src, _end) = self.ptr_for_read(stream)?;
        let _end_dst = dst
            .uses
            .write_on(stream.cudarc_stream(), stream.device().events())?;
        stream.bind()?;
        // SAFETY: as in `write_from_pinned`, the other way; nothing reads
        // `dst` on the host until its `as_slice` has waited for this copy.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                dst.ptr as *mut std::ffi::c_void,
                src,
                dst.num_bytes(),
                stream.cu_stream(),
            )
        }
        .result()
        .call("cuMemcpyDtoHAsync")
    }
}
