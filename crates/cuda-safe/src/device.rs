//! One CUDA device: its primary context and the stream unigpu uses by default.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, sys, sys::CUdevice_attribute};
use unigpu_cuda_sys::probe;

use crate::error::{Context as _, Result, SafeError};

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
/// `Clone` is cheap: both parts are reference counted. Send + Sync: the
/// driver's context and stream handles may be used from any thread, and
/// cudarc binds the context to the calling thread before each call.
#[derive(Debug, Clone)]
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The device's default memory pool (stream-ordered allocations come
    /// from it), as an integer so the type stays Send + Sync.
    pool: usize,
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
        let stream = ctx.new_stream().call("cuStreamCreate")?;
        let pool = keep_freed_memory(&ctx)?;
        Ok(CudaDevice { ctx, stream, pool })
    }

    /// Gives the memory the pool keeps but no allocation uses back to the
    /// device, so an allocation that failed can be retried (and other
    /// allocators in the process, torch's, can have it).
    pub(crate) fn trim_pool(&self) {
        // SAFETY: `pool` is the device's default pool, which lives as long as
        // the primary context `self.ctx` retains. A failed trim only means
        // the retry fails too, so its status is ignored.
        let _ = unsafe { sys::cuMemPoolTrimTo(self.pool as sys::CUmemoryPool, 0) };
    }

    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    pub fn properties(&self) -> Result<DeviceProperties> {
        Ok(DeviceProperties {
            ordinal: self.ordinal(),
            name: self.ctx.name().call("cuDeviceGetName")?,
            compute_capability: self.ctx.compute_capability().call("cuDeviceGetAttribute")?,
            total_memory: self.ctx.total_mem().call("cuDeviceTotalMem")?,
            multiprocessors: self
                .ctx
                .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .call("cuDeviceGetAttribute")?,
        })
    }

    /// (free, total) device memory in bytes, as the driver reports it now.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().call("cuMemGetInfo")
    }

    /// Waits for all work on the device, then returns any error that was
    /// raised earlier where it could not be returned (in a `Drop`).
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize().call("cuCtxSynchronize")?;
        self.check_err()
    }

    /// Returns, and clears, an error kept from a `Drop`.
    pub fn check_err(&self) -> Result<()> {
        self.ctx.check_err().call("deferred (raised while freeing)")
    }

    pub(crate) fn cudarc_context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream unigpu enqueues on when no stream is named.
    pub fn default_stream(&self) -> crate::CudaStreamHandle {
        crate::CudaStreamHandle::from_cudarc(self.clone(), self.stream.clone())
    }

    /// Bytes free right now, or 0 when even that query fails: only used to
    /// fill in an out-of-memory error, which must not fail itself.
    pub(crate) fn free_bytes(&self) -> usize {
        self.memory_info().map(|(free, _)| free).unwrap_or(0)
    }
}

impl PartialEq for CudaDevice {
    fn eq(&self, other: &Self) -> bool {
        self.ctx == other.ctx
    }
}

/// Sets the device pool's release threshold to "never", so memory freed by
/// one stream-ordered free is reused by the next allocation instead of
/// being unmapped at every synchronize (the default threshold is 0, which
/// made each large allocation after a sync pay for mapping fresh memory).
/// Returns the pool.
fn keep_freed_memory(ctx: &CudaContext) -> Result<usize> {
    ctx.bind_to_thread().call("cuCtxSetCurrent")?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer and the device handle comes from
    // a live context.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .call("cuDeviceGetDefaultMemPool")?;
    let mut threshold = u64::MAX;
    // SAFETY: the release threshold attribute takes a pointer to a u64.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
    .call("cuMemPoolSetAttribute")?;
    // A pool that keeps memory would otherwise hand a block freed on a
    // stream still behind pending work to an allocation on another stream,
    // silently making that stream wait for the first: hidden serialisation
    // that defeats overlap. Blocks are still reused once their free has
    // completed, and always on the same stream.
    let mut allow: i32 = 0;
    // SAFETY: this attribute takes a pointer to an int.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            (&mut allow as *mut i32).cast(),
        )
    }
    .result()
    .call("cuMemPoolSetAttribute")?;
    Ok(pool as usize)
}
