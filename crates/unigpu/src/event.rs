//! Events: points in a stream's work that other streams and the host can
//! wait for, and time.

use std::sync::Arc;

use unigpu_cuda_safe::CudaEventHandle;

use crate::backend::cpu::CpuEvent;
use crate::stream::{Stream, StreamImpl};
use crate::{Error, Result};

/// A marker in a stream's work. Create one with [`Stream::record`] or
/// [`crate::Context::create_event`].
///
/// Send + Sync on both backends: recording, querying and waiting are
/// thread-safe (the CUDA driver guarantees it for `CUevent`; the CPU event
/// is a mutex-guarded fence). Not `Clone`: record it again instead.
#[derive(Debug)]
pub struct Event {
    pub(crate) imp: EventImpl,
}

#[derive(Debug)]
pub(crate) enum EventImpl {
    Cpu(Arc<CpuEvent>),
    Cuda(CudaEventHandle),
    #[cfg(feature = "torch")]
    Torch(crate::backend::torch::TorchEvent),
}

impl Event {
    /// Captures the work enqueued on `stream` so far (replacing any earlier
    /// capture).
    pub fn record(&self, stream: &Stream) -> Result<()> {
        match (&self.imp, &stream.imp) {
            (EventImpl::Cpu(ev), StreamImpl::Cpu(s)) => ev.record(s),
            (EventImpl::Cuda(ev), StreamImpl::Cuda(s)) => Ok(ev.record(s)?),
            #[cfg(feature = "torch")]
            (EventImpl::Torch(ev), StreamImpl::Torch(s)) => ev.record(s),
            _ => Err(Error::ContextMismatch {
                what: "Event::record",
            }),
        }
    }

    /// Blocks until the captured work is done.
    pub fn sync(&self) -> Result<()> {
        match &self.imp {
            EventImpl::Cpu(ev) => {
                ev.synchronize();
                Ok(())
            }
            EventImpl::Cuda(ev) => Ok(ev.synchronize()?),
            #[cfg(feature = "torch")]
            EventImpl::Torch(ev) => Ok(ev.read().synchronize()?),
        }
    }

    /// Same as [`Event::sync`].
    pub fn synchronize(&self) -> Result<()> {
        self.sync()
    }

    /// True when the captured work is done, or nothing was captured yet.
    pub fn query(&self) -> Result<bool> {
        match &self.imp {
            EventImpl::Cpu(ev) => Ok(ev.query()),
            EventImpl::Cuda(ev) => Ok(ev.query()?),
            #[cfg(feature = "torch")]
            EventImpl::Torch(ev) => Ok(ev.read().query()?),
        }
    }

    /// Milliseconds between `self` and the later event `end`; waits for both.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        match (&self.imp, &end.imp) {
            (EventImpl::Cpu(a), EventImpl::Cpu(b)) => a.elapsed_ms(b),
            (EventImpl::Cuda(a), EventImpl::Cuda(b)) => Ok(a.elapsed_ms(b)?),
            #[cfg(feature = "torch")]
            // c10 refuses to time events that are still pending.
            (EventImpl::Torch(a), EventImpl::Torch(b)) => {
                let (a, b) = (a.read(), b.read());
                a.synchronize()?;
                b.synchronize()?;
                Ok(a.elapsed_ms(&b)? as f32)
            }
            _ => Err(Error::ContextMismatch {
                what: "Event::elapsed_ms",
            }),
        }
    }
}
