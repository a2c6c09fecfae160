//! `ug_event`: a point in a stream's work that streams and the host can
//! wait for, and time.

use unigpu::Event;
use unigpu_capi_runtime as runtime;

use crate::status::{OrStatus, Out, ug_status};
use crate::stream::ug_stream;

/// A marker in a stream's work, from `ug_stream_record` or
/// `ug_context_create_event`. Thread-safe.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_event {
    pub(crate) event: Event,
}

/// Blocks until the work the event captured is done.
///
/// # Safety
///
/// `event` is NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_event_sync(event: *const ug_event) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let e = unsafe { runtime::handle_ref(event, "event") }?;
        e.event.sync().or_status()
    })
}

/// Writes true to `done` when the captured work is done, or nothing was
/// captured yet. Never blocks.
///
/// # Safety
///
/// `event` is NULL or a live event; `done` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_event_query(event: *const ug_event, done: *mut bool) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let done = unsafe { Out::new(done, "done") }?;
        // SAFETY: NULL or live (see # Safety).
        let e = unsafe { runtime::handle_ref(event, "event") }?;
        done.write(e.event.query().or_status()?);
        Ok(())
    })
}

/// Milliseconds between `start` and the later event `end`; waits for both.
/// Both must be timed (`ug_stream_record_timed`,
/// `ug_context_create_timing_event`); `UG_UNSUPPORTED` otherwise.
///
/// # Safety
///
/// `start` and `end` are NULL or live events; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_event_elapsed_ms(
    start: *const ug_event,
    end: *const ug_event,
    out: *mut f32,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let start = unsafe { runtime::handle_ref(start, "start") }?;
        // SAFETY: NULL or live (see # Safety).
        let end = unsafe { runtime::handle_ref(end, "end") }?;
        out.write(start.event.elapsed_ms(&end.event).or_status()?);
        Ok(())
    })
}

/// Captures the work enqueued on `stream` so far, replacing any earlier
/// capture. `UG_CONTEXT_MISMATCH` for a stream of another backend.
///
/// # Safety
///
/// `event` is NULL or a live event; `stream` is NULL or a live stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_event_record(
    event: *const ug_event,
    stream: *const ug_stream,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let e = unsafe { runtime::handle_ref(event, "event") }?;
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        e.event.record(&s.stream).or_status()
    })
}

/// Frees an event. NULL is a no-op.
///
/// # Safety
///
/// `event` is NULL or an event from this library, not freed before and not
/// in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_event_free(event: *mut ug_event) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(event, "ug_event") }
}
