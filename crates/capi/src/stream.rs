//! `ug_stream`: an ordered queue of device work.

use unigpu::Stream;
use unigpu_capi_runtime as runtime;

use crate::context::ug_context;
use crate::event::ug_event;
use crate::status::{OrStatus, Out, ug_status};

/// An ordered queue of work: a CUDA stream, or a worker thread on the CPU
/// backend. Thread-safe: work may be enqueued from any thread. Freeing the
/// handle lets queued work finish first.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_stream {
    pub(crate) stream: Stream,
}

/// A new stream of `ctx`, independent of its default stream.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_create(
    ctx: *const ug_context,
    out: *mut *mut ug_stream,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let stream = ctx.ctx.create_stream().or_status()?;
        out.write(runtime::into_handle(ug_stream { stream }));
        Ok(())
    })
}

/// Blocks until all work enqueued so far is done, then returns the first
/// error any of it raised (`UG_STREAM_WORK` for a failed CPU kernel, ...).
///
/// # Safety
///
/// `stream` is NULL or a live stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_sync(stream: *const ug_stream) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        s.stream.sync().or_status()
    })
}

/// Writes true to `idle` when all enqueued work is done. Never blocks.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `idle` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_query(stream: *const ug_stream, idle: *mut bool) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let idle = unsafe { Out::new(idle, "idle") }?;
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        idle.write(s.stream.is_idle().or_status()?);
        Ok(())
    })
}

/// Work enqueued on `stream` after this call waits for `event`; the host
/// does not wait. `UG_CONTEXT_MISMATCH` for an event of another backend.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `event` is NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_wait(
    stream: *const ug_stream,
    event: *const ug_event,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        // SAFETY: NULL or live (see # Safety).
        let e = unsafe { runtime::handle_ref(event, "event") }?;
        s.stream.wait(&e.event).or_status()
    })
}

/// A new untimed event that captures the work enqueued on `stream` so far:
/// the cheap kind, for `ug_stream_wait` and `ug_event_sync`.
/// `ug_event_elapsed_ms` needs `ug_stream_record_timed`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_record(
    stream: *const ug_stream,
    out: *mut *mut ug_event,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { record(stream, out, Stream::record) }
}

/// Like `ug_stream_record`, with a timestamp for `ug_event_elapsed_ms`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_record_timed(
    stream: *const ug_stream,
    out: *mut *mut ug_event,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { record(stream, out, Stream::record_timed) }
}

/// A new event from `make` on `stream`, written to `out`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `out` is NULL or valid for writes.
unsafe fn record(
    stream: *const ug_stream,
    out: *mut *mut ug_event,
    make: fn(&Stream) -> unigpu::Result<unigpu::Event>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        let event = make(&s.stream).or_status()?;
        out.write(runtime::into_handle(ug_event { event }));
        Ok(())
    })
}

/// Frees a stream handle. NULL is a no-op. Work queued on the stream
/// finishes first, as with `cuStreamDestroy`.
///
/// # Safety
///
/// `stream` is NULL or a stream from this library, not freed before and not
/// in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_free(stream: *mut ug_stream) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(stream, "ug_stream") }
}
