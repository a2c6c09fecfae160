//! Streams owned by another library (torch's c10 streams), used through
//! their raw handle so unigpu's work can be ordered against theirs.

use cudarc::driver::{result, sys};

use crate::error::{Context as _, Result};
use crate::stream::{self, PanicSlot};
use crate::{CudaDevice, CudaEventHandle, CudaFunctionHandle, KernelParam, LaunchDims, SafeError};

/// A CUDA stream this crate does not own: it is never created or destroyed
/// here, only enqueued on. Built by a layer that knows the stream's owner
/// keeps it alive (c10's pool and default streams live for the process).
///
/// `Clone` shares the handle and the host-callback panic slot. Send + Sync
/// for the same reasons as [`crate::CudaStreamHandle`].
#[derive(Debug, Clone)]
pub struct ForeignStream {
    device: CudaDevice,
    /// The `CUstream` as an integer, so the type is Send + Sync without an
    /// unsafe impl; 0 is the legacy default stream.
    raw: usize,
    panics: PanicSlot,
}

impl ForeignStream {
    /// Wraps the raw stream `raw` of `device`.
    ///
    /// # Safety
    /// `raw` is a stream of `device`'s primary context (or 0, the legacy
    /// default stream) that stays valid for as long as this value or any
    /// clone of it exists.
    pub unsafe fn from_raw(device: &CudaDevice, raw: u64) -> Self {
        ForeignStream {
            device: device.clone(),
            raw: raw as usize,
            panics: PanicSlot::default(),
        }
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// The `CUstream` as an integer (0 is the legacy default stream).
    pub fn raw(&self) -> u64 {
        self.raw as u64
    }

    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        self.raw as sys::CUstream
    }

    pub(crate) fn bind(&self) -> Result<()> {
        self.device
            .cudarc_context()
            .bind_to_thread()
            .call("cuCtxSetCurrent")
    }

    /// Captures the work enqueued on this stream so far in `event`.
    pub fn record(&self, event: &CudaEventHandle) -> Result<()> {
        self.bind()?;
        // SAFETY: the stream is valid (`from_raw`'s contract) and the event is
        // alive for the call.
        unsafe { result::event::record(event.record_target().cu_event(), self.cu_stream()) }
            .call("cuEventRecord")?;
        event.mark_recorded();
        Ok(())
    }

    /// Later work on this stream waits until `event` completes.
    pub fn wait(&self, event: &CudaEventHandle) -> Result<()> {
        let Some(target) = event.wait_target() else {
            return Ok(()); // never recorded: nothing to wait for
        };
        self.bind()?;
        // SAFETY: as in `record`.
        unsafe {
            result::stream::wait_event(
                self.cu_stream(),
                target.cu_event(),
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .call("cuStreamWaitEvent")
    }

    /// Runs `f` on a driver thread once the work before it on this stream is
    /// done; later work waits for `f`. A panic in `f` is caught and returned
    /// by [`Self::take_panic`].
    pub fn host_fn(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
        // SAFETY: the stream is valid (`from_raw`'s contract).
        unsafe { stream::launch_host_fn(&self.device, self.cu_stream(), &self.panics, Box::new(f)) }
    }

    /// Enqueues `func` on this stream. Only plain values can be passed:
    /// memory owned by the stream's library goes in as its device address
    /// (a `U64`), ordered by that library's own rules; a [`crate::DeviceBuffer`]
    /// is refused, since its use could not be ordered on a stream cudarc
    /// does not know.
    pub fn launch(
        &self,
        func: &CudaFunctionHandle,
        dims: LaunchDims,
        params: &[KernelParam<'_>],
    ) -> Result<()> {
        if func.device() != &self.device {
            return Err(SafeError::DeviceMismatch { what: "launch" });
        }
        func.check_dims(&dims)?;
        let mut pointers = Vec::with_capacity(params.len());
        for p in params {
            let Some(value) = p.value_ptr() else {
                return Err(SafeError::DeviceMismatch {
                    what: "launch on a foreign stream with a unigpu DeviceBuffer",
                });
            };
            pointers.push(value);
        }
        self.bind()?;
        // SAFETY: the stream is valid (`from_raw`'s contract) and the function
        // belongs to its context (checked above); every pointer points into
        // `params`, which outlives the call, at a value of the type the
        // caller declared for that parameter. What the kernel does with the
        // values is the caller's to check, as for `crate::launch`.
        unsafe { crate::kernel::launch_raw(func, &dims, self.cu_stream(), &mut pointers) }
    }

    /// The error of a host callback that panicked since the last call, if
    /// any; the owner's synchronize does not know about our callbacks.
    pub fn take_panic(&self) -> Result<()> {
        match stream::take_panic(&self.panics) {
            Some(message) => Err(stream::panic_error(message)),
            None => Ok(()),
        }
    }
}
