//! Which streams a buffer's memory has been used on, so that a use on
//! another stream waits for them.
//!
//! Lazily: a use only notes its stream. When a later use on another stream
//! conflicts (a read after a write, a write after anything), an event is
//! recorded on the earlier stream at that moment and the new stream waits
//! on it. That event may capture more work than the earlier use (whatever
//! was enqueued on that stream since), which costs overlap, never
//! correctness. Uses on one stream, the common case, make no driver call at
//! all; cudarc's own tracking records an event after every use and waits
//! on one before it, even on the same stream.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaStream, DriverError};

use crate::error::{Context as _, Result};
use crate::event_pool::{EventPool, PooledEvent};

#[derive(Debug, Default)]
struct State {
    writer: Option<Arc<CudaStream>>,
    readers: Vec<Arc<CudaStream>>,
}

/// The streams a buffer was used on since their last conflicting use.
#[derive(Debug, Default)]
pub(crate) struct Uses(Mutex<State>);

impl Uses {
    /// Uses that start with a write on `stream` (memory that earlier work
    /// on `stream` may still be using).
    pub(crate) fn written_on(stream: &Arc<CudaStream>) -> Uses {
        Uses(Mutex::new(State {
            writer: Some(stream.clone()),
            readers: Vec::new(),
        }))
    }

    /// Orders a read on `stream` after the last write.
    pub(crate) fn read_on(&self, stream: &Arc<CudaStream>, events: &Arc<EventPool>) -> Result<()> {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = &state.writer
            && !Arc::ptr_eq(w, stream)
        {
            wait_for(stream, w, events)?;
        }
        if !state.readers.iter().any(|r| Arc::ptr_eq(r, stream)) {
            state.readers.push(stream.clone());
        }
        Ok(())
    }

    /// Orders a write on `stream` after every earlier use.
    pub(crate) fn write_on(
        &mut self,
        stream: &Arc<CudaStream>,
        events: &Arc<EventPool>,
    ) -> Result<()> {
        let state = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        for earlier in state.writer.iter().chain(&state.readers) {
            if !Arc::ptr_eq(earlier, stream) {
                wait_for(stream, earlier, events)?;
            }
        }
        state.readers.clear();
        state.writer = Some(stream.clone());
        Ok(())
    }

    /// Blocks until every use so far is done.
    pub(crate) fn synchronize(&self) -> std::result::Result<(), DriverError> {
        let state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for s in state.writer.iter().chain(&state.readers) {
            s.synchronize()?;
        }
        Ok(())
    }

    /// Blocks until the writes so far are done.
    pub(crate) fn synchronize_writes(&self) -> std::result::Result<(), DriverError> {
        let state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &state.writer {
            Some(w) => w.synchronize(),
            None => Ok(()),
        }
    }

    /// The streams used, for the allocator to wait on before another
    /// stream may reuse the memory.
    pub(crate) fn into_streams(self) -> Vec<Arc<CudaStream>> {
        let state = self.0.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut streams = state.readers;
        if let Some(w) = state.writer
            && !streams.iter().any(|r| Arc::ptr_eq(r, &w))
        {
            streams.push(w);
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
