//! Raw driver floors measured inside the caller's process, for benchmarks
//! to set beside this crate's own calls: the same work with nothing around
//! the bare driver call. A floor measured in another process (floor.cu)
//! differs from run to run by more than the few percent a wrapper costs,
//! so the comparison that decides "within 5% of the floor" alternates
//! rounds of both in one process.
//!
//! Benchmark support for `unigpu bench`, behind the `bench-floor` feature:
//! not part of this crate's stable API.

use std::time::Instant;

use cudarc::driver::result;

use crate::error::{Context as _, Result};
use crate::{CudaDevice, CudaFunctionHandle, CudaModuleHandle, CudaStreamHandle, nvrtc};

/// An empty kernel and a stream of its own, launched with a bare
/// `cuLaunchKernel`: no argument list, no ordering, no bookkeeping.
#[derive(Debug)]
pub struct RawLaunch {
    func: CudaFunctionHandle,
    stream: CudaStreamHandle,
    _module: CudaModuleHandle,
}

impl RawLaunch {
    /// Compiles the empty kernel for `device` (NVRTC, its own
    /// architecture) and makes a stream for it.
    pub fn new(device: &CudaDevice) -> Result<RawLaunch> {
        let (major, minor) = device.properties()?.compute_capability;
        let compiled = nvrtc::compile(
            "extern \"C\" __global__ void empty() {}\n",
            "floor_empty.cu",
            &[format!("--gpu-architecture=sm_{major}{minor}")],
            &[],
        )?;
        let module = CudaModuleHandle::load(device, &compiled.cubin)?;
        Ok(RawLaunch {
            func: module.function("empty")?,
            stream: CudaStreamHandle::new(device)?,
            _module: module,
        })
    }

    /// Microseconds per launch over `launches` back-to-back launches,
    /// submit only (the host's cost); waits for them before returning.
    pub fn submit_us(&self, launches: usize) -> Result<f64> {
        self.stream.bind()?;
        let (f, s) = (self.func.cu_function(), self.stream.cu_stream());
        let t = Instant::now();
        for _ in 0..launches {
            // SAFETY: an empty kernel with no parameters, loaded in the
            // stream's context, both alive for the call.
            unsafe { result::launch_kernel(f, (1, 1, 1), (1, 1, 1), 0, s, &mut []) }
                .call("cuLaunchKernel")?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / launches.max(1) as f64;
        self.stream.synchronize()?;
        Ok(us)
    }
}

/// The layers between a bare launch and this crate's, one at a time, for
/// finding where a launch's extra cost goes (`small_paths` example).
impl RawLaunch {
    /// [`RawLaunch::submit_us`] with the `cuCtxGetCurrent` check that
    /// cudarc makes before each launch.
    pub fn submit_checking_context_us(&self, launches: usize) -> Result<f64> {
        self.stream.bind()?;
        let (f, s) = (self.func.cu_function(), self.stream.cu_stream());
        let ctx = self.stream.device().cudarc_context().clone();
        let t = Instant::now();
        for _ in 0..launches {
            ctx.bind_to_thread().call("cuCtxGetCurrent")?;
            // SAFETY: as in `submit_us`.
            unsafe { result::launch_kernel(f, (1, 1, 1), (1, 1, 1), 0, s, &mut []) }
                .call("cuLaunchKernel")?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / launches.max(1) as f64;
        self.stream.synchronize()?;
        Ok(us)
    }

    /// The same empty kernel through this crate's [`crate::launch`].
    pub fn submit_safe_us(&self, launches: usize) -> Result<f64> {
        let dims = crate::kernel::launch_dims(unigpu_core::Grid::new((1, 1, 1), (1, 1, 1)));
        let t = Instant::now();
        for _ in 0..launches {
            crate::launch(&self.stream, &self.func, dims, &mut [])?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / launches.max(1) as f64;
        self.stream.synchronize()?;
        Ok(us)
    }

    /// Microseconds per [`crate::DeviceBuffer`] alloc + drop of `bytes`
    /// on this stream: the caching allocator with nothing above it.
    pub fn alloc_free_safe_us(&self, bytes: usize, rounds: usize) -> Result<f64> {
        let t = Instant::now();
        for _ in 0..rounds {
            drop(crate::DeviceBuffer::<u8>::alloc(&self.stream, bytes)?);
        }
        Ok(t.elapsed().as_secs_f64() * 1e6 / rounds.max(1) as f64)
    }

    /// Microseconds per bare `cuEventRecord` of one untimed event on this
    /// stream, the event made beforehand: the floor under the facade's
    /// `Stream::record` (which takes an event from the pool, records it
    /// and returns it to the pool on drop). Waits for the stream.
    pub fn event_record_us(&self, records: usize) -> Result<f64> {
        self.stream.bind()?;
        let event =
            result::event::create(cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .call("cuEventCreate")?;
        let s = self.stream.cu_stream();
        let t = Instant::now();
        let mut recorded = Ok(());
        for _ in 0..records {
            // SAFETY: the event was made above in the stream's context
            // (bound above) and is destroyed only below; the stream lives
            // as long as `self`.
            recorded = unsafe { result::event::record(event, s) }.call("cuEventRecord");
            if recorded.is_err() {
                break;
            }
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / records.max(1) as f64;
        let synced = self.stream.synchronize();
        // SAFETY: made above and recorded on no other stream; the stream
        // was synchronized, so no record of it is pending.
        let destroyed = unsafe { result::event::destroy(event) }.call("cuEventDestroy");
        recorded?;
        synced?;
        destroyed?;
        Ok(us)
    }

    /// Microseconds per [`crate::CudaEventHandle`] record on this stream:
    /// `pooled`, each a new untimed handle from the device's pool, recorded
    /// and dropped back (what the facade's `Stream::record` does below
    /// it); otherwise one handle recorded again and again.
    pub fn event_record_safe_us(&self, records: usize, pooled: bool) -> Result<f64> {
        let device = self.stream.device();
        let kept = crate::CudaEventHandle::new(device)?;
        let t = Instant::now();
        for _ in 0..records {
            if pooled {
                crate::CudaEventHandle::new(device)?.record(&self.stream)?;
            } else {
                kept.record(&self.stream)?;
            }
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / records.max(1) as f64;
        self.stream.synchronize()?;
        Ok(us)
    }
}
