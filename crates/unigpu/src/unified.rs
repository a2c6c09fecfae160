//! Unified (managed) memory arrays: one [`GpuArray`] that kernels use on
//! the device and the host reads and writes in place, without copies.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::backend::{HostViewImpl, HostViewMutImpl, Storage};
use crate::{Context, Element, GpuArray, Location, Result, Stream};

/// A unified array's elements, read from the host: derefs to `&[T]`.
/// From [`GpuArray::host_view`]. While it lives, no device work can write
/// the array (that needs `&mut`); reads on the device may go on.
pub struct HostView<'a, T: Element> {
    imp: HostViewImpl<'a, T>,
}

/// A unified array's elements, written from the host: derefs to
/// `&mut [T]`. From [`GpuArray::host_view_mut`]. While it lives, no device
/// work can use the array.
pub struct HostViewMut<'a, T: Element> {
    imp: HostViewMutImpl<'a, T>,
}

impl<T: Element> Deref for HostView<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.imp
    }
}

impl<T: Element> Deref for HostViewMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.imp
    }
}

impl<T: Element> DerefMut for HostViewMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.imp
    }
}

impl<T: Element> fmt::Debug for HostView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostView")
            .field("len", &self.len())
            .finish()
    }
}

impl<T: Element> fmt::Debug for HostViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostViewMut")
            .field("len", &self.len())
            .finish()
    }
}

impl Context {
    /// `len` zeroed elements of unified memory: an ordinary [`GpuArray`]
    /// (every op, kernel, copy and download takes it) that the host also
    /// reads and writes in place through [`GpuArray::host_view`] and
    /// [`GpuArray::host_view_mut`], and that [`Stream::prefetch`] moves to
    /// the device or the host ahead of use.
    ///
    /// - cuda: managed memory (`cuMemAllocManaged`, attached globally),
    ///   never from the caching allocator. Never more than the device has
    ///   free: managed memory may be over-subscribed (its pages evicted to
    ///   the host), which can stall or hang a GPU, so a request over the
    ///   driver's free bytes (after emptying the cache) is
    ///   [`crate::Error::OutOfMemory`] with the true free figure. The
    ///   memory is made resident and zeroed on the device before this
    ///   returns (it waits for the default stream), so the next request's
    ///   check counts it. A device without concurrent managed access (a GPU
    ///   before Pascal, Windows/WSL) gets `Unsupported`: there the host
    ///   could fault touching managed memory while any kernel runs.
    /// - cpu: ordinary host memory; prefetch does nothing.
    /// - torch: `Unsupported` (torch's caching allocator has no managed
    ///   memory); use a cuda context and move the array to torch with
    ///   [`GpuArray::to_context`].
    ///
    /// Copies of the array ([`GpuArray::try_clone`], results of ops into
    /// new arrays) are ordinary device memory.
    pub fn alloc_unified<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        let storage = Storage::alloc_unified(&self.default_stream().imp, len)?;
        Ok(GpuArray::from_storage(self, storage))
    }
}

impl<T: Element> GpuArray<T> {
    /// Whether the array is unified memory ([`Context::alloc_unified`]).
    pub fn is_unified(&self) -> bool {
        self.storage.is_unified()
    }

    /// The elements, read in place from the host, once the pending writes
    /// to the array (on any stream) are done; blocks until then. Pages not
    /// on the host move there as they are touched (prefetch them to
    /// [`Location::Host`] to move them in bulk). `Unsupported` for an array
    /// not made by [`Context::alloc_unified`].
    pub fn host_view(&self) -> Result<HostView<'_, T>> {
        Ok(HostView {
            imp: self.storage.host_view()?,
        })
    }

    /// The elements for writing in place from the host, once every pending
    /// use of the array (on any stream) is done; blocks until then. Work
    /// enqueued after the view is dropped sees what was written.
    /// `Unsupported` as [`GpuArray::host_view`].
    pub fn host_view_mut(&mut self) -> Result<HostViewMut<'_, T>> {
        Ok(HostViewMut {
            imp: self.storage.host_view_mut()?,
        })
    }
}

impl Stream {
    /// Moves a unified array's memory to `to` (the device before kernels,
    /// the host before host views), ordered on this stream after the
    /// array's pending writes; returns at once. Only a hint: the contents
    /// never change, and an array used where its pages are not is still
    /// correct, only slower. Does nothing on the CPU backend.
    /// `Unsupported` for an array not made by [`Context::alloc_unified`].
    pub fn prefetch<T: Element>(&self, array: &GpuArray<T>, to: Location) -> Result<()> {
        self.imp.prefetch(&array.storage, to)
    }
}
