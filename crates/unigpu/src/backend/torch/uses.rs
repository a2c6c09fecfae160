//! The streams that last used a tensor, and how a new use is ordered
//! after them (shared by buffers and by the graphs that keep them).

use std::sync::{Arc, Mutex};

use unigpu_torch_bridge as bridge;

use super::TorchStream;
use crate::Result;

/// The streams that last used a tensor.
#[derive(Debug, Default)]
pub(crate) struct Uses {
    writer: Option<Arc<TorchStream>>,
    readers: Vec<Arc<TorchStream>>,
}

impl Uses {
    /// The record of a tensor `stream` has just written (made, or taken
    /// from elsewhere with its producer's work ordered before `stream`).
    pub(crate) fn written_by(stream: &Arc<TorchStream>) -> Arc<Mutex<Uses>> {
        Arc::new(Mutex::new(Uses {
            writer: Some(stream.clone()),
            readers: Vec::new(),
        }))
    }
}

/// `TorchBuffer::order` for a tensor `tensor` allocated for the stream
/// `home`, with use record `uses` (also a graph's replay, which keeps all
/// three).
pub(crate) fn order_use(
    uses: &Mutex<Uses>,
    tensor: &bridge::Tensor,
    home: i64,
    stream: &Arc<TorchStream>,
    write: bool,
) -> Result<()> {
    let mut uses = uses.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = &uses.writer {
        stream.wait_for(w)?;
    }
    if write {
        for r in &uses.readers {
            stream.wait_for(r)?;
        }
    }
    if stream.id != home {
        tensor.record_stream(&stream.inner)?;
    }
    if write {
        uses.writer = Some(stream.clone());
        uses.readers.clear();
    } else if !uses.readers.iter().any(|r| r.id == stream.id) {
        uses.readers.push(stream.clone());
    }
    Ok(())
}
