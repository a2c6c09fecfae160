//! Events: points in a stream's work that other streams and the host can
//! wait for, and time.

use crate::backend::EventImpl;
use crate::stream::Stream;
use crate::{Context, Result};

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

impl Event {
    /// Captures the work enqueued on `stream` so far (replacing any earlier
    /// capture).
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.imp.record(&stream.imp)
    }

    /// Blocks until the captured work is done.
    pub fn sync(&self) -> Result<()> {
        self.imp.sync()
    }

    /// Same as [`Event::sync`].
    pub fn synchronize(&self) -> Result<()> {
        self.sync()
    }

    /// True when the captured work is done, or nothing was captured yet.
    pub fn query(&self) -> Result<bool> {
        self.imp.query()
    }

    /// Milliseconds between `self` and the later event `end`; waits for both.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self.imp.elapsed_ms(&end.imp)
    }
}

impl Stream {
    /// Work enqueued on this stream after this call waits for `event`.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.imp.wait(&event.imp)
    }

    /// A new event that captures the work enqueued so far.
    pub fn record(&self) -> Result<Event> {
        let event = self.new_event()?;
        event.record(self)?;
        Ok(event)
    }

    pub(crate) fn new_event(&self) -> Result<Event> {
        Ok(Event {
            imp: self.imp.new_event()?,
        })
    }
}

impl Context {
    /// A new, unrecorded event (`query` is true until it is recorded).
    pub fn create_event(&self) -> Result<Event> {
        self.default_stream().new_event()
    }
}
