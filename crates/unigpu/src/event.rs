//! Events: points in a stream's work that other streams and the host can
//! wait for, and time.

use crate::backend::EventImpl;
use crate::stream::Stream;
use crate::{Context, Error, Result};

/// A marker in a stream's work. Create one with [`Stream::record`] or
/// [`crate::Context::create_event`] (untimed, the cheap kind for ordering),
/// or with [`Stream::record_timed`] or [`crate::Context::create_timing_event`]
/// when [`Event::elapsed_ms`] will measure it. On an H200 a CUDA record
/// costs 0.16 µs untimed and 0.81 µs timed.
///
/// Send + Sync on both backends: recording, querying and waiting are
/// thread-safe (the CUDA driver guarantees it for `CUevent`; the CPU event
/// is a mutex-guarded fence). Not `Clone`: record it again instead.
#[derive(Debug)]
pub struct Event {
    pub(crate) imp: EventImpl,
    timed: bool,
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

    /// Milliseconds between `self` and the later event `end`; waits for
    /// both. Both must be timed events, on every backend.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if !(self.timed && end.timed) {
            return Err(Error::Unsupported {
                backend: self.imp.backend(),
                what: "Event::elapsed_ms on an untimed event: make both with \
                       Stream::record_timed or Context::create_timing_event \
                       (Stream::record and Context::create_event make untimed \
                       events, which record about five times faster)"
                    .into(),
            });
        }
        self.imp.elapsed_ms(&end.imp)
    }

    /// Whether [`Event::elapsed_ms`] accepts this event.
    pub fn is_timed(&self) -> bool {
        self.timed
    }
}

impl Stream {
    /// Work enqueued on this stream after this call waits for `event`.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.imp.wait(&event.imp)
    }

    /// A new untimed event that captures the work enqueued so far: the
    /// cheap kind, for ordering streams and waiting on the host.
    pub fn record(&self) -> Result<Event> {
        let event = self.new_event(false)?;
        event.record(self)?;
        Ok(event)
    }

    /// Like [`Stream::record`], with a timestamp for [`Event::elapsed_ms`].
    pub fn record_timed(&self) -> Result<Event> {
        let event = self.new_event(true)?;
        event.record(self)?;
        Ok(event)
    }

    pub(crate) fn new_event(&self, timed: bool) -> Result<Event> {
        Ok(Event {
            imp: self.imp.new_event(timed)?,
            timed,
        })
    }
}

impl Context {
    /// A new, unrecorded, untimed event (`query` is true until it is
    /// recorded).
    pub fn create_event(&self) -> Result<Event> {
        self.default_stream().new_event(false)
    }

    /// A new, unrecorded event with timing, for [`Event::elapsed_ms`].
    pub fn create_timing_event(&self) -> Result<Event> {
        self.default_stream().new_event(true)
    }
}
