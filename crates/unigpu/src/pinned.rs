//! Pinned host buffers: host memory that copies on a stream read and write
//! directly, at the DMA engine's full rate, and without blocking the host.

use crate::backend::PinnedImpl;
use crate::stream::check_len;
use crate::{Context, Element, GpuArray, Result, Stream};

/// `len` elements of host memory that [`Stream::upload_pinned`] and
/// [`Stream::download_pinned`] copy without staging and without waiting.
/// From [`Context::pinned`].
///
/// Page-locked on CUDA (`cuMemHostAlloc`): a copy there runs at the DMA
/// engine's rate (about 55 GB/s on an H200) and the call returns at once.
/// On the CPU and torch backends it is ordinary memory and the copies
/// finish before they return. Either way the host sees the contents only
/// through [`PinnedBuffer::as_slice`] and [`PinnedBuffer::as_mut_slice`],
/// which wait for the copies that would race with it, so a program
/// behaves the same on every backend.
///
/// Page-locked memory is a scarce system resource: keep a few buffers and
/// reuse them, rather than making one per transfer.
#[derive(Debug)]
pub struct PinnedBuffer<T: Element> {
    pub(crate) imp: PinnedImpl<T>,
}

impl<T: Element> PinnedBuffer<T> {
    pub fn len(&self) -> usize {
        self.imp.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type's runtime tag.
    pub fn dtype(&self) -> crate::DType {
        T::DTYPE
    }

    /// The contents, once the downloads pending into the buffer are done.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.imp.slice()
    }

    /// The contents for writing, once every pending copy from or into the
    /// buffer is done.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.imp.slice_mut()
    }
}

impl Context {
    /// `len` zeroed elements of pinned host memory for this context's
    /// device (see [`PinnedBuffer`]).
    pub fn pinned<T: Element>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        Ok(PinnedBuffer {
            imp: PinnedImpl::new(&self.default_stream().imp, len)?,
        })
    }
}

impl Stream {
    /// Copies `src` into `dst`, ordered on this stream. On CUDA it returns
    /// at once; `src.as_mut_slice()` waits for the copy.
    pub fn upload_pinned<T: Element>(
        &self,
        src: &PinnedBuffer<T>,
        dst: &mut GpuArray<T>,
    ) -> Result<()> {
        check_len("Stream::upload_pinned", dst.len(), src.len())?;
        self.imp
            .upload_pinned(&src.imp, dst.whole_mut("Stream::upload_pinned")?)
    }

    /// Copies `src` into `dst`, ordered on this stream. On CUDA it returns
    /// at once; `dst.as_slice()` waits for the copy.
    pub fn download_pinned<T: Element>(
        &self,
        src: &GpuArray<T>,
        dst: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        check_len("Stream::download_pinned", src.len(), dst.len())?;
        self.imp
            .download_pinned(src.whole("Stream::download_pinned")?, &mut dst.imp)
    }
}
