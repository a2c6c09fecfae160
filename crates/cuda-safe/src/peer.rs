//! Copies between the memory of two devices.
//!
//! Where one device can reach the other's memory (NVLink, or PCIe peer to
//! peer), a copy is one DMA (`cuMemcpyPeerAsync`), after peer access is
//! enabled once per pair of opened devices. Elsewhere it is staged through
//! page-locked host memory in chunks: device to host on the source's
//! stream, host to device on the destination's, so that the two halves of
//! consecutive chunks overlap.
//!
//! A buffer's use record only ever holds streams of its own device (an
//! event can only be recorded on a stream of its own context): the read of
//! the source is a use on the source's stream, the write of the
//! destination a use on the destination's, and the two streams meet
//! through events, which a stream of any device may wait on.

use std::sync::{Mutex, MutexGuard};

use cudarc::driver::{CudaEvent, result, sys};

use crate::error::{Context as _, Result, SafeError};
use crate::event_pool::PooledEvent;
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};

/// Bytes per staging slot, and slots per source device: two slots keep
/// one chunk going down while the previous one goes up; four leave room
/// for the destination falling behind.
const SLOT: usize = 8 << 20;
const SLOTS: usize = 4;

/// How [`DeviceBuffer::copy_to_device`] moves the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerPath {
    /// Both buffers are on one device: a device-to-device copy.
    SameDevice,
    /// One DMA between the devices (peer access).
    Direct,
    /// Through page-locked host memory.
    Staged,
}

/// Whether device `from` can read and write device `to`'s memory
/// directly, by ordinals (no context is made). A device reaches itself.
pub fn can_access_peer(from: usize, to: usize) -> Result<bool> {
    crate::device_count()?;
    if from == to {
        return Ok(true);
    }
    let from_dev = result::device::get(from as i32).call("cuDeviceGet")?;
    let to_dev = result::device::get(to as i32).call("cuDeviceGet")?;
    let mut can = 0;
    // SAFETY: `can` is a valid out-pointer and both devices exist (the
    // driver loaded and `cuDeviceGet` found them).
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from_dev, to_dev) }
        .result()
        .call("cuDeviceCanAccessPeer")?;
    Ok(can != 0)
}

impl CudaDevice {
    /// Whether this device can read and write `other`'s memory directly.
    pub fn can_access_peer(&self, other: &CudaDevice) -> Result<bool> {
        can_access_peer(self.ordinal(), other.ordinal())
    }

    /// Lets this device's kernels and copies reach `other`'s memory
    /// directly, once per pair (later calls cost a lock). Returns false,
    /// doing nothing, where the hardware has no such path.
    pub fn enable_peer_access(&self, other: &CudaDevice) -> Result<bool> {
        if self.ordinal() == other.ordinal() {
            return Ok(true);
        }
        let mut peers = self.peers().lock().unwrap_or_else(|e| e.into_inner());
        if peers.contains(&other.ordinal()) {
            return Ok(true);
        }
        if !self.can_access_peer(other)? {
            return Ok(false);
        }
        let ctx = self.cudarc_context();
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        // SAFETY: the current context is this device's, and `other`'s
        // context is alive (held by `other`) for the call.
        let status = unsafe { sys::cuCtxEnablePeerAccess(other.cudarc_context().cu_ctx(), 0) };
        match status {
            // Another open of the same device, or another library, enabled
            // it first: access is on, which is all that was asked.
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                peers.insert(other.ordinal());
                Ok(true)
            }
            other => Err(SafeError::driver(
                "cuCtxEnablePeerAccess",
                result::DriverError(other),
            )),
        }
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// Copies this buffer into `dst`, a buffer of the same length on any
    /// device: the read is ordered on `src_stream` (this buffer's device)
    /// after the buffer's pending writes, the write on `dst_stream`
    /// (`dst`'s device) after `dst`'s pending uses, and later uses of
    /// either buffer wait for the copy. Direct where the devices reach each
    /// other (peer access, enabled on first use), else staged through
    /// page-locked host memory; `staged` forces the latter. Returns the
    /// path taken. Asynchronous: returns once the copy is enqueued.
    pub fn copy_to_device(
        &self,
        src_stream: &CudaStreamHandle,
        dst: &mut DeviceBuffer<T>,
        dst_stream: &CudaStreamHandle,
        staged: bool,
    ) -> Result<PeerPath> {
        if self.len() != dst.len() {
            return Err(SafeError::SizeMismatch {
                what: "copy between devices",
                expected: dst.len(),
                actual: self.len(),
            });
        }
        if self.device() == dst.device() {
            // One device: `dst_stream` reads too, ordered by the use record.
            self.copy_to(dst_stream, dst)?;
            return Ok(PeerPath::SameDevice);
        }
        for stream in [src_stream, dst_stream] {
            stream
                .device()
                .captures()
                .refuse(stream.cudarc_stream(), "a copy between devices")?;
        }
        let path = if !staged && dst.device().enable_peer_access(self.device())? {
            PeerPath::Direct
        } else {
            PeerPath::Staged
        };
        if self.is_empty() {
            return Ok(path);
        }
        let bytes = self.num_bytes();
        let (src, src_end) = self.ptr_for_read(src_stream)?;
        let (to, dst_end) = dst.ptr_for_write(dst_stream)?;
        // `dst_stream` starts once the source is ready on `src_stream`.
        meet(src_stream, dst_stream)?;
        match path {
            PeerPath::Direct => {
                dst_stream.bind()?;
                // SAFETY: `src` is `bytes` bytes of this buffer, ready once
                // `dst_stream` passes the event above; `to` is `dst`,
                // ordered on `dst_stream`; both contexts are alive (held by
                // the buffers).
                unsafe {
                    result::memcpy_peer_async(
                        dst.device().cudarc_context().cu_ctx(),
                        to,
                        self.device().cudarc_context().cu_ctx(),
                        src,
                        bytes,
                        dst_stream.cu_stream(),
                    )
                }
                .call("cuMemcpyPeerAsync")?;
            }
            PeerPath::Staged | PeerPath::SameDevice => {
                // SAFETY: `src` and `to` are the two buffers' `bytes`
                // bytes, ordered on their streams as above.
                unsafe { staged_copy(src_stream, src, dst_stream, to, bytes) }?;
            }
        }
        drop(dst_end);
        // The source's use ends when the copy does, on its own stream.
        meet(dst_stream, src_stream)?;
        drop(src_end);
        Ok(path)
    }
}

/// Makes later work on `waiter` wait for the work enqueued on `earlier`
/// so far, across devices: the event is of `earlier`'s context.
fn meet(earlier: &CudaStreamHandle, waiter: &CudaStreamHandle) -> Result<()> {
    let event = earlier.device().events().take(false)?;
    event
        .event()
        .record(earlier.cudarc_stream())
        .call("cuEventRecord")?;
    waiter
        .cudarc_stream()
        .wait(event.event())
        .call("cuStreamWaitEvent")
}

/// The page-locked slots a source device stages copies to other devices
/// through, made on the first staged copy.
#[derive(Debug, Default)]
pub(crate) struct PeerStaging {
    slots: Mutex<Vec<StagingSlot>>,
}

#[derive(Debug)]
struct StagingSlot {
    /// `SLOT` bytes from `cuMemHostAlloc`, as an address so the slot is Send.
    host: usize,
    /// Recorded on the source's stream after the chunk reached the slot.
    down: CudaEvent,
    /// Recorded on the destination's stream after the chunk left the
    /// slot (an event of the destination's context); `None` before the
    /// slot's first use.
    up: Option<PooledEvent>,
}

impl PeerStaging {
    fn lock(&self) -> MutexGuard<'_, Vec<StagingSlot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for PeerStaging {
    fn drop(&mut self) {
        for slot in self.lock().drain(..) {
            // A copy still using the slot must end before its memory goes;
            // a failed wait leaves a broken context, where freeing is all
            // that is left to do.
            if let Some(up) = &slot.up {
                let _ = up.event().synchronize();
            }
            let _ = slot.down.synchronize();
            // SAFETY: from `cuMemHostAlloc`; no copy uses it any more.
            let _ = unsafe { result::free_host(slot.host as *mut std::ffi::c_void) };
        }
    }
}

/// Copies `bytes` from `src` (on `src_stream`'s device) to `dst` (on
/// `dst_stream`'s) through the source device's staging slots, chunk by
/// chunk; returns once every chunk is enqueued.
///
/// # Safety
/// `src` and `dst` are `bytes` bytes of device memory on the two streams'
/// devices, ordered on those streams, and stay allocated until the copy
/// completes.
unsafe fn staged_copy(
    src_stream: &CudaStreamHandle,
    src: u64,
    dst_stream: &CudaStreamHandle,
    dst: u64,
    bytes: usize,
) -> Result<()> {
    let source = src_stream.device();
    let mut slots = source.peer_staging().lock();
    if slots.is_empty() {
        src_stream.bind()?;
        // A slot is pushed as soon as it exists, so that `Drop` frees
        // every slot made before a failure.
        for _ in 0..SLOTS {
            let down = source
                .cudarc_context()
                .new_event(None)
                .call("cuEventCreate")?;
            // SAFETY: a plain page-locked allocation, freed in `Drop`; the
            // portable flag makes it page-locked for every context.
            let host = unsafe { result::malloc_host(SLOT, sys::CU_MEMHOSTALLOC_PORTABLE) }
                .call("cuMemHostAlloc")?;
            slots.push(StagingSlot {
                host: host as usize,
                down,
                up: None,
            });
        }
    }
    for (i, offset) in (0..bytes).step_by(SLOT).enumerate() {
        let n = SLOT.min(bytes - offset);
        // Modulo the slots made: a ring cut short by a failed allocation
        // still works, with fewer slots.
        let count = slots.len();
        let slot = &mut slots[i % count];
        // The slot's previous chunk must have left it before this one lands.
        if let Some(up) = &slot.up {
            src_stream
                .cudarc_stream()
                .wait(up.event())
                .call("cuStreamWaitEvent")?;
        }
        src_stream.bind()?;
        // SAFETY: the slot holds `SLOT >= n` bytes and nothing else uses
        // it until `down`; `src + offset` is `n` bytes of the source.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                slot.host as *mut std::ffi::c_void,
                src + offset as u64,
                n,
                src_stream.cu_stream(),
            )
        }
        .result()
        .call("cuMemcpyDtoHAsync")?;
        slot.down
            .record(src_stream.cudarc_stream())
            .call("cuEventRecord")?;
        dst_stream
            .cudarc_stream()
            .wait(&slot.down)
            .call("cuStreamWaitEvent")?;
        dst_stream.bind()?;
        // SAFETY: the slot holds the chunk once `dst_stream` passes `down`;
        // `dst + offset` is `n` bytes of the destination.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                dst + offset as u64,
                slot.host as *const std::ffi::c_void,
                n,
                dst_stream.cu_stream(),
            )
        }
        .result()
        .call("cuMemcpyHtoDAsync")?;
        let up = dst_stream.device().events().take(false)?;
        up.event()
            .record(dst_stream.cudarc_stream())
            .call("cuEventRecord")?;
        slot.up = Some(up);
    }
    Ok(())
}
