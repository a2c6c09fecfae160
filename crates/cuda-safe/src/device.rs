//! One CUDA device: its primary context and the stream unigpu uses by default.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaStream, sys::CUdevice_attribute};
use unigpu_cuda_sys::probe;

use crate::alloc::{Allocator, AllocatorStats};
use crate::error::{Context as _, Result, SafeError};
use crate::event_pool::EventPool;
use crate::graph::Captures;
use crate::peer::PeerStaging;
use crate::staging::Staging;

/// How many CUDA devices this process can use. Errors with
/// [`SafeError::Unavailable`] (never a panic) when the driver cannot load.
pub fn device_count() -> Result<usize> {
    let found = probe();
    if let Some(reason) = &found.driver.reason {
        return Err(SafeError::Unavailable {
            reason: format!("libcuda: {reason}"),
        });
    }
    found
        .device_count
        .clone()
        .map_err(|reason| SafeError::Unavailable { reason })
}

/// Static facts about a device, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProperties {
    pub ordinal: usize,
    pub name: String,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (i32, i32),
    pub total_memory: usize,
    pub multiprocessors: i32,
}

/// An open CUDA device: the primary context plus a non-blocking stream that
/// serves as unigpu's default stream (the legacy NULL stream would
/// serialise against every other stream and defeat overlap).
///
/// Each open has its own caching allocator and event pool, shared by the
/// clones; two opens of one ordinal share the GPU but not their caches.
///
/// `Clone` is one reference count (every buffer and event holds one, so
/// this is on the allocation path). Send + Sync: the
/// driver's context and stream handles may be used from any thread, and
/// cudarc binds the context to the calling thread before each call.
#[derive(Debug, Clone)]
pub struct CudaDevice {
    inner: Arc<Inner>,
}

/// What every clone of one opened device shares.
#[derive(Debug)]
struct Inner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    events: Arc<EventPool>,
    allocator: Allocator,
    staging: Staging,
    captures: Arc<Captures>,
    /// Devices (by ordinal) this context has enabled peer access to
    /// (`peer.rs`): enabled once per pair.
    peers: Mutex<HashSet<usize>>,
    /// Page-locked slots for copies to devices this one cannot reach.
    peer_staging: PeerStaging,
    /// An error raised in a `Drop` that is not the driver's (a
    /// communicator's), returned by the next [`CudaDevice::check_err`].
    deferred: Mutex<Option<SafeError>>,
}

impl CudaDevice {
    /// Opens device `ordinal`, checking it exists first.
    pub fn open(ordinal: usize) -> Result<Self> {
        let available = device_count()?;
        if ordinal >= available {
            return Err(SafeError::InvalidDevice {
                asked: ordinal,
                available,
            });
        }
        let ctx = CudaContext::new(ordinal).call("cuDevicePrimaryCtxRetain")?;
        // SAFETY: event tracking orders cudarc `CudaSlice`s across streams,
        // and this crate makes none (buffers order their own uses,
        // `uses.rs`). Left on, cudarc synchronizes the whole context when
        // the first stream is made, which fails, and invalidates the
        // capture, while another thread captures a graph on this GPU.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().call("cuStreamCreate")?;
        let events = EventPool::new(ctx.clone());
        let captures = Arc::new(Captures::default());
        Ok(CudaDevice {
            inner: Arc::new(Inner {
                allocator: Allocator::new(ctx.clone(), events.clone(), captures.clone()),
                staging: Staging::new(ctx.clone()),
                captures,
                events,
                ctx,
                stream,
                peers: Mutex::default(),
                peer_staging: PeerStaging::default(),
                deferred: Mutex::default(),
            }),
        })
    }

    pub fn ordinal(&self) -> usize {
        self.inner.ctx.ordinal()
    }

    pub fn properties(&self) -> Result<DeviceProperties> {
        Ok(DeviceProperties {
            ordinal: self.ordinal(),
            name: self.inner.ctx.name().call("cuDeviceGetName")?,
            compute_capability: self
                .inner
                .ctx
                .compute_capability()
                .call("cuDeviceGetAttribute")?,
            total_memory: self.inner.ctx.total_mem().call("cuDeviceTotalMem")?,
            multiprocessors: self
                .inner
                .ctx
                .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .call("cuDeviceGetAttribute")?,
        })
    }

    /// (free, total) device memory in bytes, as the driver reports it now.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.inner.ctx.mem_get_info().call("cuMemGetInfo")
    }

    /// Waits for all work on the device, then returns any error that was
    /// raised earlier where it could not be returned (in a `Drop`).
    /// Refused while a stream of the device captures a graph.
    pub fn synchronize(&self) -> Result<()> {
        crate::graph::refuse_device_sync(self.ordinal())?;
        self.inner.ctx.synchronize().call("cuCtxSynchronize")?;
        self.check_err()
    }

    /// Returns, and clears, an error kept from a `Drop`.
    pub fn check_err(&self) -> Result<()> {
        self.inner
            .ctx
            .check_err()
            .call("deferred (raised while freeing)")?;
        match self.lock_deferred().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Keeps `e`, raised where it cannot be returned (a `Drop`), for the
    /// next [`CudaDevice::check_err`]; the first one kept wins.
    pub(crate) fn defer_err(&self, e: SafeError) {
        self.lock_deferred().get_or_insert(e);
    }

    fn lock_deferred(&self) -> std::sync::MutexGuard<'_, Option<SafeError>> {
        self.inner
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn peer_staging(&self) -> &PeerStaging {
        &self.inner.peer_staging
    }

    /// The ordinals this context has enabled peer access to.
    pub(crate) fn peers(&self) -> &Mutex<HashSet<usize>> {
        &self.inner.peers
    }

    pub(crate) fn cudarc_context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The stream unigpu enqueues on when no stream is named.
    pub fn default_stream(&self) -> crate::CudaStreamHandle {
        crate::CudaStreamHandle::from_cudarc(self.clone(), self.inner.stream.clone())
    }

    /// Bytes free right now, or 0 when even that query fails: only used to
    /// fill in an out-of-memory error, which must not fail itself.
    /// The caching allocator's counters.
    pub fn memory_stats(&self) -> AllocatorStats {
        self.inner.allocator.stats()
    }

    /// Gives the cached device memory nothing uses back to the driver, after
    /// the work that last used it; returns the bytes released.
    pub fn empty_cache(&self) -> Result<usize> {
        self.inner.allocator.empty_cache()
    }

    pub(crate) fn allocator(&self) -> &Allocator {
        &self.inner.allocator
    }

    pub(crate) fn staging(&self) -> &Staging {
        &self.inner.staging
    }

    pub(crate) fn captures(&self) -> &Captures {
        &self.inner.captures
    }

    pub(crate) fn events(&self) -> &Arc<EventPool> {
        &self.inner.events
    }

    pub(crate) fn free_bytes(&self) -> usize {
        self.memory_info().map(|(free, _)| free).unwrap_or(0)
    }
}

impl PartialEq for CudaDevice {
    fn eq(&self, other: &Self) -> bool {
        self.inner.ctx == other.inner.ctx
    }
}
