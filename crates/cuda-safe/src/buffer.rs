//! Typed device memory.

use std::fmt::Debug;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result, sys};

use crate::dlpack::{self, ManagedTensor};
use crate::error::{Context as _, Result, SafeError};
use crate::host_memory::is_page_locked;
use crate::staging::min_staged;
use crate::uses::{UseEnd, Uses};
use crate::{CudaDevice, CudaStreamHandle, Element};

mod managed;
pub use managed::ManagedLocation;

/// `len` elements of `T` in device memory from the device's caching
/// allocator, handed back to it on `Drop` (or managed memory from
/// [`DeviceBuffer::managed`], freed on `Drop` after its uses).
///
/// Every use is ordered after the earlier uses it conflicts with, on any
/// stream (`uses.rs` says how, without a driver call when everything runs
/// on one stream). Dropping a buffer with work pending is safe: the
/// allocator hands its memory to another stream only once that work is
/// done.
///
/// Send + Sync: the buffer is a device address plus its use record behind a
/// mutex; sharing `&DeviceBuffer` between threads only allows reads.
///
/// A buffer exported through DLPack ([`DeviceBuffer::to_dlpack`]) keeps its
/// memory until both the buffer and every exported tensor are gone; one
/// imported from DLPack ([`DeviceBuffer::from_dlpack`]) never frees the
/// memory itself but, once its work is done, calls the producer's deleter.
#[derive(Debug)]
pub struct DeviceBuffer<T: Element> {
    ptr: u64,
    len: usize,
    /// `None` only while dropping.
    memory: Option<Memory>,
    /// Taken out only in `Drop` (without putting a new one in its place:
    /// this is every free's path).
    uses: ManuallyDrop<Uses>,
    device: CudaDevice,
    /// Shared with the tensors exported from this buffer; made by the first
    /// export.
    lease: OnceLock<Arc<Lease>>,
    _element: PhantomData<T>,
}

/// Where a buffer's memory came from, and so where it goes back to.
#[derive(Debug)]
enum Memory {
    /// A zero-length buffer: no memory at all.
    Empty,
    /// A block of the device's caching allocator.
    Cached,
    /// Another library's tensor, taken through DLPack.
    Imported(ManagedTensor),
    /// `cuMemAllocManaged` memory (address 0 when empty), freed with
    /// `cuMemFree` after its uses.
    Managed,
}

/// Where a buffer's memory waits, after the buffer is dropped, for the
/// last tensor exported from it, and the last graph whose work uses it, to
/// be gone.
#[derive(Debug, Default)]
struct Lease {
    parked: Mutex<Option<Released>>,
}

/// A buffer's memory on its way out: back to the allocator, waiting only
/// for its uses, or to its producer after its work is done.
#[derive(Debug)]
struct Released {
    ptr: u64,
    memory: Memory,
    /// `None` once released.
    uses: Option<Uses>,
    device: CudaDevice,
}

impl Drop for Released {
    fn drop(&mut self) {
        let Some(uses) = self.uses.take() else {
            return;
        };
        match std::mem::replace(&mut self.memory, Memory::Empty) {
            Memory::Empty => {}
            Memory::Cached => self.device.allocator().free(self.ptr, uses.into_streams()),
            Memory::Imported(tensor) => {
                // Not ours to free: wait for our work on it, then let the
                // producer have it back.
                self.device.cudarc_context().record_err(uses.synchronize());
                drop(tensor);
            }
            Memory::Managed => {
                let ctx = self.device.cudarc_context();
                ctx.record_err(uses.synchronize());
                if self.ptr != 0 {
                    ctx.record_err(ctx.bind_to_thread());
                    // SAFETY: from `cuMemAllocManaged`, freed once (this is
                    // the memory's only release), and its uses are done.
                    ctx.record_err(unsafe { result::free_sync(self.ptr) });
                }
            }
        }
    }
}

/// What a graph keeps of a buffer its work uses, and what a DLPack export
/// of the buffer owns: the lease, so the memory outlives the buffer for as
/// long as the graph (or tensor) lives, and the use record, so each replay
/// (or use through the buffer's export imported again) is ordered like any
/// other use.
#[derive(Debug)]
pub(crate) struct Kept {
    /// `None` for memory that is not the allocator's (a pinned buffer,
    /// whose drop waits for its uses, replays included).
    _lease: Option<Arc<Lease>>,
    uses: Uses,
}

impl Kept {
    /// Only the use record: each replay is ordered, and waited for by
    /// the owner's drop, through it.
    pub(crate) fn uses_only(uses: Uses) -> Kept {
        Kept { _lease: None, uses }
    }

    /// The same for every `Kept` of one buffer.
    pub(crate) fn id(&self) -> usize {
        self.uses.id()
    }

    pub(crate) fn uses(&self) -> &Uses {
        &self.uses
    }
}

impl<T: Element> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        let released = Released {
            ptr: self.ptr,
            memory: self.memory.take().unwrap_or(Memory::Empty),
            // SAFETY: `uses` is never touched again: this is the drop.
            uses: Some(unsafe { ManuallyDrop::take(&mut self.uses) }),
            device: self.device.clone(),
        };
        match self.lease.take() {
            // Parked even if no export is left: dropping our Arc below then
            // frees it, so there is no window where both sides let go.
            Some(lease) => {
                *lease.parked.lock().unwrap_or_else(|e| e.into_inner()) = Some(released);
            }
            None => drop(released),
        }
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// Allocates without initialising. Every bit pattern is a valid `T`
    /// ([`Element`]), so the contents are arbitrary but never unsound.
    pub fn alloc(stream: &CudaStreamHandle, len: usize) -> Result<Self> {
        let device = stream.device();
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            return Err(SafeError::OutOfMemory {
                requested: usize::MAX,
                free: device.free_bytes(),
            });
        };
        if bytes == 0 {
            return Ok(Self::wrap(0, 0, Memory::Empty, Uses::default(), device));
        }
        let cu = stream.cudarc_stream();
        let block = device.allocator().alloc(cu, bytes)?;
        // Memory last used on this stream may still be in use by its
        // earlier work: a first use on another stream must wait for it.
        let uses = if block.used_on_stream {
            Uses::written_on(cu)
        } else {
            Uses::default()
        };
        Ok(Self::wrap(block.addr, len, Memory::Cached, uses, device))
    }

    fn wrap(ptr: u64, len: usize, memory: Memory, uses: Uses, device: &CudaDevice) -> Self {
        DeviceBuffer {
            ptr,
            len,
            memory: Some(memory),
            uses: ManuallyDrop::new(uses),
            device: device.clone(),
            lease: OnceLock::new(),
            _element: PhantomData,
        }
    }

    /// Allocates and zeroes (stream-ordered).
    pub fn zeros(stream: &CudaStreamHandle, len: usize) -> Result<Self> {
        let mut buf = Self::alloc(stream, len)?;
        if len > 0 {
            let bytes = buf.num_bytes();
            let (dst, _end) = buf.ptr_for_write(stream)?;
            // SAFETY: `dst` is this buffer's `bytes` bytes, ordered on
            // `stream` after their earlier uses.
            unsafe { result::memset_d8_async(dst, 0, bytes, stream.cu_stream()) }
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
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// The device address, for diagnostics and tests (which block the
    /// allocator handed out). Using it in a kernel bypasses the buffer's
    /// stream ordering.
    pub fn device_address(&self) -> u64 {
        self.ptr
    }

    /// The device address for a read on `stream`, after the buffer's
    /// pending writes on other streams. For the layers that launch kernels.
    /// The returned [`UseEnd`] is dropped after the read is enqueued.
    pub(crate) fn ptr_for_read(&self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)> {
        self.check_device(stream)?;
        if self.captured(stream) {
            return Ok((self.ptr, UseEnd::none()));
        }
        let end = self
            .uses
            .read_on(stream.cudarc_stream(), self.device.events())?;
        Ok((self.ptr, end))
    }

    /// The device address for a write on `stream`, after every pending use
    /// on other streams.
    /// The returned [`UseEnd`] is dropped after the write is enqueued.
    pub(crate) fn ptr_for_write(&mut self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)> {
        self.check_device(stream)?;
        if self.captured(stream) {
            return Ok((self.ptr, UseEnd::none()));
        }
        let end = self
            .uses
            .write_on(stream.cudarc_stream(), self.device.events())?;
        Ok((self.ptr, end))
    }

    /// When `stream` captures a graph, hands the capture what keeps this
    /// buffer's memory for its replays, and returns true: the use is
    /// recorded, not run, so it is ordered at each replay instead of now.
    fn captured(&self, stream: &CudaStreamHandle) -> bool {
        self.device
            .captures()
            .note_use(stream.cudarc_stream(), || Kept {
                _lease: Some(self.lease.get_or_init(Arc::default).clone()),
                uses: self.uses.share(),
            })
    }

    fn check_device(&self, stream: &CudaStreamHandle) -> Result<()> {
        if stream.device() == &self.device {
            Ok(())
        } else {
            Err(SafeError::DeviceMismatch {
                what: "a buffer used on another device's stream",
            })
        }
    }

    /// Copies `host` into the buffer on `stream`; lengths must match.
    /// Returns once `host` may be reused: the driver stages pageable memory
    /// before it returns.
    pub fn write_from(&mut self, stream: &CudaStreamHandle, host: &[T]) -> Result<()> {
        check_len("upload", self.len(), host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.device
            .captures()
            .refuse(stream.cudarc_stream(), "an upload from host memory")?;
        let (dst, _end) = self.ptr_for_write(stream)?;
        let bytes = self.num_bytes();
        if is_page_locked(host.as_ptr().cast(), bytes) {
            // A slice of a `PinnedBuffer`: the DMA reads it directly, at
            // full rate and without a host copy, but asynchronously, so the
            // call waits for it to keep "returns once `host` may be reused".
            stream.bind()?;
            // SAFETY: `dst` holds `host.len()` elements (checked) and is
            // ordered on `stream`; `host` is borrowed until the sync below
            // has seen the copy end.
            unsafe { result::memcpy_htod_async(dst, host, stream.cu_stream()) }
                .call("cuMemcpyHtoDAsync")?;
            return stream.synchronize();
        }
        if bytes >= min_staged() {
            // SAFETY: `host` is `bytes` bytes (lengths checked), borrowed for
            // the call; `dst` is this buffer, ordered on `stream`.
            return unsafe {
                self.device
                    .staging()
                    .upload(stream, dst, host.as_ptr().cast(), bytes)
            };
        }
        stream.bind()?;
        // SAFETY: `dst` holds `host.len()` elements (checked) and is ordered
        // on `stream`. The driver reads pageable `host` before it returns.
        unsafe { result::memcpy_htod_async(dst, host, stream.cu_stream()) }
            .call("cuMemcpyHtoDAsync")
    }

    /// Copies the buffer into `host` after the work before it on `stream`
    /// (and any stream that wrote the buffer) is done; blocks until then.
    pub fn read_into(&self, stream: &CudaStreamHandle, host: &mut [T]) -> Result<()> {
        check_len("download", self.len(), host.len())?;
        if host.is_empty() {
            return stream.synchronize();
        }
        // SAFETY: `host` is exactly the buffer's bytes (lengths checked),
        // borrowed mutably for the call.
        unsafe { self.read_raw(stream, host.as_mut_ptr().cast()) }
    }

    /// Copies the whole buffer to `dst` after the work before it on
    /// `stream`; blocks until `dst` holds it. Large buffers go through the
    /// device's staging ring.
    ///
    /// # Safety
    /// `dst` is valid for writes of `self.num_bytes()` bytes and nothing
    /// else uses it during the call.
    unsafe fn read_raw(&self, stream: &CudaStreamHandle, dst: *mut u8) -> Result<()> {
        self.device
            .captures()
            .refuse(stream.cudarc_stream(), "a download into host memory")?;
        let (src, _end) = self.ptr_for_read(stream)?;
        let bytes = self.num_bytes();
        if is_page_locked(dst, bytes) {
            // The DMA writes a `PinnedBuffer`'s memory directly; the sync
            // below waits for it.
            stream.bind()?;
            // SAFETY: `dst` per this function's contract; `src` is this
            // buffer, ordered on `stream`.
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.cu_stream()) }
                .result()
                .call("cuMemcpyDtoHAsync")?;
        } else if bytes >= min_staged() {
            // SAFETY: forwarded from this function's contract; `src` is this
            // buffer, ordered on `stream`.
            unsafe { self.device.staging().download(stream, src, dst, bytes) }?;
        } else {
            // Wait for the stream here, not inside the copy: a pageable
            // copy that waits in the driver holds up other threads'
            // pageable copies on other streams (a pipeline's upload behind
            // its gated download; tests/streams.rs,
            // a_waiting_download_does_not_hold_up_an_upload).
            stream.synchronize()?;
            stream.bind()?;
            // SAFETY: `dst` per this function's contract; `src` is this
            // buffer, ordered on `stream`. The copy into pageable memory has
            // ended when the call returns; the sync below also covers
            // page-locked `dst`.
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.cu_stream()) }
                .result()
                .call("cuMemcpyDtoHAsync")?;
        }
        stream.synchronize()
    }

    /// Like [`Self::read_into`], into a new vector, written once: no
    /// zeroing first, and large buffers fill it from several threads.
    pub fn to_host(&self, stream: &CudaStreamHandle) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len());
        if self.is_empty() {
            stream.synchronize()?;
            return Ok(out);
        }
        // SAFETY: the vector's capacity holds `num_bytes` bytes, which the
        // copy writes through a raw pointer (no reference to uninitialised
        // memory is made).
        unsafe { self.read_raw(stream, out.as_mut_ptr().cast()) }?;
        // SAFETY: every byte of the first `len` elements was written above,
        // and any bytes are a valid `T` (`Element` is `Pod`).
        unsafe { out.set_len(self.len()) };
        Ok(out)
    }

    /// Device-to-device copy into `dst`, stream-ordered; lengths must match.
    pub fn copy_to(&self, stream: &CudaStreamHandle, dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("copy_to", self.len(), dst.len())?;
        if self.is_empty() {
            return Ok(());
        }
        let (src, _end) = self.ptr_for_read(stream)?;
        let (to, _end_dst) = dst.ptr_for_write(stream)?;
        stream.bind()?;
        // SAFETY: both are `num_bytes` bytes of this device's memory (lengths
        // checked), ordered on `stream` after their conflicting uses.
        unsafe { result::memcpy_dtod_async(to, src, self.num_bytes(), stream.cu_stream()) }
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
        let (src, _end) = self.ptr_for_read(stream)?;
        stream.bind()?;
        // SAFETY: `src` is this buffer, ordered on `stream`; `dst` per the
        // caller's contract; both in the stream's context.
        unsafe { result::memcpy_dtod_async(dst, src, self.num_bytes(), stream.cu_stream()) }
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
        let (dst, _end) = self.ptr_for_write(stream)?;
        stream.bind()?;
        // SAFETY: `dst` is this buffer, ordered on `stream`; `src` per the
        // caller's contract; both in the stream's context.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
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
        // Waits on `stream` for the buffer's pending uses, and counts the
        // consumer's use as a write on `stream`.
        let (data, _end) = self.ptr_for_write(stream)?;
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
            len: self.len,
            read_only: false,
        };
        // The owner also carries the buffer's use record, so that an import
        // of this tensor in this process (`from_dlpack`) orders its work
        // with the buffer's, as one buffer's.
        let owner = Kept {
            _lease: Some(lease),
            uses: self.uses.share(),
        };
        // SAFETY: the owner holds the buffer's lease: when the buffer drops,
        // its memory is parked in the lease instead of freed, so it lives
        // until the last exported tensor lets go of the lease.
        let tensor = unsafe { ManagedTensor::export(Box::new(owner), desc) };
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
        // The tensor (kept until the memory is released) guarantees
        // `view.len` elements at `view.data` in this device's memory
        // (checked: device, dtype, extent, alignment).
        let (ptr, len) = (view.data, view.len);
        // A buffer's own export coming back (same device, checked above)
        // shares the buffer's use record: a write through either, then a
        // use through the other on any stream, is ordered as on one buffer.
        // Memory from another library starts with no uses of ours.
        let uses = tensor
            .owner::<Kept>()
            .map_or_else(Uses::default, |kept| kept.uses.share());
        Ok(Self::wrap(ptr, len, Memory::Imported(tensor), uses, device))
    }

    /// Whether the memory came from another library through DLPack.
    pub fn is_imported(&self) -> bool {
        matches!(self.memory, Some(Memory::Imported(_)))
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
