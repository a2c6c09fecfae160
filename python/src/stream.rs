//! `unigpu.Stream` and `unigpu.Event`.

use pyo3::prelude::*;
use unigpu::{Context, Event, Graph, Stream};

use crate::array::PyArray;
use crate::context::PyContext;
use crate::errors::err;
use crate::kernel::{self, PyKernel};
use crate::ops::PyOps;
use crate::pinned::PyPinned;

/// An ordered queue of work: a CUDA stream, or a worker thread on the CPU
/// backend. Work on different streams may overlap; events order it.
#[pyclass(frozen, name = "Stream", module = "unigpu")]
#[derive(Debug)]
pub struct PyStream {
    pub(crate) stream: Stream,
    pub(crate) ctx: Context,
}

impl PyStream {
    pub(crate) fn new(ctx: &Context, stream: Stream) -> PyStream {
        PyStream {
            stream,
            ctx: ctx.clone(),
        }
    }
}

#[pymethods]
impl PyStream {
    /// Waits until all work enqueued so far is done; raises the first error
    /// any of it hit (StreamWorkError for a failing CPU implementation).
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.stream.sync()).map_err(err(py))
    }

    /// True when all enqueued work is done. Never blocks.
    fn is_idle(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.stream.is_idle()).map_err(err(py))
    }

    /// Same as `is_idle` (CUDA's name).
    fn query(&self, py: Python<'_>) -> PyResult<bool> {
        self.is_idle(py)
    }

    /// Work enqueued on this stream from now on waits for `event`; the
    /// host does not wait.
    fn wait(&self, py: Python<'_>, event: &Bound<'_, PyEvent>) -> PyResult<()> {
        let event = &event.get().event;
        py.detach(|| self.stream.wait(event)).map_err(err(py))
    }

    /// A new event that captures the work enqueued so far. Untimed unless
    /// `timing=True`: untimed events are cheaper to record, and
    /// `elapsed_ms` needs timed ones.
    #[pyo3(signature = (timing = false))]
    fn record(&self, py: Python<'_>, timing: bool) -> PyResult<PyEvent> {
        py.detach(|| {
            if timing {
                self.stream.record_timed()
            } else {
                self.stream.record()
            }
        })
        .map(PyEvent::new)
        .map_err(err(py))
    }

    /// Starts recording the kernels, ops and device copies enqueued on
    /// this stream into a graph, instead of running them. While it
    /// records, uploads, downloads, reductions, host functions and event
    /// records on it raise UnsupportedError. Unsupported on the torch
    /// backend.
    fn begin_capture(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.stream.begin_capture()).map_err(err(py))
    }

    /// Ends the capture and returns the graph; `graph.launch(stream)`
    /// replays it.
    fn end_capture(&self, py: Python<'_>) -> PyResult<PyGraph> {
        py.detach(|| self.stream.end_capture())
            .map(|graph| PyGraph { graph })
            .map_err(err(py))
    }

    /// True while this stream records a graph.
    #[getter]
    fn is_capturing(&self) -> bool {
        self.stream.is_capturing()
    }

    /// Launches `kernel` on this stream (see `Context.launch`).
    #[pyo3(signature = (kernel, grid, block, args, *, shared_mem=0))]
    fn launch(
        &self,
        py: Python<'_>,
        kernel: &Bound<'_, PyKernel>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        shared_mem: u32,
    ) -> PyResult<()> {
        kernel::launch(
            py,
            &self.ctx,
            kernel.get(),
            &self.stream,
            grid,
            block,
            args,
            shared_mem,
        )
    }

    /// Moves a unified array's memory to `to` ("device" or "host"),
    /// ordered on this stream after the work that writes it; returns at
    /// once. A hint: the contents never change. Does nothing on the CPU
    /// backend; UnsupportedError for an array not made by
    /// `Context.alloc_unified`.
    #[pyo3(signature = (array, to = "device"))]
    fn prefetch(&self, py: Python<'_>, array: &Bound<'_, PyArray>, to: &str) -> PyResult<()> {
        let to = crate::unified::location(to)?;
        let inner = &array.get().inner;
        py.detach(|| {
            inner
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .prefetch(&self.stream, to)
        })
        .map_err(err(py))
    }

    /// Copies the pinned buffer `src` into the array `dst` (same dtype and
    /// length), ordered on this stream. On CUDA it returns at once;
    /// `src.view(writable=True)` waits for the copy.
    fn upload_pinned(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyPinned>,
        dst: &Bound<'_, PyArray>,
    ) -> PyResult<()> {
        let (p, a) = (&src.get().inner, &dst.get().inner);
        // The pinned buffer is locked first, then the array, always.
        py.detach(|| {
            let p = p.read().unwrap_or_else(|e| e.into_inner());
            let mut a = a.write().unwrap_or_else(|e| e.into_inner());
            self.stream.upload_pinned_any(&p, &mut a)
        })
        .map_err(err(py))
    }

    /// Copies the array `src` into the pinned buffer `dst` (same dtype and
    /// length), ordered on this stream. On CUDA it returns at once;
    /// `dst.view()` waits for the copy.
    fn download_pinned(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyArray>,
        dst: &Bound<'_, PyPinned>,
    ) -> PyResult<()> {
        let (a, p) = (&src.get().inner, &dst.get().inner);
        py.detach(|| {
            let mut p = p.write().unwrap_or_else(|e| e.into_inner());
            let a = a.read().unwrap_or_else(|e| e.into_inner());
            self.stream.download_pinned_any(&a, &mut p)
        })
        .map_err(err(py))
    }

    /// The built-in ops on this stream.
    #[getter]
    fn ops(&self) -> PyOps {
        PyOps::new(self.ctx.clone(), Some(self.stream.clone()))
    }

    /// The context the stream belongs to.
    #[getter]
    fn context(&self) -> PyContext {
        PyContext {
            ctx: self.ctx.clone(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Stream(device='{}:{}')",
            self.ctx.backend_name(),
            self.ctx.device_id()
        )
    }
}

/// A marker in a stream's work, for ordering and timing.
#[pyclass(frozen, name = "Event", module = "unigpu")]
#[derive(Debug)]
pub struct PyEvent {
    pub(crate) event: Event,
}

impl PyEvent {
    pub(crate) fn new(event: Event) -> PyEvent {
        PyEvent { event }
    }
}

#[pymethods]
impl PyEvent {
    /// Captures the work enqueued on `stream` so far (replacing any earlier
    /// capture).
    fn record(&self, py: Python<'_>, stream: &Bound<'_, PyStream>) -> PyResult<()> {
        let stream = &stream.get().stream;
        py.detach(|| self.event.record(stream)).map_err(err(py))
    }

    /// Waits until the captured work is done.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.event.sync()).map_err(err(py))
    }

    /// True when the captured work is done (or nothing was captured).
    fn query(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.event.query()).map_err(err(py))
    }

    /// Milliseconds from this event to the later event `end`; waits for
    /// both.
    fn elapsed_ms(&self, py: Python<'_>, end: &Bound<'_, PyEvent>) -> PyResult<f32> {
        let end = &end.get().event;
        py.detach(|| self.event.elapsed_ms(end)).map_err(err(py))
    }

    fn __repr__(&self) -> &'static str {
        "unigpu.Event()"
    }
}

/// Kernels, ops and device copies recorded from a stream by
/// `Stream.begin_capture` / `Stream.end_capture`, replayed by `launch` on
/// any stream of the same context. Keeps the memory its work uses valid for
/// every replay, even after the arrays are gone.
#[pyclass(frozen, name = "Graph", module = "unigpu")]
#[derive(Debug)]
pub struct PyGraph {
    graph: Graph,
}

#[pymethods]
impl PyGraph {
    /// Enqueues one replay on `stream`.
    fn launch(&self, py: Python<'_>, stream: &Bound<'_, PyStream>) -> PyResult<()> {
        let stream = &stream.get().stream;
        py.detach(|| self.graph.launch(stream)).map_err(err(py))
    }

    /// How many pieces of work one replay runs.
    fn __len__(&self) -> usize {
        self.graph.len()
    }

    fn __repr__(&self) -> String {
        format!("unigpu.Graph(len={})", self.graph.len())
    }
}
