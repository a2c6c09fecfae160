//! c10 streams and events behind the facade's `Stream` and `Event`, and
//! the torch backend's `StreamApi` and `EventApi` on them.

use std::sync::RwLock;

use unigpu_cuda_safe::{CudaDevice, ForeignStream};
use unigpu_torch_bridge as bridge;

use super::{Torch, driver_error, refuse};
use crate::Result;
use crate::backend::{Backend, EventApi, StreamApi};

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
    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, bridge::TorchEvent> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl StreamApi for Torch {
    /// c10's sync, then a panic of a host function the driver ran; either
    /// error said of torch.
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        let synced = (|| -> Result<()> {
            stream.inner.synchronize()?;
            Ok(stream.foreign.take_panic()?)
        })();
        synced.map_err(|e| e.on_backend(Backend::Torch))
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.inner.query()?)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        refuse(
            stream,
            "waiting for an event",
            "the event marks work outside the capture, which a replay cannot wait for; \
             wait before begin_capture",
        )?;
        Ok(stream.inner.wait_event(&event.read())?)
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        refuse(
            stream,
            "a host function",
            "it runs once, and a graph replays; enqueue it after launching the graph",
        )?;
        stream.foreign.host_fn(f).map_err(driver_error)
    }

    fn native_stream(stream: &Self::Stream) -> Option<u64> {
        Some(stream.foreign.raw())
    }
}

impl EventApi for Torch {
    /// c10 events are always timed here: the bridge's event is made with
    /// timing on, and a torch record costs microseconds either way.
    fn new_event(_: &Self::Stream, _timed: bool) -> Result<Self::Event> {
        Ok(TorchEvent {
            inner: RwLock::new(bridge::event_new()?),
        })
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        refuse(
            stream,
            "recording an event",
            "the event would mark no work until a replay; record it after end_capture",
        )?;
        let mut ev = event.inner.write().unwrap_or_else(|e| e.into_inner());
        Ok(ev.record(&stream.inner)?)
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        Ok(event.read().synchronize()?)
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.read().query()?)
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        // c10 refuses to time events that are still pending.
        let (a, b) = (start.read(), end.read());
        a.synchronize()?;
        b.synchronize()?;
        Ok(a.elapsed_ms(&b)? as f32)
    }
}
