//! `ug_graph`: work captured from a stream, replayed with one call.

use unigpu::Graph;
use unigpu_capi_runtime as runtime;

use crate::status::{OrStatus, Out, ug_status};
use crate::stream::ug_stream;

/// Kernels, built-in ops and device copies captured from a stream, replayed
/// by `ug_graph_launch` on any stream of the same context. Keeps the memory
/// its work uses valid for every replay, even after the arrays are freed.
/// Thread-safe.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_graph {
    pub(crate) graph: Graph,
}

/// Starts recording the work enqueued on `stream` instead of running it.
/// While it records, uploads, downloads, reductions, host functions and
/// event records on it fail with `UG_UNSUPPORTED`. `UG_UNSUPPORTED` on the
/// torch backend, or when the stream already records.
///
/// # Safety
///
/// `stream` is NULL or a live stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_begin_capture(stream: *const ug_stream) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        s.stream.begin_capture().or_status()
    })
}

/// Ends the capture begun by `ug_stream_begin_capture` (even when it fails)
/// and writes the graph to `out`.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_end_capture(
    stream: *const ug_stream,
    out: *mut *mut ug_graph,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        let graph = s.stream.end_capture().or_status()?;
        out.write(runtime::into_handle(ug_graph { graph }));
        Ok(())
    })
}

/// Writes true to `capturing` while `stream` records a graph.
///
/// # Safety
///
/// `stream` is NULL or a live stream; `capturing` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_stream_is_capturing(
    stream: *const ug_stream,
    capturing: *mut bool,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let capturing = unsafe { Out::new(capturing, "capturing") }?;
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        capturing.write(s.stream.is_capturing());
        Ok(())
    })
}

/// Enqueues one replay of `graph` on `stream`, ordered after the pending
/// uses of the arrays it uses. `UG_CONTEXT_MISMATCH` for a stream of
/// another backend.
///
/// # Safety
///
/// `graph` is NULL or a live graph; `stream` is NULL or a live stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_graph_launch(
    graph: *const ug_graph,
    stream: *const ug_stream,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let g = unsafe { runtime::handle_ref(graph, "graph") }?;
        // SAFETY: NULL or live (see # Safety).
        let s = unsafe { runtime::handle_ref(stream, "stream") }?;
        g.graph.launch(&s.stream).or_status()
    })
}

/// Writes to `len` how many pieces of work one replay runs (the CUDA
/// graph's nodes, or the recorded jobs on the CPU backend).
///
/// # Safety
///
/// `graph` is NULL or a live graph; `len` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_graph_len(graph: *const ug_graph, len: *mut usize) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let len = unsafe { Out::new(len, "len") }?;
        // SAFETY: NULL or live (see # Safety).
        let g = unsafe { runtime::handle_ref(graph, "graph") }?;
        len.write(g.graph.len());
        Ok(())
    })
}

/// Frees a graph. NULL is a no-op. Replays already enqueued still run; the
/// memory they use is released after them.
///
/// # Safety
///
/// `graph` is NULL or a graph from this library, not freed before and not
/// in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_graph_free(graph: *mut ug_graph) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(graph, "ug_graph") }
}
