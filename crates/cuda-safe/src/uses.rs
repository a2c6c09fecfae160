//! Which streams a buffer's memory has been used on, so that a use on
//! another stream waits for them.
//!
//! A buffer used on one stream only notes that stream: no driver call, the
//! common case (cudarc records an event after every use and waits on one
//! before it, even on one stream). Once a buffer is used on two streams, a
//! use returns a [`UseEnd`] that records an event on its stream right after
//! the work is enqueued, so a later conflicting use on another stream waits
//! for exactly that work. The first cross-stream use has no such event
//! yet; it waits on an event recorded on the earlier stream at that moment,
//! which may also cover work enqueued there since: overlap lost once,
//! never correctness.
//!
//! Reads repeated on one stream after a write elsewhere (an array uploaded
//! on the default stream, then read by every launch on another) wait for
//! the writer once: a write clears the readers, so a stream still among
//! them has waited already. Those repeated reads record no end event
//! unless another stream reads too; a later writer elsewhere then waits
//! on an event recorded on the reading stream when it comes, as above.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{CudaStream, DriverError};
use smallvec::SmallVec;

use crate::error::{Context as _, Result};
use crate::event_pool::{EventPool, PooledEvent};

/// One stream's latest use, and the event right after it when recorded.
#[derive(Debug)]
struct Use {
    stream: Arc<CudaStream>,
    end: Option<PooledEvent>,
}

impl Use {
    fn on(stream: &Arc<CudaStream>) -> Use {
        Use {
            stream: stream.clone(),
            end: None,
        }
    }

    fn is(&self, stream: &Arc<CudaStream>) -> bool {
        Arc::ptr_eq(&self.stream, stream)
    }

    /// Makes later work on `waiter` wait for this use.
    fn order_before(&self, waiter: &Arc<CudaStream>, events: &Arc<EventPool>) -> Result<()> {
        match &self.end {
            Some(end) => waiter.wait(end.event()).call("cuStreamWaitEvent"),
            None => wait_for(waiter, &self.stream, events),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    writer: Option<Use>,
    /// Inline for two streams: a buffer read on one or two streams costs
    /// no heap allocation for its record.
    readers: SmallVec<[Use; 2]>,
}

/// Streams a buffer was used on, as the allocator keeps them: inline for
/// two, so that freeing a buffer allocates nothing.
pub(crate) type Streams = SmallVec<[Arc<CudaStream>; 2]>;

/// The streams a buffer was used on since their last conflicting use.
/// Shared with the [`UseEnd`]s of uses in flight. Made at the first use:
/// a buffer allocated and dropped unused (a temporary an error path
/// abandons) costs no record and no lock.
#[derive(Debug, Default)]
pub(crate) struct Uses(OnceLock<Arc<Mutex<State>>>);

/// Records, when dropped, the end of a use on a buffer shared across
/// streams. Drop it after the use is enqueued.
#[doc(hidden)]
#[must_use = "drop it after the work that uses the buffer is enqueued"]
#[derive(Debug)]
pub struct UseEnd {
    end: Option<PendingEnd>,
}

/// A use whose end is still to be recorded: the buffer's state, the
/// stream, the pool, and whether it was a write.
#[derive(Debug)]
struct PendingEnd(Arc<Mutex<State>>, Arc<CudaStream>, Arc<EventPool>, bool);

impl Drop for UseEnd {
    fn drop(&mut self) {
        let Some(PendingEnd(uses, stream, events, write)) = self.end.take() else {
            return;
        };
        // A failed record leaves the use without an end event; a later use
        // on another stream then records one itself, as on the first
        // crossing.
        let Ok(event) = events.take(false) else {
            return;
        };
        if event.event().record(&stream).is_err() {
            return;
        }
        let mut state = uses.lock().unwrap_or_else(|e| e.into_inner());
        let entry = if write {
            state.writer.as_mut().filter(|w| w.is(&stream))
        } else {
            state.readers.iter_mut().find(|r| r.is(&stream))
        };
        if let Some(entry) = entry {
            entry.end = Some(event);
        }
    }
}

impl UseEnd {
    /// A use with no end to record (one recorded into a graph).
    pub(crate) fn none() -> UseEnd {
        UseEnd { end: None }
    }
}

impl Uses {
    /// Another handle on the same record (a graph's, for its replays).
    pub(crate) fn share(&self) -> Uses {
        Uses(OnceLock::from(self.record().clone()))
    }

    /// The same for every handle on one record.
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(self.record()) as usize
    }

    fn record(&self) -> &Arc<Mutex<State>> {
        self.0.get_or_init(Arc::default)
    }

    /// Uses that start with a write on `stream` (memory that earlier work
    /// on `stream` may still be using).
    pub(crate) fn written_on(stream: &Arc<CudaStream>) -> Uses {
        Uses(OnceLock::from(Arc::new(Mutex::new(State {
            writer: Some(Use::on(stream)),
            readers: SmallVec::new(),
        }))))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.record().lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The record, locked, where a use made it.
    fn lock_if_used(&self) -> Option<MutexGuard<'_, State>> {
        let record = self.0.get()?;
        Some(record.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn end_of(
        &self,
        shared: bool,
        stream: &Arc<CudaStream>,
        events: &Arc<EventPool>,
        write: bool,
    ) -> UseEnd {
        UseEnd {
            end: shared
                .then(|| PendingEnd(self.record().clone(), stream.clone(), events.clone(), write)),
        }
    }

    /// Orders a read on `stream` after the last write.
    pub(crate) fn read_on(
        &self,
        stream: &Arc<CudaStream>,
        events: &Arc<EventPool>,
    ) -> Result<UseEnd> {
        let mut state = self.lock();
        let mut shared = false;
        // A write clears the readers, so a stream already among them has
        // waited for the current writer since: its later reads need no
        // new wait, and no end event of their own when no other stream
        // reads (a later writer elsewhere then waits for an event
        // recorded on this stream at that time).
        let reading = state.readers.iter().position(|r| r.is(stream));
        if reading.is_none()
            && let Some(w) = &state.writer
            && !w.is(stream)
        {
            w.order_before(stream, events)?;
            shared = true;
        }
        shared |= state.readers.iter().any(|r| !r.is(stream));
        match reading {
            Some(i) => state.readers[i].end = None,
            None => state.readers.push(Use::on(stream)),
        }
        drop(state);
        Ok(self.end_of(shared, stream, events, false))
    }

    /// Orders a write on `stream` after every earlier use.
    pub(crate) fn write_on(
        &self,
        stream: &Arc<CudaStream>,
        events: &Arc<EventPool>,
    ) -> Result<UseEnd> {
        let mut state = self.lock();
        let mut shared = false;
        for earlier in state.writer.iter().chain(&state.readers) {
            if !earlier.is(stream) {
                earlier.order_before(stream, events)?;
                shared = true;
            }
        }
        state.readers.clear();
        state.writer = Some(Use::on(stream));
        drop(state);
        Ok(self.end_of(shared, stream, events, true))
    }

    /// Blocks until every use so far is done.
    pub(crate) fn synchronize(&self) -> std::result::Result<(), DriverError> {
        let Some(state) = self.lock_if_used() else {
            return Ok(());
        };
        for u in state.writer.iter().chain(&state.readers) {
            u.stream.synchronize()?;
        }
        Ok(())
    }

    /// Blocks until the writes so far are done.
    pub(crate) fn synchronize_writes(&self) -> std::result::Result<(), DriverError> {
        match self.lock_if_used().as_ref().and_then(|s| s.writer.as_ref()) {
            Some(w) => w.stream.synchronize(),
            None => Ok(()),
        }
    }

    /// The streams used, for the allocator to wait on before another
    /// stream may reuse the memory.
    pub(crate) fn into_streams(self) -> Streams {
        // Most buffers are the record's only holder by now (no graph or
        // export keeps it): no lock then.
        let state = match self.0.into_inner().map(Arc::try_unwrap) {
            None => return Streams::new(),
            Some(Ok(only)) => only.into_inner().unwrap_or_else(|e| e.into_inner()),
            Some(Err(shared)) => {
                std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()))
            }
        };
        let mut streams: Streams = state.readers.into_iter().map(|r| r.stream).collect();
        if let Some(w) = state.writer
            && !streams.iter().any(|r| Arc::ptr_eq(r, &w.stream))
        {
            streams.push(w.stream);
        }
        streams
    }
}

/// Makes later work on `waiter` wait for the work enqueued on `earlier` so
/// far.
pub(crate) fn wait_for(
    waiter: &Arc<CudaStream>,
    earlier: &Arc<CudaStream>,
    events: &Arc<EventPool>,
) -> Result<()> {
    let event: PooledEvent = events.take(false)?;
    event.event().record(earlier).call("cuEventRecord")?;
    waiter.wait(event.event()).call("cuStreamWaitEvent")
}
