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
use crate::graph::Captures;
use crate::uses::Streams;

/// What a free block waits for before a stream other than the ones that
/// used it may reuse it: those streams, and for each of the others asked
/// about so far, an event recorded on it then.
#[derive(Debug, Clone, Default)]
struct Waits {
    /// Streams that used the block, not yet turned into an event.
    streams: Streams,
    /// Events recorded on streams that used the block, with the stream.
    events: Vec<(Arc<CudaStream>, Arc<PooledEvent>)>,
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
    /// Whether `stream` may use the memory now: every stream that used it
    /// is `stream` (stream order covers that work), or the work of the
    /// others is done. Streams other than `stream` become events recorded
    /// now (once), and complete events are dropped; both updates stay with
    /// the block when it is not usable yet.
    fn settle(
        &mut self,
        stream: &Arc<CudaStream>,
        pool: &Arc<EventPool>,
        captures: &Captures,
    ) -> bool {
        let ours = |s: &Arc<CudaStream>| Arc::ptr_eq(s, stream);
        if self.streams.iter().all(ours) && self.events.iter().all(|(s, _)| ours(s)) {
            return true;
        }
        let mut i = 0;
        while i < self.streams.len() {
            if ours(&self.streams[i]) {
                i += 1;
                continue;
            }
            // An event recorded on a capturing stream would become part of
            // the graph and mark nothing now: the block counts as busy.
            if captures.is_capturing(&self.streams[i]) {
                return false;
            }
            let Ok(event) = pool.take(false) else {
                return false;
            };
            if event.event().record(&self.streams[i]).is_err() {
                return false;
            }
            let s = self.streams.swap_remove(i);
            self.events.push((s, Arc::new(event)));
        }
        // Events on `stream` itself turn back into its stream tag (stream
        // order covers them, and the new owner must know the stream used
        // it); complete ones are dropped.
        let mut pending = Vec::new();
        for (s, e) in std::mem::take(&mut self.events) {
            if ours(&s) {
                if !self.streams.iter().any(ours) {
                    self.streams.push(s);
                }
            } else if !matches!(e.event().try_is_complete(), Ok(true)) {
                pending.push((s, e));
            }
        }
        self.events = pending;
        self.events.is_empty()
    }

    /// Blocks until the memory is unused.
    fn synchronize(&self) -> std::result::Result<(), DriverError> {
        for s in &self.streams {
            s.synchronize()?;
        }
        for (_, e) in &self.events {
            e.event().synchronize()?;
        }
        Ok(())
    }

    /// Whether work on `stream` may still use the memory.
    fn used_on(&self, stream: &Arc<CudaStream>) -> bool {
        self.streams
            .iter()
            .chain(self.events.iter().map(|(s, _)| s))
            .any(|s| Arc::ptr_eq(s, stream))
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
    captures: Arc<Captures>,
    blocks: Mutex<Blocks<Waits>>,
}

impl Allocator {
    pub(crate) fn new(
        ctx: Arc<CudaContext>,
        events: Arc<EventPool>,
        captures: Arc<Captures>,
    ) -> Self {
        Allocator {
            ctx,
            events,
            captures,
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
        if let Some((addr, waits)) = self
            .lock()
            .take(size, |w| w.settle(stream, &self.events, &self.captures))
        {
            return Ok(Block {
                addr,
                used_on_stream: waits.used_on(stream),
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
    pub(crate) fn free(&self, addr: u64, streams: Streams) {
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
