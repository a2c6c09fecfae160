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
use crate::{CudaDevice, CudaStreamHandle, ForeignStream};

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
        // SAFETY: the stream is alive for as long as `self`, and bound.
        unsafe { begin_on(self.device(), self.cu_stream()) }?;
        let mut active = captures.lock();
        active.push(Capture {
            stream: self.cudarc_stream().clone(),
            kept: Vec::new(),
            seen: HashSet::new(),
        });
        captures.count.store(active.len(), Ordering::Release);
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
            capture
        };
        self.bind()?;
        // SAFETY: the stream is alive, bound, and was capturing (begun above).
        let (exec, nodes) = unsafe { end_on(self.device(), self.cu_stream()) }?;
        Ok(CudaGraphHandle {
            exec,
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

/// Starts a relaxed-mode capture on `stream` and counts it against
/// device-wide syncs of `device`.
///
/// # Safety
/// `stream` is a live stream of `device`'s context, bound to this thread.
unsafe fn begin_on(device: &CudaDevice, stream: sys::CUstream) -> Result<()> {
    // SAFETY: per this function's contract.
    unsafe {
        result::stream::begin_capture(
            stream,
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        )
    }
    .call("cuStreamBeginCapture")?;
    capturing_on(device.ordinal(), 1);
    Ok(())
}

/// Ends the capture on `stream` (uncounting it, even when this fails) and
/// instantiates what it recorded: the executable graph and its node count.
///
/// # Safety
/// `stream` is a live stream of `device`'s context, bound to this thread,
/// on which [`begin_on`] started a capture.
unsafe fn end_on(device: &CudaDevice, stream: sys::CUstream) -> Result<(Exec, usize)> {
    capturing_on(device.ordinal(), -1);
    // SAFETY: per this function's contract.
    let graph = unsafe { result::stream::end_capture(stream) }.call("cuStreamEndCapture")?;
    if graph.is_null() {
        return Err(SafeError::Unsupported {
            what: "end_capture: the driver returned no graph".into(),
        });
    }
    let mut nodes = 0usize;
    // SAFETY: `graph` is the live graph just returned; a null node array
    // asks for the count only.
    let counted = unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) }.result();
    // SAFETY: `graph` is live; on failure it is destroyed here, once.
    match counted.and_then(|()| unsafe {
        result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0))
    }) {
        Ok(exec) => Ok((
            Exec {
                graph,
                exec: Mutex::new(exec),
                device: device.clone(),
            },
            nodes,
        )),
        Err(e) => {
            // SAFETY: as above.
            device
                .cudarc_context()
                .record_err(unsafe { result::graph::destroy(graph) });
            Err(SafeError::driver("cuGraphInstantiate", e))
        }
    }
}

impl Exec {
    /// Enqueues one replay on `stream`.
    ///
    /// # Safety
    /// `stream` is a live stream of this graph's device, bound to this
    /// thread, and the memory the graph uses is alive.
    unsafe fn launch(&self, stream: sys::CUstream) -> Result<()> {
        let exec = self.exec.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `exec` is live (owned by `self`), the launch is serialised
        // by its lock; the rest is the caller's contract.
        unsafe { result::graph::launch(*exec, stream) }.call("cuGraphLaunch")
    }
}

/// A graph captured from a stream this crate does not own (a c10
/// stream). Its owner keeps the memory the captured work uses alive for
/// as long as the graph, and orders each replay after that memory's other
/// uses, by its own rules; this type only captures and replays.
#[derive(Debug)]
pub struct ForeignGraph {
    exec: Exec,
    nodes: usize,
}

impl ForeignStream {
    /// Starts capturing: work enqueued on this stream until
    /// [`Self::end_capture`] is recorded into a graph instead of run. The
    /// caller refuses what a replay cannot repeat (host transfers, host
    /// functions, event records) while it captures.
    pub fn begin_capture(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: the stream is valid (`from_raw`'s contract) and bound.
        unsafe { begin_on(self.device(), self.cu_stream()) }
    }

    /// Ends the capture begun on this stream and instantiates it; the
    /// capture ends even when this fails.
    pub fn end_capture(&self) -> Result<ForeignGraph> {
        self.bind()?;
        // SAFETY: as above; the caller began the capture.
        let (exec, nodes) = unsafe { end_on(self.device(), self.cu_stream()) }?;
        Ok(ForeignGraph { exec, nodes })
    }
}

impl ForeignGraph {
    /// Enqueues one replay on `stream`, a stream of the same device. As
    /// with [`ForeignStream::launch`], the memory the work names belongs
    /// to the stream's library, which keeps it allocated while the graph
    /// lives and orders the replay after its other uses.
    pub fn launch(&self, stream: &ForeignStream) -> Result<()> {
        if stream.device() != &self.exec.device {
            return Err(SafeError::DeviceMismatch {
                what: "a graph launched on another device's stream",
            });
        }
        stream.bind()?;
        // SAFETY: the stream is valid (`from_raw`'s contract) and bound; the
        // memory is its library's to keep, as for `ForeignStream::launch`.
        unsafe { self.exec.launch(stream.cu_stream()) }
    }

    /// The number of nodes (kernels, copies, memsets) the capture recorded.
    pub fn node_count(&self) -> usize {
        self.nodes
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
        // SAFETY: the stream is live and bound; every buffer the graph uses
        // is kept by `self.kept`.
        unsafe { self.exec.launch(stream.cu_stream()) }
    }

    /// The number of nodes (kernels, copies, memsets) the capture recorded.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }
}
