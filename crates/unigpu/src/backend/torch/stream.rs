//! c10 streams and events behind the facade's `Stream` and `Event`.

use std::sync::RwLock;

use unigpu_cuda_safe::{CudaDevice, ForeignStream};
use unigpu_torch_bridge as bridge;

use crate::Result;

/// A c10 stream, with the driver's view of it for host callbacks.
#[derive(Debug)]
pub(crate) struct TorchStream {
    pub(crate) inner: bridge::TorchStream,
    pub(crate) foreign: ForeignStream,
    /// c10's stream id: equal ids are the same CUDA stream.
    pub(crate) id: i64,
}

impl TorchStream {
    fn new(inner: bridge::TorchStream, cuda: &CudaDevice) -> Result<TorchStream> {
        let foreign = inner.as_foreign(cuda)?;
        let id = inner.id()?;
        Ok(TorchStream { inner, foreign, id })
    }

    /// The stream torch code on this thread would use now (the default
    /// stream unless a caller made another current).
    pub(crate) fn current(cuda: &CudaDevice) -> Result<TorchStream> {
        Self::new(bridge::current_stream(cuda.ordinal() as i64)?, cuda)
    }

    /// A stream from c10's pool. The pool recycles a fixed set of streams,
    /// so two pool streams may be the same CUDA stream; work on them is
    /// then merely serialised.
    pub(crate) fn from_pool(cuda: &CudaDevice) -> Result<TorchStream> {
        Self::new(
            bridge::stream_from_pool(cuda.ordinal() as i64, false)?,
            cuda,
        )
    }

    /// Makes this stream current (torch ops enqueue on the current stream)
    /// until the guard is dropped.
    pub(crate) fn enter(&self) -> Result<bridge::StreamGuard> {
        Ok(bridge::guard_stream(&self.inner)?)
    }

    pub(crate) fn sync(&self) -> Result<()> {
        self.inner.synchronize()?;
        Ok(self.foreign.take_panic()?)
    }

    /// Later work on `self` waits for the work enqueued on `earlier` so far.
    pub(crate) fn wait_for(&self, earlier: &TorchStream) -> Result<()> {
        if earlier.id == self.id {
            return Ok(());
        }
        let mut ev = bridge::event_new()?;
        ev.record(&earlier.inner)?;
        Ok(self.inner.wait_event(&ev)?)
    }
}

/// A c10 event. Recording replaces the captured work, so it takes the
/// write lock; queries and waits share the read lock.
#[derive(Debug)]
pub(crate) struct TorchEvent {
    pub(crate) inner: RwLock<bridge::TorchEvent>,
}

impl TorchEvent {
    pub(crate) fn new() -> Result<TorchEvent> {
        Ok(TorchEvent {
            inner: RwLock::new(bridge::event_new()?),
        })
    }

    pub(crate) fn record(&self, stream: &TorchStream) -> Result<()> {
        let mut ev = self.inner.write().unwrap_or_else(|e| e.into_inner());
        Ok(ev.record(&stream.inner)?)
    }

    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, bridge::TorchEvent> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }
}
