//! A stream: an ordered list of work that one worker thread hands to the
//! device's queue. GPU work is recorded into command encoders, several
//! pieces a submission while they arrive back to back; host functions and
//! waits run on the worker itself. Cross-stream order comes from the
//! buffers' trackers and from events: GPU work waits until the work it
//! follows is *submitted* (the one queue runs submissions in order), the
//! host until it is *done* (fence.rs).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::Vulkan;
use super::catch::Catch;
use super::device::VkDevice;
use super::fence::Fence;
use super::spin;
use super::tracker::Tracker;
use crate::backend::Backend;
use crate::backend::{GraphApi, StreamApi};
use crate::error::{Error, Result};
use crate::lock::lock;

/// GPU work: records commands into the batch's encoder.
pub(crate) type Encode = Box<dyn FnOnce(&mut wgpu::CommandEncoder) -> Result<()> + Send>;
/// GPU work a graph can record again and again.
pub(crate) type Replay = Arc<dyn Fn(&mut wgpu::CommandEncoder) -> Result<()> + Send + Sync>;
type HostWork = Box<dyn FnOnce() -> Result<()> + Send>;

/// Pieces of GPU work recorded into one submission at most: bounds how long
/// the first waits for the last.
const MAX_BATCH: usize = 64;

enum Work {
    /// With `alone`, submitted at once rather than batched with what
    /// follows: a chunked download reads each slot as soon as it lands.
    Gpu {
        encode: Encode,
        alone: bool,
    },
    Host(HostWork),
    /// An event's record: done once everything before it is.
    Marker,
    /// Later work waits for this fence (an event's capture).
    Wait(Fence),
}

struct Job {
    work: Work,
    /// Fences of the work this job follows (its buffers' earlier uses).
    deps: Vec<Fence>,
    done: Fence,
}

/// One piece of work recorded by a capture: what it reads and writes, and
/// the recording, which a replay submits again.
#[derive(Clone)]
pub(crate) struct Recorded {
    pub(crate) reads: Vec<Tracker>,
    pub(crate) writes: Vec<Tracker>,
    pub(crate) work: Replay,
}

// Unwind safe as `VkDevice` is (device.rs says why): the replay closure
// records into a fresh encoder and shares nothing it could leave broken.
impl std::panic::UnwindSafe for Recorded {}
impl std::panic::RefUnwindSafe for Recorded {}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("reads", &self.reads.len())
            .field("writes", &self.writes.len())
            .finish()
    }
}

#[derive(Debug, Default)]
struct Counts {
    enqueued: u64,
    completed: u64,
    /// First failure since the last sync; returned (and cleared) by it.
    error: Option<Error>,
}

#[derive(Debug, Default)]
pub(crate) struct Progress {
    counts: Mutex<Counts>,
    cv: Condvar,
}

impl Progress {
    fn complete(&self, n: u64, error: Option<Error>) {
        let mut c = lock(&self.counts);
        c.completed += n;
        if let Some(e) = error {
            c.error.get_or_insert(e);
        }
        self.cv.notify_all();
    }

    fn fail(&self, e: Error) {
        lock(&self.counts).error.get_or_insert(e);
    }
}

pub(crate) struct VkStream {
    pub(crate) device: Arc<VkDevice>,
    queue: Mutex<Option<Sender<Job>>>,
    progress: Arc<Progress>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The work recorded since `begin_capture`; `None` when not capturing.
    capture: Mutex<Option<Vec<Recorded>>>,
}

impl std::fmt::Debug for VkStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VkStream")
            .field("device", &self.device.ordinal)
            .finish()
    }
}

/// The error for work a capture cannot record: it would run once, and a
/// graph replays.
pub(crate) fn not_capturable(what: &str) -> Error {
    Error::Unsupported {
        backend: Backend::Vulkan,
        what: format!(
            "{what} cannot be recorded while the stream captures a graph: only kernels, \
             built-in ops and device copies replay; do it before begin_capture or after \
             end_capture"
        ),
    }
}

impl VkStream {
    pub(crate) fn new(device: &Arc<VkDevice>) -> Result<Arc<VkStream>> {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<Job>();
        let progress = Arc::new(Progress::default());
        let (for_worker, progress_for_worker) = (device.clone(), progress.clone());
        let handle = std::thread::Builder::new()
            .name(format!(
                "unigpu-vulkan-stream-{}",
                NEXT_ID.fetch_add(1, Ordering::Relaxed)
            ))
            // Made on its thread: a batch's catch (catch.rs) belongs to it.
            .spawn(move || {
                Worker {
                    device: for_worker,
                    progress: progress_for_worker,
                    batch: None,
                    horizon: Vec::new(),
                }
                .run(rx)
            })
            .map_err(|e| Error::BackendUnavailable {
                backend: Backend::Vulkan,
                reason: format!("cannot start a stream worker thread: {e}"),
            })?;
        Ok(Arc::new(VkStream {
            device: device.clone(),
            queue: Mutex::new(Some(tx)),
            progress,
            worker: Mutex::new(Some(handle)),
            capture: Mutex::new(None),
        }))
    }

    fn enqueue(&self, work: Work, deps: Vec<Fence>, done: Fence) -> Result<()> {
        let queue = lock(&self.queue);
        let Some(tx) = queue.as_ref() else {
            return Err(Error::StreamWork {
                message: "the stream is shutting down".into(),
            });
        };
        lock(&self.progress.counts).enqueued += 1;
        tx.send(Job { work, deps, done }).map_err(|_| {
            lock(&self.progress.counts).enqueued -= 1;
            Error::StreamWork {
                message: "the stream's worker thread has exited".into(),
            }
        })
    }

    /// Enqueues GPU work after the uses of `reads` and `writes` it must
    /// follow, and records it as their latest use; returns its fence.
    /// Refused while the stream captures (see [`VkStream::submit_replayable`]).
    pub(crate) fn submit(
        &self,
        reads: &[&Tracker],
        writes: &[&Tracker],
        work: Encode,
    ) -> Result<Fence> {
        self.submit_work(reads, writes, work, false)
    }

    /// Like [`VkStream::submit`], in a submission of its own, so that what
    /// waits for it (a map callback) is not held up by work enqueued after.
    pub(crate) fn submit_alone(
        &self,
        reads: &[&Tracker],
        writes: &[&Tracker],
        work: Encode,
    ) -> Result<Fence> {
        self.submit_work(reads, writes, work, true)
    }

    fn submit_work(
        &self,
        reads: &[&Tracker],
        writes: &[&Tracker],
        work: Encode,
        alone: bool,
    ) -> Result<Fence> {
        if self.is_capturing() {
            return Err(not_capturable("this work"));
        }
        let mut deps: Vec<Fence> = reads.iter().filter_map(|t| t.for_read()).collect();
        deps.extend(writes.iter().flat_map(|t| t.for_write()));
        let done = Fence::default();
        self.enqueue(
            Work::Gpu {
                encode: work,
                alone,
            },
            deps,
            done.clone(),
        )?;
        for t in reads {
            t.note_read(&done);
        }
        for t in writes {
            t.note_write(&done);
        }
        Ok(done)
    }

    /// Like [`VkStream::submit`], for work a graph may replay: while the
    /// stream captures, the work is recorded instead of run.
    pub(crate) fn submit_replayable(
        &self,
        reads: &[&Tracker],
        writes: &[&Tracker],
        work: Replay,
    ) -> Result<()> {
        let recorded = Recorded {
            reads: reads.iter().map(|&t| t.clone()).collect(),
            writes: writes.iter().map(|&t| t.clone()).collect(),
            work,
        };
        if let Some(list) = lock(&self.capture).as_mut() {
            list.push(recorded);
            return Ok(());
        }
        self.replay(&recorded)
    }

    /// Submits recorded work, ordered after the current uses of what it
    /// reads and writes.
    pub(crate) fn replay(&self, r: &Recorded) -> Result<()> {
        let reads: Vec<&Tracker> = r.reads.iter().collect();
        let writes: Vec<&Tracker> = r.writes.iter().collect();
        let work = r.work.clone();
        self.submit(&reads, &writes, Box::new(move |enc| work(enc)))
            .map(drop)
    }

    /// A fence done once the work enqueued so far is (an untimed event).
    pub(crate) fn marker(&self) -> Result<Fence> {
        if self.is_capturing() {
            return Err(not_capturable("an event record"));
        }
        let done = Fence::default();
        self.enqueue(Work::Marker, Vec::new(), done.clone())?;
        Ok(done)
    }

    /// Later work waits for `fence`.
    pub(crate) fn wait_for(&self, fence: Fence) -> Result<()> {
        if self.is_capturing() {
            return Err(not_capturable("a wait for an event"));
        }
        self.enqueue(Work::Wait(fence), Vec::new(), Fence::default())
    }

    /// What `stream_sync` does, without its refusal during a capture: a
    /// context's sync waits for every stream, and a stream that captures
    /// (on another thread, say) has enqueued nothing since its capture
    /// began, so the sync waits for what came before and leaves the
    /// capture alone.
    pub(crate) fn wait_enqueued(&self) -> Result<()> {
        let target = lock(&self.progress.counts).enqueued;
        spin::poll_until(&self.device.device, || {
            lock(&self.progress.counts).completed >= target
        });
        let mut c = lock(&self.progress.counts);
        while c.completed < target {
            c = self.progress.cv.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        match c.error.take() {
            Some(e) => Err(e),
            None => self.device.take_error().map_or(Ok(()), Err),
        }
    }

    pub(crate) fn is_capturing(&self) -> bool {
        lock(&self.capture).is_some()
    }

    pub(crate) fn end_capture(&self) -> Result<Vec<Recorded>> {
        lock(&self.capture)
            .take()
            .ok_or_else(|| Error::Unsupported {
                backend: Backend::Vulkan,
                what: "end_capture: this stream is not capturing; call begin_capture first".into(),
            })
    }
}

impl Drop for VkStream {
    fn drop(&mut self) {
        // Closing the queue lets the worker finish what is queued, as
        // cuStreamDestroy lets pending work complete.
        lock(&self.queue).take();
        if let Some(worker) = lock(&self.worker).take()
            && worker.thread().id() != std::thread::current().id()
        {
            let _ = worker.join();
        }
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| format!("a host function panicked: {s}"))
        .or_else(|| {
            panic
                .downcast_ref::<String>()
                .map(|s| format!("a host function panicked: {s}"))
        })
        .unwrap_or_else(|| "a host function panicked".into())
}

/// GPU work recorded but not yet submitted.
struct Batch {
    encoder: wgpu::CommandEncoder,
    fences: Vec<Fence>,
    /// Validation errors of the batch's commands and submission (catch.rs:
    /// not a wgpu error scope, which would stay on the device after this
    /// thread ends).
    catch: Catch,
}

/// The thread behind one stream.
struct Worker {
    device: Arc<VkDevice>,
    progress: Arc<Progress>,
    batch: Option<Batch>,
    /// What host work must wait to be done: the stream's last submission
    /// and the events waited for since.
    horizon: Vec<Fence>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Job>) {
        loop {
            let job = if self.batch.is_some() {
                match rx.try_recv() {
                    Ok(job) => job,
                    Err(TryRecvError::Empty) => {
                        self.flush();
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => {
                        self.flush();
                        return;
                    }
                }
            } else {
                // A launch right after the caller's sync finds this thread
                // awake (spin.rs).
                let early = spin::check_for(|| match rx.try_recv() {
                    Ok(job) => Some(Some(job)),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => Some(None),
                });
                match early {
                    Some(Some(job)) => job,
                    Some(None) => return,
                    None => match rx.recv() {
                        Ok(job) => job,
                        Err(_) => return,
                    },
                }
            };
            self.handle(job);
        }
    }

    fn in_batch(&self, fence: &Fence) -> bool {
        self.batch
            .as_ref()
            .is_some_and(|b| b.fences.iter().any(|f| f.same(fence)))
    }

    /// Waits until `fences` are submitted, submitting this stream's batch
    /// first whenever one of them is not: the work it waits for may itself
    /// wait for the batch.
    fn wait_submitted(&mut self, fences: &[Fence]) {
        if fences
            .iter()
            .any(|f| !f.is_submitted() && !self.in_batch(f))
        {
            self.flush();
            for f in fences {
                f.wait_submitted();
            }
        }
    }

    fn handle(&mut self, job: Job) {
        match job.work {
            Work::Gpu { encode, alone } => {
                self.wait_submitted(&job.deps);
                let batch = self.batch.get_or_insert_with(|| {
                    let catch = Catch::open(self.device.ordinal, wgpu::ErrorFilter::Validation);
                    Batch {
                        encoder: self
                            .device
                            .device
                            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default()),
                        fences: Vec::new(),
                        catch,
                    }
                });
                if let Err(e) = encode(&mut batch.encoder) {
                    self.progress.fail(e);
                }
                batch.fences.push(job.done);
                if alone || batch.fences.len() >= MAX_BATCH {
                    self.flush();
                }
            }
            Work::Host(f) => {
                self.flush();
                for f in std::mem::take(&mut self.horizon) {
                    f.wait_done();
                }
                let outcome = f();
                job.done.mark_done();
                self.progress.complete(1, outcome.err());
            }
            Work::Marker => {
                self.flush();
                for f in &self.horizon {
                    f.wait_submitted();
                }
                // Everything this stream submitted, and the events it
                // waited for, went to the queue before this. Its callback
                // first, then "submitted": a stream that waits for this
                // event registers its own callback after it, so nothing
                // completes before the event does.
                self.horizon = vec![job.done.clone()];
                self.complete_when_queue_drains(job.done.clone());
                job.done.mark_submitted();
            }
            Work::Wait(fence) => {
                self.wait_submitted(std::slice::from_ref(&fence));
                self.horizon.push(fence);
                // Complete (for `is_idle` and sync) once the awaited work,
                // submitted by now, is done.
                self.complete_when_queue_drains(job.done);
            }
        }
    }

    /// Marks `done` (and the job) complete once everything submitted to
    /// the device's queue so far has run.
    fn complete_when_queue_drains(&self, done: Fence) {
        let (progress, poller) = (self.progress.clone(), self.device.poller.clone());
        poller.started();
        self.device.queue.on_submitted_work_done(move || {
            done.mark_done();
            progress.complete(1, None);
            poller.finished();
        });
    }

    fn flush(&mut self) {
        let Some(Batch {
            encoder,
            fences,
            catch,
        }) = self.batch.take()
        else {
            return;
        };
        let n = fences.len() as u64;
        let last = fences.last().cloned();
        let (progress, poller, done) = (
            self.progress.clone(),
            self.device.poller.clone(),
            fences.clone(),
        );
        encoder.on_submitted_work_done(move || {
            for f in &done {
                f.mark_done();
            }
            progress.complete(n, None);
            poller.finished();
        });
        self.device.poller.started();
        self.device.queue.submit([encoder.finish()]);
        for f in &fences {
            f.mark_submitted();
        }
        if let Some(e) = catch.close() {
            self.progress.fail(Error::StreamWork {
                message: format!("the vulkan device refused the work: {e}"),
            });
        }
        self.horizon = last.into_iter().collect();
    }
}

impl StreamApi for Vulkan {
    /// Blocks until the work enqueued so far is done; returns (and clears)
    /// the first error among it, or one the device reported meanwhile.
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        if stream.is_capturing() {
            return Err(not_capturable("a sync"));
        }
        stream.wait_enqueued()
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        let c = lock(&stream.progress.counts);
        Ok(c.completed == c.enqueued)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        match event.fence() {
            Some(fence) => stream.wait_for(fence),
            // Never recorded: nothing to wait for, as on CUDA.
            None => Ok(()),
        }
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        if stream.is_capturing() {
            return Err(not_capturable("a host function"));
        }
        let work: HostWork = Box::new(move || {
            std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| Error::StreamWork {
                message: panic_message(p.as_ref()),
            })
        });
        stream.enqueue(Work::Host(work), Vec::new(), Fence::default())
    }

    fn native_stream(_: &Self::Stream) -> Option<u64> {
        None
    }
}

impl GraphApi for Vulkan {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        let mut capture = lock(&stream.capture);
        if capture.is_some() {
            return Err(Error::Unsupported {
                backend: Backend::Vulkan,
                what: "begin_capture: this stream is already capturing; end that capture first"
                    .into(),
            });
        }
        *capture = Some(Vec::new());
        Ok(())
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        Ok((stream.device.clone(), stream.end_capture()?))
    }

    // The inherent method, which every enqueue asks too.
    fn is_capturing(stream: &Self::Stream) -> bool {
        stream.is_capturing()
    }

    fn graph_launch((device, work): &Self::Graph, stream: &Self::Stream) -> Result<()> {
        // The recorded bind groups belong to the device that captured.
        if !Arc::ptr_eq(device, &stream.device) {
            return Err(Error::ContextMismatch {
                what: "Graph::launch",
            });
        }
        work.iter().try_for_each(|r| stream.replay(r))
    }

    fn graph_len((_, work): &Self::Graph) -> usize {
        work.len()
    }
}
