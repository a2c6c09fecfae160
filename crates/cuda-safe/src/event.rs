//! CUDA events with timing enabled.

use cudarc::driver::{CudaEvent, sys::CUevent_flags};

use crate::error::{Context as _, Result};
use crate::{CudaDevice, CudaStreamHandle};

/// A CUDA event that records timestamps. Destroyed on `Drop`.
///
/// Send + Sync: `cuEventRecord`, `cuEventQuery` and friends are thread-safe
/// on the same event, and cudarc binds the context before each call.
#[derive(Debug)]
pub struct CudaEventHandle {
    event: CudaEvent,
    device: CudaDevice,
}

impl CudaEventHandle {
    /// A new, not yet recorded event.
    pub fn new(device: &CudaDevice) -> Result<Self> {
        let event = device
            .cudarc_context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .call("cuEventCreate")?;
        Ok(CudaEventHandle {
            event,
            device: device.clone(),
        })
    }

    /// Captures the work enqueued on `stream` so far.
    pub fn record(&self, stream: &CudaStreamHandle) -> Result<()> {
        self.event
            .record(stream.cudarc_stream())
            .call("cuEventRecord")
    }

    /// Blocks until the captured work is done.
    pub fn synchronize(&self) -> Result<()> {
        self.event.synchronize().call("cuEventSynchronize")
    }

    /// True once the captured work is done (and for a never-recorded event).
    pub fn query(&self) -> Result<bool> {
        self.event.try_is_complete().call("cuEventQuery")
    }

    /// Milliseconds from `self` to `end`; waits for both.
    pub fn elapsed_ms(&self, end: &CudaEventHandle) -> Result<f32> {
        if self.device != end.device {
            return Err(crate::SafeError::DeviceMismatch { what: "elapsed_ms" });
        }
        self.event.elapsed_ms(&end.event).call("cuEventElapsedTime")
    }

    pub(crate) fn cudarc_event(&self) -> &CudaEvent {
        &self.event
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }
}
