//! Copies between ordinary (pageable) host memory and the device through a
//! ring of page-locked slots, one ring per device.
//!
//! The driver copies pageable memory through its own small staging buffer,
//! one piece at a time, on the calling thread: about 14 GB/s for 64 MiB
//! and 8 GB/s for 256 MiB on an H200, where a DMA from page-locked memory
//! runs at 55 GB/s. Here the host side of each chunk is copied by several
//! threads (one thread fills page-locked memory at about 10.6 GB/s) into a
//! slot while the DMA engine moves the previous slot, so both run at once.

use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaEvent, result, sys};
use rayon::prelude::*;

use crate::CudaStreamHandle;
use crate::error::{Context as _, Result};

/// Transfers from this size on are staged; below it the driver's own copy
/// is as fast and costs one call. `UNIGPU_STAGING_MIN_KIB` overrides it
/// for tuning, as the ring's shape below.
pub(crate) fn min_staged() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    *MIN.get_or_init(|| {
        std::env::var("UNIGPU_STAGING_MIN_KIB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&v| v > 0 && v <= 1 << 20)
            .map_or(4 << 20, |v| v << 10)
    })
}

/// A ring's shape. The defaults come from sweeps on an H200 host with 16
/// cores (`bench/runners/staging_sweep.sh`): 16 MiB × 4 slots with 256 KiB pieces
/// moved 256 MiB up at 48 GB/s and down at 52 GB/s, as fast as 6 or 8
/// slots, where 8 MiB × 4 with 1 MiB pieces managed 25 and 40; `UNIGPU_STAGING_SLOT_MIB`,
/// `UNIGPU_STAGING_SLOTS` and `UNIGPU_STAGING_PIECE_KIB` override them for
/// tuning on other machines.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Bytes per slot: large enough that the per-chunk costs (an event, a
    /// thread-pool dispatch) stay small at 40 GB/s.
    slot: usize,
    /// Slots per ring: the DMA of one chunk, the host copy of the next, and
    /// more in flight.
    slots: usize,
    /// The host-side copy of a chunk is split into pieces of this size
    /// across the thread pool.
    piece: usize,
}

fn shape() -> Shape {
    static SHAPE: OnceLock<Shape> = OnceLock::new();
    *SHAPE.get_or_init(|| {
        let var = |name: &str, default: usize, unit: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&v| v > 0 && v <= 1024)
                .map_or(default, |v| v * unit)
        };
        Shape {
            slot: var("UNIGPU_STAGING_SLOT_MIB", 16 << 20, 1 << 20),
            slots: var("UNIGPU_STAGING_SLOTS", 4, 1).max(2),
            piece: var("UNIGPU_STAGING_PIECE_KIB", 256 << 10, 1 << 10),
        }
    })
}

/// The chunks a transfer of `len` bytes moves through slots of `slot`
/// bytes: `(offset, bytes)` in order. (Smaller first and last chunks, to
/// shorten the parts nothing overlaps, measured no faster on an H200:
/// bench/results/2026-11-23/h200-transfers.txt.)
fn chunks(len: usize, slot: usize) -> Vec<(usize, usize)> {
    (0..len)
        .step_by(slot)
        .map(|offset| (offset, slot.min(len - offset)))
        .collect()
}

/// The upload ring's slots are only written by the host and read by the
/// DMA engine, the case write-combined memory is for: the host's stores
/// stream past its caches instead of filling them.
/// `UNIGPU_STAGING_WRITE_COMBINED=0` makes them ordinary page-locked
/// memory, for comparisons.
fn upload_flags() -> std::ffi::c_uint {
    static FLAGS: OnceLock<std::ffi::c_uint> = OnceLock::new();
    *FLAGS.get_or_init(
        || match std::env::var("UNIGPU_STAGING_WRITE_COMBINED").as_deref() {
            Ok("0") => 0,
            _ => sys::CU_MEMHOSTALLOC_WRITECOMBINED,
        },
    )
}

/// One device's rings, one per direction so that an upload and a download
/// (a pipeline's two ends) run at once; each made on its first transfer.
#[derive(Debug)]
pub(crate) struct Staging {
    ctx: Arc<CudaContext>,
    up: Mutex<Option<Ring>>,
    down: Mutex<Option<Ring>>,
}

#[derive(Debug)]
struct Ring {
    shape: Shape,
    slots: Vec<Slot>,
}

#[derive(Debug)]
struct Slot {
    /// `Shape::slot` page-locked bytes from `cuMemHostAlloc`, as an address so the
    /// ring is Send.
    host: usize,
    /// Recorded after the last DMA that uses the slot.
    done: CudaEvent,
    used: bool,
}

impl Slot {
    /// Waits until the slot's last DMA is finished.
    fn settle(&mut self) -> Result<()> {
        if self.used {
            self.done.synchronize().call("cuEventSynchronize")?;
            self.used = false;
        }
        Ok(())
    }
}

impl Ring {
    /// `flags` for `cuMemHostAlloc`: write-combined for the upload ring.
    fn new(ctx: &Arc<CudaContext>, flags: std::ffi::c_uint) -> Result<Ring> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let shape = shape();
        let mut ring = Ring {
            shape,
            slots: Vec::with_capacity(shape.slots),
        };
        for _ in 0..shape.slots {
            // A slot is pushed as soon as it exists, so `Drop` frees every
            // slot made before a failure.
            let done = ctx.new_event(None).call("cuEventCreate")?;
            // SAFETY: a plain page-locked allocation, freed in `Drop`.
            let host = unsafe { result::malloc_host(shape.slot, flags) }.call("cuMemHostAlloc")?;
            ring.slots.push(Slot {
                host: host as usize,
                done,
                used: false,
            });
        }
        Ok(ring)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            // A DMA still running into the slot must end before the memory
            // goes; if the wait fails the context is broken and freeing is
            // all that is left to do.
            let _ = slot.settle();
            // SAFETY: `host` came from `cuMemHostAlloc` and no DMA uses it.
            let _ = unsafe { result::free_host(slot.host as *mut std::ffi::c_void) };
        }
    }
}

impl Staging {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Self {
        Staging {
            ctx,
            up: Mutex::new(None),
            down: Mutex::new(None),
        }
    }

    /// Runs `f` with a direction's ring to itself: one staged transfer at a
    /// time per direction and device, each at full speed.
    fn with_ring<R>(
        &self,
        ring: &Mutex<Option<Ring>>,
        f: impl FnOnce(&mut Ring) -> Result<R>,
    ) -> Result<R> {
        let flags = if std::ptr::eq(ring, &self.up) {
            upload_flags()
        } else {
            0
        };
        let mut ring = ring.lock().unwrap_or_else(|e| e.into_inner());
        let ring = match ring.as_mut() {
            Some(r) => r,
            None => ring.insert(Ring::new(&self.ctx, flags)?),
        };
        f(ring)
    }

    /// Copies `len` bytes at `src` to the device address `dst` on `stream`.
    /// Returns once `src` may be reused (every byte is in a slot or on the
    /// device).
    ///
    /// # Safety
    /// `src` is valid for reads of `len` bytes for the call; `dst` is `len`
    /// bytes of device memory in the stream's context, ordered on `stream`.
    pub(crate) unsafe fn upload(
        &self,
        stream: &CudaStreamHandle,
        dst: u64,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        self.with_ring(&self.up, |ring| {
            let Shape { slot, slots, piece } = ring.shape;
            for (i, (offset, n)) in chunks(len, slot).into_iter().enumerate() {
                let slot = &mut ring.slots[i % slots];
                slot.settle()?;
                // SAFETY: `src + offset` is inside the caller's `len` bytes;
                // the slot holds `shape.slot >= n` bytes and no DMA uses it
                // (settled above).
                unsafe { par_copy(src.add(offset), slot.host as *mut u8, n, piece) };
                stream.bind()?;
                // SAFETY: the slot is page-locked and stays allocated and
                // untouched until `done` says the DMA is over; the device
                // range is inside the caller's `len` bytes at `dst`.
                unsafe {
                    sys::cuMemcpyHtoDAsync_v2(
                        dst + offset as u64,
                        slot.host as *const std::ffi::c_void,
                        n,
                        stream.cu_stream(),
                    )
                }
                .result()
                .call("cuMemcpyHtoDAsync")?;
                slot.done
                    .record(stream.cudarc_stream())
                    .call("cuEventRecord")?;
                slot.used = true;
            }
            Ok(())
        })
    }

    /// Copies `len` bytes at the device address `src` to `dst`, after the
    /// work before it on `stream`. Returns once `dst` holds them.
    ///
    /// # Safety
    /// `dst` is valid for writes of `len` bytes for the call and nothing
    /// else reads or writes it meanwhile; `src` is `len` bytes of device
    /// memory in the stream's context, ordered on `stream`.
    pub(crate) unsafe fn download(
        &self,
        stream: &CudaStreamHandle,
        src: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        self.with_ring(&self.down, |ring| {
            let Shape { slot, slots, piece } = ring.shape;
            let chunks = chunks(len, slot);
            let enqueue = |ring: &mut Ring, i: usize| -> Result<()> {
                let (offset, n) = chunks[i];
                let slot = &mut ring.slots[i % slots];
                slot.settle()?;
                stream.bind()?;
                // SAFETY: the slot is page-locked, holds `shape.slot >= n` bytes
                // and is read only after `done` says the DMA is over.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        slot.host as *mut std::ffi::c_void,
                        src + offset as u64,
                        n,
                        stream.cu_stream(),
                    )
                }
                .result()
                .call("cuMemcpyDtoHAsync")?;
                slot.done
                    .record(stream.cudarc_stream())
                    .call("cuEventRecord")?;
                slot.used = true;
                Ok(())
            };
            for i in 0..slots.min(chunks.len()) {
                enqueue(ring, i)?;
            }
            for (i, &(offset, n)) in chunks.iter().enumerate() {
                let slot = &mut ring.slots[i % slots];
                slot.settle()?;
                // SAFETY: the DMA into the slot is over (settled); the
                // destination range is inside the caller's `len` bytes.
                unsafe { par_copy(slot.host as *const u8, dst.add(offset), n, piece) };
                if i + slots < chunks.len() {
                    enqueue(ring, i + slots)?;
                }
            }
            Ok(())
        })
    }
}

/// Copies `len` bytes from `src` to `dst` in `piece`-sized pieces across
/// the thread pool.
///
/// # Safety
/// Both ranges are valid for `len` bytes and do not overlap.
unsafe fn par_copy(src: *const u8, dst: *mut u8, len: usize, piece: usize) {
    let (src, dst) = (src as usize, dst as usize);
    (0..len.div_ceil(piece)).into_par_iter().for_each(|i| {
        let offset = i * piece;
        let n = piece.min(len - offset);
        // SAFETY: each piece is inside both ranges (caller's contract) and
        // pieces are disjoint, so no two threads touch the same bytes.
        unsafe {
            std::ptr::copy_nonoverlapping((src + offset) as *const u8, (dst + offset) as *mut u8, n)
        };
    });
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::chunks;

    #[test]
    fn chunks_cover_the_transfer_in_order_and_fit_a_slot() {
        let mut rng = rand::rng();
        for _ in 0..2000 {
            let slot = rng.random_range(1..=64usize) << 10;
            let len = rng.random_range(1..=slot * 12);
            let plan = chunks(len, slot);
            let mut next = 0;
            for &(offset, n) in &plan {
                assert_eq!(offset, next, "len {len} slot {slot}: {plan:?}");
                assert!(n > 0 && n <= slot, "len {len} slot {slot}: {plan:?}");
                next += n;
            }
            assert_eq!(next, len, "len {len} slot {slot}: {plan:?}");
        }
    }
}
