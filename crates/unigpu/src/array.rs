//! `GpuArray<T>`: a typed array in device memory (host memory on the CPU
//! backend), freed on drop.

use std::fmt;

pub(crate) use crate::backend::Storage;

use crate::{Context, DType, Element, Error, Result};
use unigpu_core::{IntoShape, Layout};

/// Elements of `T` on the context's device, with a shape: any number of
/// axes, row-major (the last axis varies fastest) when made here; a
/// DLPack import keeps its producer's strides. A 1-D array of `len`
/// elements is what `ctx.upload(&v)` and `ctx.zeros(len)` make, as before
/// arrays had shapes. Views ([`GpuArray::view`], [`GpuArray::view_mut`],
/// and from them `reshape`, `t`, `permute`, `slice`, `index`,
/// `broadcast_to`) share the array's memory and its use tracking.
///
/// Operations on an array go on the context's default stream; the
/// `Stream` methods take arrays for work on other streams. Every use is
/// ordered after the earlier uses it conflicts with, on any stream, so a
/// download always sees the writes enqueued before it.
///
/// Send + Sync: `&GpuArray` only allows reads and `&mut GpuArray` is
/// exclusive, so Rust's borrow rules keep writers apart across threads as
/// they do for a `Vec`. Dropping an array with work still pending is fine:
/// the memory is reused after that work (the caching allocator on CUDA,
/// shared ownership on the CPU backend).
pub struct GpuArray<T: Element> {
    pub(crate) ctx: Context,
    pub(crate) storage: Storage<T>,
    /// Where the elements sit in `storage`; always within it.
    pub(crate) layout: Layout,
}

impl<T: Element> fmt::Debug for GpuArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuArray")
            .field("backend", &self.ctx.backend())
            .field("device_id", &self.ctx.device_id())
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape())
            .finish()
    }
}

impl<T: Element> GpuArray<T> {
    /// A whole buffer as a 1-D array.
    pub(crate) fn from_storage(ctx: &Context, storage: Storage<T>) -> Self {
        let layout = Layout::contiguous(&[storage.len()]);
        GpuArray {
            ctx: ctx.clone(),
            storage,
            layout,
        }
    }

    pub(crate) fn zeros(ctx: &Context, len: usize) -> Result<Self> {
        let storage = Storage::zeros(&ctx.default_stream().imp, len)?;
        Ok(Self::from_storage(ctx, storage))
    }

    pub(crate) fn uninit(ctx: &Context, len: usize) -> Result<Self> {
        let storage = Storage::alloc(&ctx.default_stream().imp, len)?;
        Ok(Self::from_storage(ctx, storage))
    }

    pub(crate) fn from_host(ctx: &Context, host: &[T]) -> Result<Self> {
        let storage = Storage::from_host(&ctx.default_stream().imp, host)?;
        Ok(Self::from_storage(ctx, storage))
    }

    /// A new contiguous array of `shape`, contents unspecified.
    pub(crate) fn uninit_shaped(ctx: &Context, shape: &[usize]) -> Result<Self> {
        let len =
            unigpu_core::element_count(shape).map_err(|e| shape_error("an array's shape", e))?;
        let storage = Storage::alloc(&ctx.default_stream().imp, len)?;
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage,
            layout: Layout::contiguous(shape),
        })
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    /// The extent of each axis.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// The number of axes.
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// The step between neighbours along each axis, in elements.
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// Shape, strides and offset together.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Whether the elements are one row-major run of the memory (always
    /// true of an array made here; a DLPack import may be strided).
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// The same array with shape `shape`, without copying (numpy's and
    /// torch's rule): refused, naming both shapes, when the counts differ
    /// or the strides cannot express it; [`GpuArray::to_contiguous`] first
    /// then.
    pub fn reshape(mut self, shape: impl IntoShape) -> Result<GpuArray<T>> {
        self.layout = self
            .layout
            .reshape(&shape.into_shape())
            .map_err(|e| shape_error("GpuArray::reshape", e))?;
        Ok(self)
    }

    /// The buffer, where the array is all of it in order (what the
    /// backends' whole-buffer operations take); else an error naming
    /// `what` and the layout.
    pub(crate) fn whole(&self, what: &'static str) -> Result<&Storage<T>> {
        if self.layout.is_whole(self.storage.len()) {
            Ok(&self.storage)
        } else {
            Err(not_whole(what, &self.layout))
        }
    }

    /// As [`GpuArray::whole`], for writing.
    pub(crate) fn whole_mut(&mut self, what: &'static str) -> Result<&mut Storage<T>> {
        if self.layout.is_whole(self.storage.len()) {
            Ok(&mut self.storage)
        } else {
            Err(not_whole(what, &self.layout))
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of device memory the elements take.
    pub fn size_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }

    /// The element type's runtime tag.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The context the array lives in.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// A copy of this array in `ctx`, with the same shape, which may be a
    /// context of another backend or device. Between two devices of one
    /// backend the copy is [`GpuArray::copy_to`]'s (direct, or staged
    /// through page-locked memory). Between the torch and cuda backends on
    /// the same GPU the copy stays on the GPU, ordered after the array's
    /// pending writes and before later work on both sides. Any other move
    /// goes through host memory.
    pub fn to_context(&self, ctx: &Context) -> Result<GpuArray<T>> {
        if !self.layout.is_whole(self.storage.len()) {
            return self.to_contiguous()?.to_context(ctx);
        }
        let shape = self.layout.clone();
        let mut out = self.to_context_flat(ctx)?;
        out.layout = shape;
        Ok(out)
    }

    /// [`GpuArray::to_context`] of a whole array, as a 1-D array.
    fn to_context_flat(&self, ctx: &Context) -> Result<GpuArray<T>> {
        if self.ctx.same_device(ctx) {
            let mut out = GpuArray::uninit(ctx, self.len())?;
            self.storage_copy_to(&mut out)?;
            return Ok(out);
        }
        if self.ctx.backend() == ctx.backend() {
            let mut out = GpuArray::uninit(ctx, self.len())?;
            match self.storage_copy_to(&mut out) {
                Ok(()) => return Ok(out),
                // No path between the devices: through the host, below.
                Err(Error::Unsupported { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if self.ctx.device_id() == ctx.device_id()
            && let Some(moved) = self
                .storage
                .move_to(&self.ctx.default_stream().imp, &ctx.default_stream().imp)
        {
            return Ok(GpuArray::from_storage(ctx, moved?));
        }
        ctx.upload(&self.download()?)
    }

    /// [`GpuArray::copy_to`] of two whole arrays of one length, their
    /// shapes ignored.
    fn storage_copy_to(&self, dst: &mut GpuArray<T>) -> Result<()> {
        if !self.ctx.same_device(&dst.ctx) {
            return self.storage.copy_between_devices(
                &self.ctx.default_stream().imp,
                &mut dst.storage,
                &dst.ctx.default_stream().imp,
            );
        }
        self.ctx
            .default_stream()
            .imp
            .copy(&self.storage, &mut dst.storage)
    }

    /// A new contiguous array with the same shape and contents.
    pub fn try_clone(&self) -> Result<GpuArray<T>> {
        self.view().to_contiguous()
    }

    /// A contiguous copy (the same shape, row-major), made on the device.
    pub fn to_contiguous(&self) -> Result<GpuArray<T>> {
        self.view().to_contiguous()
    }
}

impl Context {
    /// An array of `shape` (a length, or `[rows, cols, ...]`) whose
    /// contents are unspecified (zeroes on the CPU backend, whatever the
    /// memory held on CUDA).
    pub fn alloc<T: Element>(&self, shape: impl IntoShape) -> Result<GpuArray<T>> {
        GpuArray::uninit_shaped(self, &shape.into_shape())
    }

    /// An array of `shape` (a length, or `[rows, cols, ...]`) holding zeroes.
    pub fn alloc_zeros<T: Element>(&self, shape: impl IntoShape) -> Result<GpuArray<T>> {
        let shape = shape.into_shape();
        let len =
            unigpu_core::element_count(&shape).map_err(|e| shape_error("Context::zeros", e))?;
        let mut a = GpuArray::zeros(self, len)?;
        a.layout = Layout::contiguous(&shape);
        Ok(a)
    }

    /// Same as [`Context::alloc_zeros`].
    pub fn zeros<T: Element>(&self, shape: impl IntoShape) -> Result<GpuArray<T>> {
        self.alloc_zeros(shape)
    }

    /// A 1-D array holding a copy of `host` (give it a shape with
    /// [`GpuArray::reshape`]).
    pub fn alloc_upload<T: Element>(&self, host: &[T]) -> Result<GpuArray<T>> {
        GpuArray::from_host(self, host)
    }

    /// Same as [`Context::alloc_upload`].
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<GpuArray<T>> {
        self.alloc_upload(host)
    }
}

pub(crate) fn shape_error(what: &'static str, e: unigpu_core::ShapeError) -> Error {
    Error::Shape { what, message: e.0 }
}

fn not_whole(what: &'static str, layout: &Layout) -> Error {
    Error::Shape {
        what,
        message: format!(
            "needs an array that is all of its memory in row-major order, not a view or strided array ({layout:?}); make one with to_contiguous()"
        ),
    }
}
