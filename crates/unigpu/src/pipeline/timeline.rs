//! `Timeline`: when each stage of each batch ran, from timed events, and
//! its export as Chrome trace JSON (Perfetto, chrome://tracing).

use std::fmt::Write;

use crate::Backend;

/// One of a pipeline's three stages, each on a stream of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    Upload,
    Compute,
    Download,
}

impl Stage {
    /// In pipeline order, which is also the order of the trace's tracks.
    pub const ALL: [Stage; 3] = [Stage::Upload, Stage::Compute, Stage::Download];

    /// "upload", "compute" or "download": the track's name in a trace.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Upload => "upload",
            Stage::Compute => "compute",
            Stage::Download => "download",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// One stage of one batch, as its stream ran it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub stage: Stage,
    pub batch: usize,
    /// From the run's first event (recorded before the first upload).
    pub start_ms: f64,
    pub duration_ms: f64,
}

/// What a traced run did, stage by stage: one [`Span`] per stage per batch,
/// timed by events on the streams themselves (the device's clock on CUDA,
/// the worker threads' on the CPU backend), plus the run's wall time as the
/// host saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub(crate) backend: Backend,
    pub(crate) spans: Vec<Span>,
    pub(crate) wall_ms: f64,
}

impl Timeline {
    /// Every span, grouped by batch, in stage order within a batch.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// How many batches the run had.
    pub fn batches(&self) -> usize {
        self.spans.len() / Stage::ALL.len()
    }

    /// Host time from the start of the run to the return of its last
    /// download, in milliseconds.
    pub fn wall_ms(&self) -> f64 {
        self.wall_ms
    }

    /// The time each stage took, summed over the batches, in
    /// [`Stage::ALL`] order: the stage times of the overlap formula when
    /// the run was sequential ([`crate::pipeline::PipelineReport`]).
    pub fn stage_ms(&self) -> [f64; 3] {
        let mut total = [0.0; 3];
        for s in &self.spans {
            total[s.stage.index()] += s.duration_ms;
        }
        total
    }

    /// The timeline as Chrome's Trace Event Format: one "X" (complete)
    /// event per span, `ts` and `dur` in microseconds, one track (`tid`)
    /// per stream, named by "M" `thread_name` metadata. Open it at
    /// <https://ui.perfetto.dev> or chrome://tracing.
    pub fn to_chrome_trace_json(&self) -> String {
        let mut events = vec![format!(
            r#"{{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{{"name":"unigpu pipeline ({})"}}}}"#,
            self.backend
        )];
        for stage in Stage::ALL {
            let tid = track(stage);
            events.push(format!(
                r#"{{"name":"thread_name","ph":"M","pid":1,"tid":{tid},"args":{{"name":"{} stream"}}}}"#,
                stage.name()
            ));
            // Keeps the tracks in pipeline order rather than by name.
            events.push(format!(
                r#"{{"name":"thread_sort_index","ph":"M","pid":1,"tid":{tid},"args":{{"sort_index":{tid}}}}}"#
            ));
        }
        for s in &self.spans {
            let mut e = String::new();
            // Writing to a String cannot fail.
            let _ = write!(
                e,
                r#"{{"name":"{stage} {batch}","cat":"{stage}","ph":"X","ts":{ts:.3},"dur":{dur:.3},"pid":1,"tid":{tid},"args":{{"batch":{batch}}}}}"#,
                stage = s.stage.name(),
                batch = s.batch,
                ts = finite(s.start_ms * 1e3),
                dur = finite(s.duration_ms * 1e3),
                tid = track(s.stage),
            );
            events.push(e);
        }
        format!(
            "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{}\n]}}\n",
            events.join(",\n")
        )
    }
}

/// The trace's track id of a stage's stream (1-based: Perfetto shows tid 0
/// as the process itself).
fn track(stage: Stage) -> usize {
    stage.index() + 1
}

/// JSON has no NaN or infinity; a span that could not be timed is 0.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}
