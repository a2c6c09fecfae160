//! A CPU stream: one worker thread draining an ordered queue of jobs.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::Cpu;
use super::staging::Staging;
use super::tracker::Tracker;
use crate::backend::StreamApi;
use crate::lock::lock;
use crate::{Error, Result};

pub(crate) type Job = Box<dyn FnOnce() -> Result<()> + Send + 'static>;

#[derive(Debug, Default)]
struct Progress {
    submitted: u64,
    completed: u64,
    /// First failure since the last sync; returned (and cleared) by it.
    error: Option<Error>,
}

#[derive(Debug, Default)]
struct Shared {
    progress: Mutex<Progress>,
    cv: Condvar,
}

/// Jobs run one at a time, in the order they were enqueued, on this
/// stream's own thread, so two streams run their work concurrently.
#[derive(Debug)]
pub(crate) struct CpuStream {
    queue: Mutex<Option<Sender<Job>>>,
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// Buffers that hold uploads until the worker copies them in.
    staging: Arc<Staging>,
    /// The work recorded since `begin_capture`; `None` when not capturing
    /// (`graph.rs` begins and ends captures).
    pub(crate) capture: Mutex<Option<Vec<Recorded>>>,
}

/// One piece of work recorded by a capture: what it reads and writes, and
/// the work itself, which a replay submits again.
#[derive(Clone)]
pub(crate) struct Recorded {
    pub(crate) reads: Vec<Tracker>,
    pub(crate) writes: Vec<Tracker>,
    pub(crate) work: Arc<dyn Fn() -> Result<()> + Send + Sync>,
}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("reads", &self.reads.len())
            .field("writes", &self.writes.len())
            .finish()
    }
}

impl CpuStream {
    pub(crate) fn new() -> Result<Self> {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<Job>();
        let shared = Arc::new(Shared::default());
        let for_worker = shared.clone();
        let name = format!(
            "unigpu-cpu-stream-{}",
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        );
        let worker = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                for job in rx {
                    let outcome =
                        std::panic::catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|panic| {
                            Err(Error::StreamWork {
                                message: panic_message(panic.as_ref()),
                            })
                        });
                    let mut p = lock(&for_worker.progress);
                    p.completed += 1;
                    if let Err(e) = outcome {
                        p.error.get_or_insert(e);
                    }
                    for_worker.cv.notify_all();
                }
            })
            .map_err(|e| Error::BackendUnavailable {
                backend: crate::Backend::Cpu,
                reason: format!("cannot start a stream worker thread: {e}"),
            })?;
        Ok(CpuStream {
            queue: Mutex::new(Some(tx)),
            shared,
            worker: Mutex::new(Some(worker)),
            staging: Arc::default(),
            capture: Mutex::new(None),
        })
    }

    pub(crate) fn enqueue(&self, job: Job) -> Result<()> {
        if self.is_capturing() {
            return Err(not_capturable("this work"));
        }
        let queue = lock(&self.queue);
        let Some(tx) = queue.as_ref() else {
            return Err(Error::StreamWork {
                message: "the stream is shutting down".into(),
            });
        };
        lock(&self.shared.progress).submitted += 1;
        tx.send(job).map_err(|_| {
            lock(&self.shared.progress).submitted -= 1;
            Error::StreamWork {
                message: "the stream's worker thread has exited".into(),
            }
        })
    }

    pub(crate) fn is_capturing(&self) -> bool {
        lock(&self.capture).is_some()
    }

    /// Records `work` when capturing (and returns `None`), else hands it
    /// back to be submitted.
    pub(crate) fn record_if_capturing(&self, work: Recorded) -> Option<Recorded> {
        match lock(&self.capture).as_mut() {
            Some(list) => {
                list.push(work);
                None
            }
            None => Some(work),
        }
    }

    pub(crate) fn staging(&self) -> &Arc<Staging> {
        &self.staging
    }
}

impl Drop for CpuStream {
    fn drop(&mut self) {
        // Closing the queue lets the worker finish what is queued, as
        // cuStreamDestroy lets pending work complete.
        lock(&self.queue).take();
        if let Some(worker) = lock(&self.worker).take() {
            // A job that drops the last handle to its own stream must not
            // join itself; its thread ends once the queue is drained.
            if worker.thread().id() != std::thread::current().id() {
                let _ = worker.join();
            }
        }
    }
}

/// The error for work a capture cannot record: it would run once (or
/// touch host memory the graph does not own), and a graph replays.
pub(crate) fn not_capturable(what: &str) -> Error {
    Error::Unsupported {
        backend: crate::Backend::Cpu,
        what: format!(
            "{what} cannot be recorded while the stream captures a graph: only kernels, \
             built-in ops and device copies replay; do it before begin_capture or after \
             end_capture"
        ),
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| format!("a job panicked: {s}"))
        .or_else(|| {
            panic
                .downcast_ref::<String>()
                .map(|s| format!("a job panicked: {s}"))
        })
        .unwrap_or_else(|| "a job panicked".into())
}

impl StreamApi for Cpu {
    /// Blocks until every job enqueued so far has run; returns (and
    /// clears) the first error among them.
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        let mut p = lock(&stream.shared.progress);
        let target = p.submitted;
        while p.completed < target {
            p = stream.shared.cv.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        match p.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        let p = lock(&stream.shared.progress);
        Ok(p.completed == p.submitted)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        match event.fence() {
            Some(fence) => stream.enqueue(Box::new(move || {
                fence.wait();
                Ok(())
            })),
            // Never recorded: nothing to wait for, as on CUDA.
            None => Ok(()),
        }
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        stream.enqueue(Box::new(move || {
            f();
            Ok(())
        }))
    }

    fn native_stream(_: &Self::Stream) -> Option<u64> {
        None
    }
}
