//! How a pipeline issues its stages: the overlapped run (a thread per
//! transfer stage, compute on the caller's thread, events between them)
//! and the sequential reference run.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;

use super::streams::Streams;
use super::timeline::{Span, Stage, Timeline};
use crate::lock::lock;
use crate::{Backend, Element, Error, Event, GpuArray, Result, Stream};

/// What the stage loops borrow from a pipeline.
pub(crate) struct Parts<'a, T: Element> {
    pub(crate) backend: Backend,
    pub(crate) streams: &'a Streams,
    pub(crate) inputs: &'a [Mutex<GpuArray<T>>],
    pub(crate) outputs: &'a [Mutex<GpuArray<T>>],
}

/// The event the timeline reads at each stage edge: timed, where the
/// events that only order the stages are the cheaper untimed kind.
fn timed_event(stream: &Stream) -> Result<Event> {
    stream.record_timed()
}

/// The timed events around one stage of one batch.
struct Edges {
    stage: Stage,
    batch: usize,
    start: Event,
    end: Event,
}

/// Runs `work` (which enqueues `stage` of `batch` on `stream`), between
/// two timed events when the run is traced.
fn stage<R>(
    stream: &Stream,
    (stage, batch): (Stage, usize),
    trace: Option<&mut Vec<Edges>>,
    work: impl FnOnce() -> Result<R>,
) -> Result<R> {
    let Some(trace) = trace else {
        return work();
    };
    let start = timed_event(stream)?;
    let out = work()?;
    let end = timed_event(stream)?;
    trace.push(Edges {
        stage,
        batch,
        start,
        end,
    });
    Ok(out)
}

/// The overlapped run. Channels carry each batch from stage to stage,
/// with the event that marks the end of the stage before; the stage's
/// stream waits on that event, so the ordering is the streams' own and the
/// threads never wait for device work except inside a blocking transfer.
pub(crate) fn overlapped<T, I, O, F>(
    parts: Parts<'_, T>,
    inputs: &[I],
    outputs: &mut [O],
    compute: F,
    traced: bool,
) -> Result<Timeline>
where
    T: Element,
    I: AsRef<[T]> + Sync,
    O: AsMut<[T]> + Send,
    F: FnMut(&Stream, &GpuArray<T>, &mut GpuArray<T>) -> Result<()>,
{
    let started = Instant::now();
    let streams = parts.streams;
    let origin = traced.then(|| timed_event(&streams.upload)).transpose()?;
    let parts = &parts;
    let (up, comp, down) = std::thread::scope(|scope| {
        // Made here, inside the scope, so that whichever stage stops first
        // (done or failed) drops its ends and the others stop too.
        let (uploaded_tx, uploaded_rx) = mpsc::channel();
        let (computed_tx, computed_rx) = mpsc::channel();
        let (input_free_tx, input_free_rx) = mpsc::channel();
        let (output_free_tx, output_free_rx) = mpsc::channel();
        let uploader = spawn(scope, "upload", move || {
            upload_loop(parts, inputs, input_free_rx, uploaded_tx, traced)
        });
        let downloader = spawn(scope, "download", move || {
            download_loop(parts, outputs, computed_rx, output_free_tx, traced)
        });
        let comp = match (&uploader, &downloader) {
            (Ok(_), Ok(_)) => compute_loop(
                parts,
                compute,
                uploaded_rx,
                computed_tx,
                input_free_tx,
                output_free_rx,
                traced,
            ),
            // A stage thread that did start must see its channels close
            // before it is joined, or it would wait for batches forever.
            _ => {
                drop((uploaded_rx, computed_tx, input_free_tx, output_free_rx));
                Ok(Vec::new())
            }
        };
        (join(uploader), comp, join(downloader))
    });
    // Always waited for, even after a failure, so that no work of this run
    // is left running and no error of it is left for the next run to find.
    let synced = streams.sync();
    let (up, comp, down) = (up?, comp?, down?);
    synced?;
    let edges = up.into_iter().chain(comp).chain(down);
    timeline(parts, origin.as_ref(), edges, started)
}

/// Uploads each batch into the next input buffer, once compute k - depth
/// has finished reading it.
fn upload_loop<T: Element, I: AsRef<[T]>>(
    parts: &Parts<'_, T>,
    inputs: &[I],
    input_free: Receiver<Arc<Event>>,
    uploaded: Sender<(usize, Event)>,
    traced: bool,
) -> Result<Vec<Edges>> {
    let (stream, bufs) = (&parts.streams.upload, parts.inputs);
    let mut trace = Vec::new();
    for (k, host) in inputs.iter().enumerate() {
        if k >= bufs.len() {
            // The compute loop has stopped; its error is the run's.
            let Ok(freed) = input_free.recv() else { break };
            stream.wait(&freed)?;
        }
        let mut buf = lock(&bufs[k % bufs.len()]);
        stage(
            stream,
            (Stage::Upload, k),
            traced.then_some(&mut trace),
            || stream.upload(host.as_ref(), &mut buf),
        )?;
        drop(buf);
        if uploaded.send((k, stream.record()?)).is_err() {
            break;
        }
    }
    Ok(trace)
}

/// Enqueues compute k after upload k and after download k - depth has
/// emptied its output buffer; hands the input buffer back to the upload
/// loop and the batch on to the download loop.
fn compute_loop<T: Element>(
    parts: &Parts<'_, T>,
    mut compute: impl FnMut(&Stream, &GpuArray<T>, &mut GpuArray<T>) -> Result<()>,
    uploaded: Receiver<(usize, Event)>,
    computed: Sender<(usize, Arc<Event>)>,
    input_free: Sender<Arc<Event>>,
    output_free: Receiver<Event>,
    traced: bool,
) -> Result<Vec<Edges>> {
    let stream = &parts.streams.compute;
    let depth = parts.inputs.len();
    let mut trace = Vec::new();
    for (k, up) in uploaded {
        if k >= depth {
            let Ok(freed) = output_free.recv() else { break };
            stream.wait(&freed)?;
        }
        stream.wait(&up)?;
        {
            let input = lock(&parts.inputs[k % depth]);
            let mut output = lock(&parts.outputs[k % depth]);
            stage(
                stream,
                (Stage::Compute, k),
                traced.then_some(&mut trace),
                || compute(stream, &input, &mut output),
            )?;
        }
        let done = Arc::new(stream.record()?);
        if computed.send((k, done.clone())).is_err() {
            break;
        }
        // The upload loop may already be past its last batch.
        let _ = input_free.send(done);
    }
    Ok(trace)
}

/// Downloads each batch once its compute is done, then hands the output
/// buffer back to the compute loop.
fn download_loop<T: Element, O: AsMut<[T]>>(
    parts: &Parts<'_, T>,
    outputs: &mut [O],
    computed: Receiver<(usize, Arc<Event>)>,
    output_free: Sender<Event>,
    traced: bool,
) -> Result<Vec<Edges>> {
    let (stream, bufs) = (&parts.streams.download, parts.outputs);
    let mut trace = Vec::new();
    for (k, done) in computed {
        stream.wait(&done)?;
        let buf = lock(&bufs[k % bufs.len()]);
        stage(
            stream,
            (Stage::Download, k),
            traced.then_some(&mut trace),
            || stream.download_into(&buf, outputs[k].as_mut()),
        )?;
        drop(buf);
        // The compute loop may already be past its last batch.
        let _ = output_free.send(stream.record()?);
    }
    Ok(trace)
}

/// The reference run: one batch at a time, each waited for by the host
/// before the next starts, every stage timed.
pub(crate) fn sequential<T, I, O, F>(
    parts: Parts<'_, T>,
    inputs: &[I],
    outputs: &mut [O],
    mut compute: F,
) -> Result<Timeline>
where
    T: Element,
    I: AsRef<[T]>,
    O: AsMut<[T]>,
    F: FnMut(&Stream, &GpuArray<T>, &mut GpuArray<T>) -> Result<()>,
{
    let started = Instant::now();
    let s = parts.streams;
    let origin = timed_event(&s.upload)?;
    let mut trace = Vec::new();
    // One slot is enough: nothing overlaps.
    let (in_buf, out_buf) = (&parts.inputs[0], &parts.outputs[0]);
    for (k, (host_in, host_out)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
        let (mut input, mut output) = (lock(in_buf), lock(out_buf));
        stage(&s.upload, (Stage::Upload, k), Some(&mut trace), || {
            s.upload.upload(host_in.as_ref(), &mut input)
        })?;
        s.compute.wait(&s.upload.record()?)?;
        stage(&s.compute, (Stage::Compute, k), Some(&mut trace), || {
            compute(&s.compute, &input, &mut output)
        })?;
        s.download.wait(&s.compute.record()?)?;
        stage(&s.download, (Stage::Download, k), Some(&mut trace), || {
            s.download.download_into(&output, host_out.as_mut())
        })?;
        s.sync()?;
    }
    timeline(&parts, Some(&origin), trace, started)
}

/// Reads the timed events (all done by now) into spans.
fn timeline<T: Element>(
    parts: &Parts<'_, T>,
    origin: Option<&Event>,
    edges: impl IntoIterator<Item = Edges>,
    started: Instant,
) -> Result<Timeline> {
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut spans = Vec::new();
    if let Some(origin) = origin {
        for e in edges {
            spans.push(Span {
                stage: e.stage,
                batch: e.batch,
                start_ms: f64::from(origin.elapsed_ms(&e.start)?),
                duration_ms: f64::from(e.start.elapsed_ms(&e.end)?),
            });
        }
    }
    spans.sort_by_key(|s| (s.batch, s.stage.index()));
    Ok(Timeline {
        backend: parts.backend,
        spans,
        wall_ms,
    })
}

fn spawn<'scope, R: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    stage: &str,
    f: impl FnOnce() -> Result<R> + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, Result<R>>> {
    std::thread::Builder::new()
        .name(format!("unigpu-pipeline-{stage}"))
        .spawn_scoped(scope, f)
        .map_err(|e| Error::StreamWork {
            message: format!("cannot start the pipeline's {stage} thread: {e}"),
        })
}

/// A stage thread's result; a panic (which no stage code raises) becomes
/// an error rather than crossing into the caller.
fn join<R>(handle: Result<ScopedJoinHandle<'_, Result<R>>>) -> Result<R> {
    handle?.join().unwrap_or_else(|_| {
        Err(Error::StreamWork {
            message: "a pipeline stage thread panicked".into(),
        })
    })
}
