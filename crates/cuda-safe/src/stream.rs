//! CUDA streams, with host callbacks and a non-blocking idle query.

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaStream, result, sys};

use crate::error::{Context as _, Result, SafeError};
use crate::{CudaDevice, CudaEventHandle};

pub(crate) type HostFn = Box<dyn FnOnce() + Send + 'static>;

/// Where a panicking host callback leaves its message for the next sync:
/// the callback runs on a driver thread, where a panic may not unwind.
pub(crate) type PanicSlot = Arc<Mutex<Option<String>>>;

/// A CUDA stream (created non-blocking). Destroyed on `Drop` once every
/// clone is gone; cudarc synchronizes it first.
///
/// `Clone` shares the same stream. Send + Sync: the driver allows enqueueing
/// on one stream from several threads; the order between threads is
/// whatever order the calls happen in.
#[derive(Debug, Clone)]
pub struct CudaStreamHandle {
    device: CudaDevice,
    stream: Arc<CudaStream>,
    panics: PanicSlot,
}

impl CudaStreamHandle {
    /// A new stream on `device`.
    pub fn new(device: &CudaDevice) -> Result<Self> {
        let stream = device
            .cudarc_context()
            .new_stream()
            .call("cuStreamCreate")?;
        Ok(Self::from_cudarc(device.clone(), stream))
    }

    pub(crate) fn from_cudarc(device: CudaDevice, stream: Arc<CudaStream>) -> Self {
        CudaStreamHandle {
            device,
            stream,
            panics: PanicSlot::default(),
        }
    }

    /// The `CUstream` as an integer, for libraries that take a stream by
    /// handle (DLPack consumers).
    pub fn raw(&self) -> u64 {
        self.stream.cu_stream() as u64
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    pub(crate) fn cudarc_stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// Makes this stream's context current on the calling thread, as every
    /// raw driver call needs.
    pub(crate) fn bind(&self) -> Result<()> {
        self.device
            .cudarc_context()
            .bind_to_thread()
            .call("cuCtxSetCurrent")
    }

    /// Blocks until everything enqueued so far is done. Returns the first
    /// error: a failed launch, a panic in a host callback, or an error kept
    /// from a `Drop`.
    pub fn synchronize(&self) -> Result<()> {
        if self.is_capturing() {
            return Err(SafeError::Unsupported {
                what: "synchronizing a stream that captures a graph: its work has not run, \
                       and the driver would invalidate the capture; end the capture first"
                    .into(),
            });
        }
        self.stream.synchronize().call("cuStreamSynchronize")?;
        if let Some(message) = self.take_panic() {
            return Err(panic_error(message));
        }
        self.device.check_err()
    }

    /// True when all enqueued work is done; never blocks.
    pub fn query(&self) -> Result<bool> {
        self.device
            .cudarc_context()
            .bind_to_thread()
            .call("cuCtxSetCurrent")?;
        // SAFETY: the stream handle is alive for as long as `self.stream`.
        let status = unsafe { sys::cuStreamQuery(self.stream.cu_stream()) };
        match status {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(result::DriverError(other)).call("cuStreamQuery"),
        }
    }

    /// Makes later work on this stream wait until `event` completes.
    pub fn wait(&self, event: &CudaEventHandle) -> Result<()> {
        match event.wait_target() {
            Some(target) => self.stream.wait(target).call("cuStreamWaitEvent"),
            None => Ok(()), // never recorded: nothing to wait for
        }
    }

    /// Runs `f` on a driver thread once the work before it on this stream
    /// is done; later work waits for `f`. `f` must not call CUDA. A panic in
    /// `f` is caught and returned by the next [`Self::synchronize`].
    pub fn host_fn(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
        if self.is_capturing() {
            return Err(SafeError::Unsupported {
                what: "a host function on a stream that captures a graph: it runs once, \
                       and a graph replays; enqueue it after launching the graph"
                    .into(),
            });
        }
        // SAFETY: the stream is alive for as long as `self.stream`.
        unsafe {
            launch_host_fn(
                &self.device,
                self.stream.cu_stream(),
                &self.panics,
                Box::new(f),
            )
        }
    }

    fn take_panic(&self) -> Option<String> {
        take_panic(&self.panics)
    }
}

pub(crate) fn take_panic(slot: &PanicSlot) -> Option<String> {
    slot.lock().map(|mut slot| slot.take()).unwrap_or(None)
}

/// The error a panicking host callback leaves for the next sync.
pub(crate) fn panic_error(message: String) -> SafeError {
    SafeError::Driver {
        call: "host callback",
        code: sys::CUresult::CUDA_ERROR_UNKNOWN as u32,
        name: "HOST_CALLBACK_PANICKED".into(),
        message,
    }
}

/// Enqueues `f` on the raw stream `stream` of `device`'s context.
///
/// # Safety
/// `stream` is a live stream of `device`'s context (or null, the legacy
/// default stream) for the duration of the call.
pub(crate) unsafe fn launch_host_fn(
    device: &CudaDevice,
    stream: sys::CUstream,
    panics: &PanicSlot,
    f: HostFn,
) -> Result<()> {
    let payload: Box<(HostFn, PanicSlot)> = Box::new((f, panics.clone()));
    let raw = Box::into_raw(payload).cast::<c_void>();
    device
        .cudarc_context()
        .bind_to_thread()
        .call("cuCtxSetCurrent")?;
    // SAFETY: `trampoline` takes back ownership of `raw` exactly once, when
    // the driver calls it; the caller keeps the stream alive for this call.
    let launched = unsafe { result::stream::launch_host_function(stream, trampoline, raw) };
    if let Err(e) = launched {
        // SAFETY: the driver refused the callback, so it will never run and
        // `raw` is still ours to free.
        drop(unsafe { Box::from_raw(raw.cast::<(HostFn, PanicSlot)>()) });
        return Err(e).call("cuLaunchHostFunc");
    }
    Ok(())
}

unsafe extern "C" fn trampoline(arg: *mut c_void) {
    // SAFETY: `arg` is the pointer `host_fn` made with Box::into_raw, and the
    // driver calls each host function exactly once.
    let payload = unsafe { Box::from_raw(arg.cast::<(HostFn, PanicSlot)>()) };
    let (f, slot) = *payload;
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a host callback panicked".into());
        if let Ok(mut slot) = slot.lock() {
            slot.get_or_insert(message);
        }
    }
}
