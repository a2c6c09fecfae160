//! CUDA graphs made by stream capture, replayable on any stream of the
//! device.
//!
//! While a stream captures, the work enqueued on it is recorded, not run.
//! Captured work names device addresses, so the memory must outlive every
//! replay: each buffer a capture uses hands the capture its lease (the
//! place a dropped buffer parks its memory, as for DLPack exports) and its
//! use record. A buffer dropped while a graph that uses it lives keeps its
//! memory until the graph is gone, and each replay counts as a write of
//! every such buffer, so it is ordered after their uses on other streams
//! and later uses are ordered after it, as for any other work.
//!
//! Captures use `CU_STREAM_CAPTURE_MODE_RELAXED`: the caching allocator may
//! need `cuMemAlloc` while a capture runs, which the stricter modes forbid.
//! What would make a replay touch memory the graph does not own (copies
//! from or to host memory) is refused while capturing.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaStream, result, sys};

use crate::buffer::Kept;
use crate::error::{Context as _, Result, SafeError};
use crate::uses::UseEnd;
use crate::{CudaDevice, CudaStreamHandle};

/// Captures in progress in this process, per device ordinal. Every open of
/// an ordinal shares its primary context, and synchronizing that context
/// while any of its streams captures fails and invalidates the capture, so
/// a device-wide sync must know about captures made through other opens
/// (another thread's context on the same GPU).
static CAPTURING: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn capturing_on(ordinal: usize, change: isize) -> usize {
    let mut counts = CAPTURING.lock().unwrap_or_else(|e| e.into_inner());
    if counts.len() <= ordinal {
        counts.resize(ordinal + 1, 0);
    }
    counts[ordinal] = counts[ordinal].saturating_add_signed(change);
    counts[ordinal]
}

/// Refuses a device-wide synchronize while a stream of the device
/// captures a graph (the driver would fail it and invalidate the capture).
pub(crate) fn refuse_device_sync(ordinal: usize) -> Result<()> {
    match capturing_on(ordinal, 0) {
        0 => Ok(()),
        n => Err(SafeError::Unsupported {
            what: format!(
                "synchronizing the whole device while {n} of its streams capture a graph \
                 (the driver would fail and invalidate the capture); sync the streams you need \
                 instead, or end the capture first"
            ),
        }),
    }
}

/// The captures in progress on one device.
#[derive(Debug, Default)]
pub(crate) struct Captures {
    /// `active.len()`, read without the lock on every buffer use.
    count: AtomicUsize,
    active: Mutex<Vec<Capture>>,
}

/// One capture in progress: its stream and what its work uses so far.
#[derive(Debug)]
struct Capture {
    stream: Arc<CudaStream>,
    kept: Vec<Kept>,
    /// The use records already in `kept`, by address.
    seen: HashSet<usize>,
}

impl Captures {
    fn lock(&self) -> MutexGuard<'_, Vec<Capture>> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `stream` is capturing. One atomic load when none is.
    pub(crate) fn is_capturing(&self, stream: &Arc<CudaStream>) -> bool {
        self.count.load(Ordering::Acquire) > 0
            && self.lock().iter().any(|c| Arc::ptr_eq(&c.stream, stream))
    }

    /// When `stream` is capturing, gives the capture what `kept` makes (once
    /// per buffer) and returns true: the use is recorded, not run, so it
    /// needs no ordering now.
    pub(crate) fn note_use(&self, stream: &Arc<CudaStream>, kept: impl FnOnce() -> Kept) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut active = self.lock();
        let Some(capture) = active.iter_mut().find(|c| Arc::ptr_eq(&c.stream, stream)) else {
            return false;
        };
        let kept = kept();
        if capture.seen.insert(kept.id()) {
            capture.kept.push(kept);
        }
        true
    }

    /// Refuses `what` while `stream` captures, saying why.
    pub(crate) fn refuse(&self, stream: &Arc<CudaStream>, what: &str) -> Result<()> {
        if self.is_capturing(stream) {
            return Err(SafeError::Unsupported {
                what: format!(
                    "{what} while the stream captures a graph: a replay would read or write \
                     host memory the graph does not own; do host transfers before \
                     begin_capture or after end_capture"
                ),
            });
        }
        Ok(())
    }
}

/// An instantiated CUDA graph and the memory its work uses.
///
/// Send + Sync: launching one executable graph from two threads at once is
/// not allowed by the driver, so launches take a lock; the memory it keeps
/// is only dropped with it.
#[derive(Debug)]
pub struct CudaGraphHandle {
    exec: Exec,
    nodes: usize,
    device: CudaDevice,
    kept: Vec<Kept>,
}

/// The driver's graph and executable graph, destroyed together.
#[derive(Debug)]
struct Exec {
    graph: sys::CUgraph,
    exec: Mutex<sys::CUgraphExec>,
    device: CudaDevice,
}

// SAFETY: the handles are plain driver objects; every call on `exec` holds
// its mutex, and `graph` is only touched at creation and in `Drop`.
unsafe impl Send for Exec {}
// SAFETY: as for Send; `&Exec` only launches, under the mutex.
unsafe impl Sync for Exec {}

impl Drop for Exec {
    fn drop(&mut self) {
        let ctx = self.device.cudarc_context();
        let exec = *self.exec.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: both handles were made by `end_capture` and are destroyed
        // once, here; launches already enqueued keep what they need (the
        // driver defers the release until they complete).
        ctx.record_err(unsafe { result::graph::exec_destroy(exec) });
        // SAFETY: as above.
        ctx.record_err(unsafe { result::graph::destroy(self.graph) });
    }
}

impl CudaStreamHandle {
    /// Starts capturing: work enqueued on this stream until
    /// [`Self::end_capture`] is recorded into a graph instead of run.
    pub fn begin_capture(&self) -> Result<()> {
        let captures = self.device().captures();
        if captures.is_capturing(self.cudarc_stream()) {
            return Err(SafeError::Unsupported {
                what: "begin_capture: this stream is already capturing; end that capture first"
                    .into(),
            });
        }
        self.bind()?;
        // SAFETY: the stream is alive for as long as `self`.
        unsafe {
            result::stream::begin_capture(
                self.cu_stream(),
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        }
        .call("cuStreamBeginCapture")?;
        let mut active = captures.lock();
        active.push(Capture {
            stream: self.cudarc_stream().clone(),
            kept: Vec::new(),
            seen: HashSet::new(),
        });
        captures.count.store(active.len(), Ordering::Release);
        capturing_on(self.device().ordinal(), 1);
        Ok(())
    }

    /// Ends the capture and instantiates what it recorded. The capture ends
    /// even when this fails (for example when a captured call was invalid).
    pub fn end_capture(&self) -> Result<CudaGraphHandle> {
        let captures = self.device().captures();
        let capture = {
            let mut active = captures.lock();
            let Some(i) = active
                .iter()
                .position(|c| Arc::ptr_eq(&c.stream, self.cudarc_stream()))
            else {
                return Err(SafeError::Unsupported {
                    what: "end_capture: this stream is not capturing; call begin_capture first"
                        .into(),
                });
            };
            let capture = active.swap_remove(i);
            captures.count.store(active.len(), Ordering::Release);
            capturing_on(self.device().ordinal(), -1);
            capture
        };
        self.bind()?;
        // SAFETY: the stream is alive and was capturing (begun above).
        let graph =
            unsafe { result::stream::end_capture(self.cu_stream()) }.call("cuStreamEndCapture")?;
        if graph.is_null() {
            return Err(SafeError::Unsupported {
                what: "end_capture: the driver returned no graph".into(),
            });
        }
        let mut nodes = 0usize;
        // SAFETY: `graph` is the live graph just returned; a null node array
        // asks for the count only.
        let counted =
            unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) }.result();
        // SAFETY: `graph` is live; on failure it is destroyed here, once.
        let exec = match counted.and_then(|()| unsafe {
            result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0))
        }) {
            Ok(exec) => exec,
            Err(e) => {
                // SAFETY: as above.
                self.device()
                    .cudarc_context()
                    .record_err(unsafe { result::graph::destroy(graph) });
                return Err(SafeError::driver("cuGraphInstantiate", e));
            }
        };
        Ok(CudaGraphHandle {
            exec: Exec {
                graph,
                exec: Mutex::new(exec),
                device: self.device().clone(),
            },
            nodes,
            device: self.device().clone(),
            kept: capture.kept,
        })
    }

    /// Whether this stream is capturing a graph now.
    pub fn is_capturing(&self) -> bool {
        self.device().captures().is_capturing(self.cudarc_stream())
    }
}

impl CudaGraphHandle {
    /// Enqueues one replay on `stream`, after the pending uses of the
    /// memory the graph uses on other streams.
    pub fn launch(&self, stream: &CudaStreamHandle) -> Result<()> {
        if stream.device() != &self.device {
            return Err(SafeError::DeviceMismatch {
                what: "a graph launched on another device's stream",
            });
        }
        if stream.is_capturing() {
            return Err(SafeError::Unsupported {
                what: "launching a graph on a stream that is capturing another".into(),
            });
        }
        let cu = stream.cudarc_stream();
        let events = self.device.events();
        // Dropped after the launch is enqueued: each records its buffer's
        // end of use where the buffer is shared across streams.
        let _ends: Vec<UseEnd> = self
            .kept
            .iter()
            .map(|k| k.uses().write_on(cu, events))
            .collect::<Result<_>>()?;
        stream.bind()?;
        let exec = self.exec.exec.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `exec` is live (owned by `self`), the launch is serialised
        // by its lock, and every buffer it uses is kept by `self.kept`.
        unsafe { result::graph::launch(*exec, stream.cu_stream()) }.call("cuGraphLaunch")
    }

    /// The number of nodes (kernels, copies, memsets) the capture recorded.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }
}
