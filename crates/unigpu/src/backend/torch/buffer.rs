//! A torch tensor as the storage of a `GpuArray`, with the bookkeeping that
//! orders its uses across streams.

use std::sync::{Arc, Mutex};

use unigpu_torch_bridge as bridge;

use super::TorchStream;
use super::graph::{self, Kept};
use super::uses::{Uses, order_use};
use crate::{Element, Error, Result};

/// A contiguous 1-D CUDA tensor of `len` elements. (`pub` only because the
/// sealed kernel-argument trait names it; the module is private.)
///
/// torch leaves cross-stream ordering to the caller; unigpu promises it, so
/// each buffer remembers the streams that last used it. A use on another
/// stream first makes that stream wait for them (an event recorded then,
/// which covers at least the conflicting work), and tells the caching
/// allocator about the new stream so the memory outlives its work.
#[derive(Debug)]
pub struct TorchBuffer {
    pub(crate) tensor: bridge::Tensor,
    len: usize,
    /// c10 id of the stream the memory was allocated for.
    home: i64,
    /// Shared with the graphs whose captured work uses the buffer.
    uses: Arc<Mutex<Uses>>,
}

impl TorchBuffer {
    /// `len` elements of `T` with arbitrary contents, allocated for `stream`.
    pub(crate) fn uninit<T: Element>(stream: &Arc<TorchStream>, len: usize) -> Result<TorchBuffer> {
        let bytes = len.checked_mul(std::mem::size_of::<T>());
        let numel = i64::try_from(len).ok().filter(|_| bytes.is_some());
        let Some(numel) = numel else {
            return Err(Error::OutOfMemory {
                requested: usize::MAX,
                free: free_bytes(stream),
            });
        };
        let _current = stream.enter()?;
        let device = stream.inner.device_index()?;
        let tensor = bridge::tensor_empty(numel, T::DTYPE as i32, device).map_err(|e| {
            if e.message().contains("out of memory") {
                Error::OutOfMemory {
                    requested: bytes.unwrap_or(usize::MAX),
                    free: free_bytes(stream),
                }
            } else {
                e.into()
            }
        })?;
        Ok(TorchBuffer::from_tensor(tensor, len, stream))
    }

    /// `tensor`, made for `stream` (the allocator's stream for a new one),
    /// with `stream` as its last writer: a new tensor, or one from elsewhere
    /// (a DLPack import) whose producer has ordered its work before
    /// `stream`, as DLPack requires.
    pub(crate) fn from_tensor(
        tensor: bridge::Tensor,
        len: usize,
        stream: &Arc<TorchStream>,
    ) -> TorchBuffer {
        TorchBuffer {
            tensor,
            len,
            home: stream.id,
            uses: Uses::written_by(stream),
        }
    }

    /// What the buffer's DLPack export carries so that its import in this
    /// process shares the buffer's ordering ([`Self::from_shared`]).
    pub(crate) fn shared(&self) -> Shared {
        Shared {
            home: self.home,
            uses: self.uses.clone(),
        }
    }

    /// Another reference to a buffer's tensor (its own DLPack export
    /// coming back), ordered with that buffer through its use record.
    pub(crate) fn from_shared(tensor: bridge::Tensor, len: usize, shared: &Shared) -> TorchBuffer {
        TorchBuffer {
            tensor,
            len,
            home: shared.home,
            uses: shared.uses.clone(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Orders a use of the buffer on `stream` (which must be current) after
    /// the earlier uses it conflicts with: a read after the last write, a
    /// write after every earlier use. While `stream` captures a graph the
    /// use is recorded instead (the graph keeps the tensor and orders each
    /// replay).
    pub(crate) fn order(&self, stream: &Arc<TorchStream>, write: bool) -> Result<()> {
        let kept = || {
            Ok(Kept {
                tensor: self.tensor.share()?,
                home: self.home,
                uses: self.uses.clone(),
            })
        };
        if graph::note_use(stream, &self.uses, kept)? {
            return Ok(());
        }
        order_use(&self.uses, &self.tensor, self.home, stream, write)
    }

    pub(crate) fn tensor_mut(&mut self) -> &mut bridge::Tensor {
        &mut self.tensor
    }
}

/// A buffer's ordering state, kept in its DLPack exports: the c10 id of
/// the stream its memory was allocated for, and its use record.
#[derive(Debug)]
pub(crate) struct Shared {
    home: i64,
    uses: Arc<Mutex<Uses>>,
}

fn free_bytes(stream: &TorchStream) -> usize {
    stream
        .foreign
        .device()
        .memory_info()
        .map_or(0, |(free, _)| free)
}
