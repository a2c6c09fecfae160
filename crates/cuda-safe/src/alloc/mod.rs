//! The caching allocator: one per opened device. Device memory comes from
//! `cuMemAlloc` in segments that are carved into blocks and kept after a
//! buffer lets go of them, so a later allocation is a map lookup instead of
//! a driver call (`blocks.rs` holds the bookkeeping).
//!
//! Stream-aware: a freed block remembers the streams that used it. The
//! same stream reuses it at once (stream order covers the old work);
//! another stream gets it only once events recorded on those streams say
//! their work is done. A block still busy is skipped, never waited for.
//!
//! Out of memory: the cache is emptied (every segment with nothing in use
//! goes back to the driver) and the allocation tried once more; the error
//! then reports the driver's free bytes as they are after the emptying.

mod blocks;

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaStream, DriverError, result};

pub use blocks::AllocatorStats;
use blocks::{Blocks, Pending, round, segment_size};

use crate::error::{Context as _, Result, SafeError};
use crate::event_pool::{EventPool, PooledEvent};

/// What a free block waits for before a stream other than its own may
/// reuse it: the streams that used it (turned into events lazily, when
/// another stream first asks) and events not yet complete.
#[derive(Debug, Clone, Default)]
struct Waits {
    streams: Vec<Arc<CudaStream>>,
    events: Vec<Arc<PooledEvent>>,
}

impl Pending for Waits {
    fn merge(&mut self, other: Self) {
        for s in other.streams {
            if !self.streams.iter().any(|t| Arc::ptr_eq(t, &s)) {
                self.streams.push(s);
            }
        }
        self.events.extend(other.events);
    }
}

impl Waits {
    /// Whether `stream` may use the memory now. Streams other than
    /// `stream` become events recorded now, and complete events are
    /// dropped; both updates stay with the block when it is not usable yet.
    fn settle(&mut self, stream: &Arc<CudaStream>, events: &Arc<EventPool>) -> bool {
        let mut i = 0;
        while i < self.streams.len() {
            if Arc::ptr_eq(&self.streams[i], stream) {
                i += 1;
                continue;
            }
            let Ok(event) = events.take(false) else {
                return false;
            };
            if event.event().record(&self.streams[i]).is_err() {
                return false;
            }
            self.streams.swap_remove(i);
            self.events.push(Arc::new(event));
        }
        self.events
            .retain(|e| !matches!(e.event().try_is_complete(), Ok(true)));
        self.events.is_empty()
    }

    /// Blocks until the memory is unused.
    fn synchronize(&self) -> std::result::Result<(), DriverError> {
        for s in &self.streams {
            s.synchronize()?;
        }
        for e in &self.events {
            e.event().synchronize()?;
        }
        Ok(())
    }
}

/// One block handed out.
#[derive(Debug)]
pub(crate) struct Block {
    pub(crate) addr: u64,
    /// The block was last used on the stream it is handed to, whose earlier
    /// work may still use it.
    pub(crate) used_on_stream: bool,
}

#[derive(Debug)]
pub(crate) struct Allocator {
    ctx: Arc<CudaContext>,
    events: Arc<EventPool>,
    blocks: Mutex<Blocks<Waits>>,
}

impl Allocator {
    pub(crate) fn new(ctx: Arc<CudaContext>, events: Arc<EventPool>) -> Self {
        Allocator {
            ctx,
            events,
            blocks: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Blocks<Waits>> {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `bytes` (> 0) of device memory for use on `stream`.
    pub(crate) fn alloc(&self, stream: &Arc<CudaStream>, bytes: usize) -> Result<Block> {
        let oom = |free| SafeError::OutOfMemory {
            requested: bytes,
            free,
        };
        let (Some(size), Some(segment)) = (round(bytes), round(bytes).and_then(segment_size))
        else {
            return Err(oom(self.free_bytes()));
        };
        if let Some((addr, waits)) = self.lock().take(size, |w| w.settle(stream, &self.events)) {
            return Ok(Block {
                addr,
                used_on_stream: !waits.streams.is_empty(),
            });
        }
        // A new segment; rounded up to its pool's size, or just the block
        // when memory is too short for that.
        let (addr, taken) = match self.malloc(segment) {
            Ok(addr) => (addr, segment),
            Err(e) if SafeError::is_oom(&e) => {
                self.lock().stats.oom_retries += 1;
                self.empty_cache()?;
                match self.malloc(segment).map(|a| (a, segment)) {
                    Err(e) if SafeError::is_oom(&e) && segment > size => {
                        self.malloc(size).map(|a| (a, size))
                    }
                    other => other,
                }
                .map_err(|e| self.oom_or(e, oom))?
            }
            Err(e) => return Err(SafeError::driver("cuMemAlloc", e)),
        };
        self.lock().take_new_segment(addr, taken, size);
        Ok(Block {
            addr,
            used_on_stream: false,
        })
    }

    fn malloc(&self, bytes: usize) -> std::result::Result<u64, DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a plain allocation in the bound context; the address is
        // owned by this allocator until `empty_cache` frees it.
        unsafe { result::malloc_sync(bytes) }
    }

    fn oom_or(&self, e: DriverError, oom: impl FnOnce(usize) -> SafeError) -> SafeError {
        if SafeError::is_oom(&e) {
            oom(self.free_bytes())
        } else {
            SafeError::driver("cuMemAlloc", e)
        }
    }

    fn free_bytes(&self) -> usize {
        self.ctx.mem_get_info().map(|(free, _)| free).unwrap_or(0)
    }

    /// Takes back the block at `addr`, last used on `streams`.
    pub(crate) fn free(&self, addr: u64, streams: Vec<Arc<CudaStream>>) {
        let waits = Waits {
            streams,
            events: Vec::new(),
        };
        if !self.lock().give_back(addr, waits) {
            // Not a block of ours: a bug, kept for the next sync rather than
            // a panic in a destructor.
            self.ctx.record_err::<()>(Err(DriverError(
                cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            )));
        }
    }

    /// Gives every segment with nothing in use back to the driver, after
    /// the work that last used it. Returns the bytes released.
    pub(crate) fn empty_cache(&self) -> Result<usize> {
        self.release_idle().call("cuMemFree")
    }

    fn release_idle(&self) -> std::result::Result<usize, DriverError> {
        let idle = self.lock().take_idle_segments();
        let mut released = 0;
        self.ctx.bind_to_thread()?;
        for (addr, size, waits) in idle {
            waits.synchronize()?;
            // SAFETY: the segment came from `malloc`, nothing is handed out
            // from it (it was idle), and its last uses are done.
            unsafe { result::free_sync(addr) }?;
            released += size;
        }
        Ok(released)
    }

    pub(crate) fn stats(&self) -> AllocatorStats {
        self.lock().stats
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        // Every buffer holds the device, so nothing is handed out any more.
        self.ctx.record_err(self.release_idle());
    }
}
