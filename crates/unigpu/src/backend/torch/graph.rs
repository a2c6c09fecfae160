//! Graphs of the torch backend's work: the c10 stream is captured with the
//! driver's stream capture, as on the cuda backend, and what the captured
//! work uses is kept by the graph.
//!
//! c10's caching allocator hands a freed block to the next allocation on
//! its stream. A graph replays into the memory its capture named, so every
//! tensor the captured work uses is kept (a shared handle, so its storage
//! is never freed while the graph lives), together with its use record:
//! each replay counts as a write of those tensors, ordered after their
//! uses on other streams, and told to the allocator (`record_stream`)
//! where it runs on a stream other than the tensor's own.
//!
//! The capture state is per CUDA stream (c10's stream id), not per
//! `TorchStream`: two handles of one c10 stream (a context's default
//! stream, a recycled pool stream) see the same capture.
//!
//! Torch ops that allocate their own temporaries are not used by the
//! facade's ops (they all write a given output), so nothing the captured
//! work touches comes from outside the kept tensors; an allocation made
//! while capturing (`ctx.alloc`) is a tensor like any other and is kept
//! once used.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use unigpu_cuda_safe::ForeignGraph;
use unigpu_torch_bridge as bridge;

use super::uses::{Uses, order_use};
use super::{Torch, TorchStream, refuse};
use crate::backend::{Backend, GraphApi};
use crate::error::{Error, Result};

/// What a capture keeps of one tensor its work used.
#[derive(Debug)]
pub(crate) struct Kept {
    pub(crate) tensor: bridge::Tensor,
    /// c10 id of the stream the tensor's memory was allocated for.
    pub(crate) home: i64,
    pub(crate) uses: Arc<Mutex<Uses>>,
}

#[derive(Debug, Default)]
struct Capture {
    kept: Vec<Kept>,
    /// The use records already kept, by address.
    seen: HashSet<usize>,
}

/// Captures in progress in this process, by c10 stream id, and their
/// number, read without the lock on every tensor use.
static ACTIVE: Mutex<Option<HashMap<i64, Capture>>> = Mutex::new(None);
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn active() -> MutexGuard<'static, Option<HashMap<i64, Capture>>> {
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// When `stream` is capturing, gives the capture what `kept` makes (once
/// per tensor) and returns true: the use is recorded, not run, so it is
/// ordered at each replay instead of now.
pub(crate) fn note_use(
    stream: &TorchStream,
    uses: &Arc<Mutex<Uses>>,
    kept: impl FnOnce() -> Result<Kept>,
) -> Result<bool> {
    if COUNT.load(Ordering::Acquire) == 0 {
        return Ok(false);
    }
    let mut active = active();
    let Some(capture) = active.as_mut().and_then(|a| a.get_mut(&stream.id)) else {
        return Ok(false);
    };
    if capture.seen.insert(Arc::as_ptr(uses) as usize) {
        capture.kept.push(kept()?);
    }
    Ok(true)
}

/// A captured graph and the tensors its work uses.
#[derive(Debug)]
pub struct TorchGraph {
    graph: ForeignGraph,
    kept: Vec<Kept>,
}

impl GraphApi for Torch {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        let mut active = active();
        let map = active.get_or_insert_with(HashMap::new);
        if map.contains_key(&stream.id) {
            return Err(Error::Unsupported {
                backend: Backend::Torch,
                what: "begin_capture: this stream is already capturing; end that capture first"
                    .into(),
            });
        }
        stream
            .foreign
            .begin_capture()
            .map_err(|e| Error::from(e).on_backend(Backend::Torch))?;
        map.insert(stream.id, Capture::default());
        COUNT.store(map.len(), Ordering::Release);
        Ok(())
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        let capture = {
            let mut active = active();
            let map = active.get_or_insert_with(HashMap::new);
            let Some(capture) = map.remove(&stream.id) else {
                return Err(Error::Unsupported {
                    backend: Backend::Torch,
                    what: "end_capture: this stream is not capturing; call begin_capture first"
                        .into(),
                });
            };
            COUNT.store(map.len(), Ordering::Release);
            capture
        };
        let graph = stream
            .foreign
            .end_capture()
            .map_err(|e| Error::from(e).on_backend(Backend::Torch))?;
        Ok(TorchGraph {
            graph,
            kept: capture.kept,
        })
    }

    /// One atomic load when nothing captures.
    fn is_capturing(stream: &Self::Stream) -> bool {
        COUNT.load(Ordering::Acquire) > 0
            && active()
                .as_ref()
                .is_some_and(|a| a.contains_key(&stream.id))
    }

    /// One replay, as a write of every kept tensor.
    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()> {
        refuse(
            stream,
            "launching a graph",
            "a graph cannot replay inside another's capture",
        )?;
        let _current = stream.enter()?;
        for k in &graph.kept {
            order_use(&k.uses, &k.tensor, k.home, stream, true)?;
        }
        graph
            .graph
            .launch(&stream.foreign)
            .map_err(|e| Error::from(e).on_backend(Backend::Torch))
    }

    fn graph_len(graph: &Self::Graph) -> usize {
        graph.graph.node_count()
    }
}
