//! A torch tensor as the storage of a `GpuArray`, with the bookkeeping that
//! orders its uses across streams.

use std::sync::{Arc, Mutex};

use unigpu_torch_bridge as bridge;

use unigpu_core::dlpack::{ManagedTensor, ffi};
use unigpu_cuda_safe::CudaEventHandle;

use super::graph::{self, Kept};
use super::uses::{Uses, order_use};
use super::{Torch, TorchStream, refuse};
use crate::backend::{Backend, BufferApi};
use crate::device::Location;
use crate::dlpack::sync::DlpackSync;
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

/// Why host transfers are refused while capturing.
const HOST_MEMORY: &str = "a replay would read or write host memory the graph does not own; do \
                           host transfers before begin_capture or after end_capture";

/// Why DLPack exchanges are refused while capturing.
const DLPACK: &str = "the exchange orders the other library's work with events, which a capture \
                      cannot record; exchange before begin_capture or after end_capture";

/// `read` is the contract's default, a `download_into`.
impl BufferApi for Torch {
    /// `len` elements of `T` with arbitrary contents, allocated for
    /// `stream`.
    fn alloc<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
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

    fn zeros<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        let mut b = Self::alloc::<T>(stream, len)?;
        let _current = stream.enter()?;
        b.order(stream, true)?;
        b.tensor_mut().fill_bits(0)?;
        Ok(b)
    }

    fn from_host<T: Element>(stream: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        let mut b = Self::alloc::<T>(stream, host.len())?;
        Self::upload(stream, host, &mut b)?;
        Ok(b)
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len()
    }

    fn write<T: Element>(
        stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
        host: &[T],
    ) -> Result<()> {
        Self::upload(stream, host, dst)
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        refuse(stream, "an upload from host memory", HOST_MEMORY)?;
        let _current = stream.enter()?;
        dst.order(stream, true)?;
        Ok(dst.tensor_mut().write_bytes(bytemuck::cast_slice(host))?)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        refuse(stream, "a download into host memory", HOST_MEMORY)?;
        let _current = stream.enter()?;
        src.order(stream, false)?;
        Ok(src.tensor.read_bytes(bytemuck::cast_slice_mut(host))?)
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        let _current = stream.enter()?;
        src.order(stream, false)?;
        dst.order(stream, true)?;
        Ok(dst.tensor_mut().copy_from(&src.tensor, false)?)
    }

    /// torch's caching allocator has no managed memory.
    fn alloc_unified<T: Element>(_: &Self::Stream, _: usize) -> Result<Self::Buffer<T>> {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what: "alloc_unified: torch's caching allocator has no managed (unified) memory; \
                   use a cuda context (Context::new(Backend::Cuda, ..)), whose arrays move to \
                   torch with GpuArray::to_context"
                .into(),
        })
    }

    fn is_unified<T: Element>(_: &Self::Buffer<T>) -> bool {
        false
    }

    fn host_view<T: Element>(_: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>> {
        Err(crate::backend::unified::not_unified(Backend::Torch))
    }

    fn host_view_mut<T: Element>(_: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>> {
        Err(crate::backend::unified::not_unified(Backend::Torch))
    }

    fn prefetch<T: Element>(_: &Self::Stream, _: &Self::Buffer<T>, _: Location) -> Result<()> {
        Err(crate::backend::unified::not_unified(Backend::Torch))
    }

    fn to_dlpack<T: Element>(
        stream: &Self::Stream,
        buffer: &mut Self::Buffer<T>,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        refuse(stream, "a DLPack export", DLPACK)?;
        {
            let _current = stream.enter()?;
            // The consumer may write: order after every earlier use.
            buffer.order(stream, true)?;
        }
        // The export carries the buffer'stream use record, so that an import of it
        // in this process (`from_dlpack` below) is ordered with this buffer.
        let tensor = buffer.tensor.to_managed_with::<T, _>(buffer.shared())?;
        match sync {
            DlpackSync::Host => stream.inner.synchronize()?,
            DlpackSync::Stream(consumer) => {
                let ready = CudaEventHandle::new(consumer.device())?;
                stream.foreign.record(&ready)?;
                consumer.wait(&ready)?;
            }
            DlpackSync::Unordered => {}
        }
        Ok(tensor)
    }

    fn from_dlpack<T: Element>(
        stream: &Self::Stream,
        tensor: ManagedTensor,
    ) -> Result<Self::Buffer<T>> {
        refuse(stream, "a DLPack import", DLPACK)?;
        let view = tensor.view()?;
        let ordinal = stream.foreign.device().ordinal();
        let ours = (ffi::kDLCUDA, ordinal as i32);
        if (view.device.device_type, view.device.device_id) != ours {
            return Err(Error::Dlpack {
                message: format!(
                    "the tensor is on DLPack device ({}, {}), this torch context is CUDA device {ordinal}",
                    view.device.device_type, view.device.device_id,
                ),
            });
        }
        view.expect_dtype::<T>()?;
        if tensor.is_read_only() {
            return Err(Error::Dlpack {
                message: "the tensor is read-only, and unigpu arrays are writable".into(),
            });
        }
        // A buffer'stream own export coming back (same device and dtype, checked
        // above): a second reference to the same tensor with the buffer'stream use
        // record, so that a write through either, then a use through the other
        // on any stream, is ordered as on one buffer. The tensor is dropped
        // here (its deleter drops only the export'stream own reference).
        // Only an export that still spans its whole tensor is the buffer
        // coming back: one whose start or length a consumer changed (a slice
        // of it) is imported below as any tensor.
        if let Some(export) = tensor.owner::<bridge::TensorExport<Shared>>()
            && view.data == export.tensor.data_address()?
            && i64::try_from(view.len).ok() == Some(export.tensor.numel()?)
        {
            let t = export.tensor.share()?;
            return Ok(TorchBuffer::from_shared(t, view.len, &export.with));
        }
        let t = bridge::Tensor::from_managed(tensor)?;
        Ok(TorchBuffer::from_tensor(t, view.len, stream))
    }
}

crate::backend::host_pinned::host_pinned_api!(Torch);
