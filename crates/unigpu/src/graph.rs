//! Graphs: work recorded once from a stream and replayed many times, so a
//! sequence of small kernels costs one submission instead of one each.

use std::sync::Arc;

use crate::backend::GraphImpl;
use crate::fault_word::FaultWord;
use crate::{Result, Stream};

/// Kernels, built-in ops and device copies recorded from a stream by
/// [`Stream::capture`] (or [`Stream::begin_capture`] and
/// [`Stream::end_capture`]), replayed by [`Graph::launch`] on any stream of
/// the same context.
///
/// What a graph is depends on the backend: a driver graph replayed by
/// one launch on a GPU, the recorded work itself submitted again in order
/// on the host (`docs/graphs.md`, "Backends").
///
/// The memory the recorded work uses stays valid for every replay: an
/// array dropped while a graph that uses it lives keeps its memory until
/// the graph is dropped. Each replay is ordered like the work it recorded:
/// after the pending uses of those arrays on other streams, and before
/// later ones. A replay reads the arrays' contents at the time it runs, so
/// writing new inputs into them between replays is how a graph is fed.
///
/// While a stream captures, work a replay could not repeat is refused with
/// [`crate::Error::Unsupported`]: uploads and downloads (they name host
/// memory the graph does not own), host functions, event records, and
/// reductions that return their value to the host.
#[derive(Debug)]
pub struct Graph {
    imp: GraphImpl,
    /// The capturing stream's fault word, where a kernel made by
    /// `#[unigpu::kernel]` was captured: each replay may set it.
    faults: Option<Arc<FaultWord>>,
}

impl Graph {
    /// Enqueues one replay on `stream` (a stream of the context the graph
    /// was captured in).
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.imp.launch(&stream.imp)?;
        if let Some(w) = &self.faults {
            w.mark_unread();
        }
        Ok(())
    }

    /// How many pieces of work a replay runs: the CUDA graph's nodes
    /// (kernels, copies, memsets), or the recorded jobs on the CPU.
    pub fn len(&self) -> usize {
        self.imp.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Stream {
    /// Records the work `record` enqueues on this stream into a graph,
    /// instead of running it. The capture ends whether `record` succeeds
    /// or not; its error comes first.
    ///
    /// ```
    /// # fn main() -> unigpu::Result<()> {
    /// let ctx = unigpu::Context::host()?;
    /// let stream = ctx.create_stream()?;
    /// let x = ctx.upload(&[1.0f32, -2.0, 3.0])?;
    /// let mut y = ctx.zeros::<f32>(3)?;
    /// let graph = stream.capture(|s| {
    ///     let ops = ctx.ops_on(s);
    ///     ops.relu(&x, &mut y)?;
    ///     ops.scale(2.0, &mut y)
    /// })?;
    /// graph.launch(&stream)?;
    /// stream.sync()?;
    /// assert_eq!(y.download()?, [2.0, 0.0, 6.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn capture(&self, record: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        self.begin_capture()?;
        let recorded = record(self);
        let graph = self.end_capture();
        recorded?;
        graph
    }

    /// Starts recording the work enqueued on this stream (see
    /// [`Graph`]). Refused when the stream already captures.
    pub fn begin_capture(&self) -> Result<()> {
        // The fault word a generated kernel would take is made now, not by
        // the first such launch inside the capture: its allocation and
        // zero-fill would be captured (or refused) with the work.
        if !self.imp.is_capturing() {
            self.faults.prepare()?;
        }
        self.imp.begin_capture()
    }

    /// Ends the capture begun by [`Stream::begin_capture`] and makes the
    /// graph.
    pub fn end_capture(&self) -> Result<Graph> {
        // Taken whether or not the capture succeeds, so the next capture
        // starts afresh.
        let captured = self.faults.take_captured();
        Ok(Graph {
            imp: self.imp.end_capture()?,
            faults: captured.then(|| self.faults.clone()),
        })
    }

    /// Whether this stream is capturing a graph now.
    pub fn is_capturing(&self) -> bool {
        self.imp.is_capturing()
    }
}
