//! Moving an array's elements: to and from the host, and between arrays,
//! on the default stream ([`GpuArray`]'s methods) or a given one
//! ([`Stream`]'s). Whole arrays go straight to the backend; views and
//! strided arrays go through the strided-copy kernel (`strided.rs`).

use unigpu_core::Layout;

use crate::array::shape_error;
use crate::stream::{Stream, check_len};
use crate::{Element, Error, GpuArray, Result};

impl<T: Element> GpuArray<T> {
    /// Copies the array to a new host vector, in row-major order of its
    /// shape, after every pending write to it (on any stream) has
    /// finished. Blocks. A strided array is first gathered on the device.
    pub fn download(&self) -> Result<Vec<T>> {
        let stream = self.ctx.default_stream();
        if !self.layout.is_whole(self.storage.len()) {
            return stream.download(self);
        }
        let v = self.storage.read_vec(&stream.imp)?;
        // A download waits as a sync does: it reports an out-of-bounds
        // access of a generated kernel launched on the default stream.
        stream.faults.check()?;
        Ok(v)
    }

    /// Like [`GpuArray::download`], into a slice of the same length.
    pub fn download_into(&self, host: &mut [T]) -> Result<()> {
        check_len("GpuArray::download_into", self.len(), host.len())?;
        let stream = self.ctx.default_stream();
        if !self.layout.is_whole(self.storage.len()) {
            return stream.download_into(self, host);
        }
        self.storage.read(&stream.imp, host)?;
        stream.faults.check()
    }

    /// Overwrites the array with `host` (same length, row-major order of
    /// the shape), after every pending use of it has finished.
    pub fn upload_from(&mut self, host: &[T]) -> Result<()> {
        check_len("GpuArray::upload_from", self.len(), host.len())?;
        if self.layout.is_whole(self.storage.len()) {
            return self.storage.write(&self.ctx.default_stream().imp, host);
        }
        if self.layout.may_overlap() {
            // A strided import that holds an element twice: two writes
            // of one place would race.
            return Err(Error::Shape {
                what: "GpuArray::upload_from",
                message: format!(
                    "{:?} may hold an element twice (a stride of 0, or strides that overlap): it can be read, not written",
                    self.layout
                ),
            });
        }
        let ctx = self.ctx.clone();
        let staged = crate::strided::stage(&ctx, ctx.default_stream(), host)?;
        crate::strided::copy(
            &ctx,
            ctx.default_stream(),
            &staged.storage,
            &Layout::contiguous(self.layout.shape()),
            &mut self.storage,
            &self.layout,
        )
    }

    /// Device-to-device copy into `dst`, on the context's default stream.
    /// The shapes must be equal, or both arrays contiguous with the same
    /// length (then the elements are copied in order).
    ///
    /// `dst` may be on another device of the same backend: the copy is
    /// read on this array's default stream and written on `dst`'s, each
    /// after that array's pending uses, directly between the devices where
    /// one reaches the other's memory ([`crate::DeviceList::peers`]), else
    /// staged through page-locked host memory (cuda); between two Vulkan
    /// adapters or two torch devices, staged through host memory.
    pub fn copy_to(&self, dst: &mut GpuArray<T>) -> Result<()> {
        if !self.ctx.same_device(&dst.ctx) {
            if self.ctx.backend() != dst.ctx.backend() {
                return Err(Error::ContextMismatch {
                    what: "GpuArray::copy_to",
                });
            }
            check_len("GpuArray::copy_to", dst.len(), self.len())?;
            let staged;
            let src = if self.layout.is_whole(self.storage.len()) {
                self
            } else {
                staged = self.to_contiguous()?;
                &staged
            };
            let dst_ctx = dst.ctx.clone();
            let dst_storage =
                dst.whole_mut("GpuArray::copy_to between devices (the destination)")?;
            return src.storage.copy_between_devices(
                &src.ctx.default_stream().imp,
                dst_storage,
                &dst_ctx.default_stream().imp,
            );
        }
        self.ctx.default_stream().copy(self, dst)
    }
}

/// Transfers of arrays, ordered on a stream.
impl Stream {
    /// Copies `host` into `dst` (row-major order of its shape), ordered on
    /// this stream. Returns once `host` may be reused; the copy itself may
    /// still be pending.
    pub fn upload<T: Element>(&self, host: &[T], dst: &mut GpuArray<T>) -> Result<()> {
        check_len("Stream::upload", dst.len(), host.len())?;
        if dst.layout.is_whole(dst.storage.len()) {
            return self.imp.upload(host, &mut dst.storage);
        }
        let ctx = dst.ctx.clone();
        let mut staged = GpuArray::uninit(&ctx, host.len())?;
        self.imp.upload(host, &mut staged.storage)?;
        let shape = Layout::contiguous(dst.layout.shape());
        crate::strided::copy(
            &ctx,
            self,
            &staged.storage,
            &shape,
            &mut dst.storage,
            &dst.layout,
        )
    }

    /// Copies `src` into a new vector (row-major order of its shape) after
    /// the work before it on this stream (and any work that writes `src`);
    /// blocks until it is done.
    pub fn download<T: Element>(&self, src: &GpuArray<T>) -> Result<Vec<T>> {
        let mut out = vec![T::default(); src.len()];
        self.download_into(src, &mut out)?;
        Ok(out)
    }

    /// Like [`Stream::download`], into an existing slice of the same length.
    pub fn download_into<T: Element>(&self, src: &GpuArray<T>, host: &mut [T]) -> Result<()> {
        check_len("Stream::download_into", src.len(), host.len())?;
        if src.layout.is_whole(src.storage.len()) {
            self.imp.download_into(&src.storage, host)?;
            return self.faults.check();
        }
        let mut gathered = GpuArray::uninit(&src.ctx, src.len())?;
        let shape = Layout::contiguous(src.layout.shape());
        crate::strided::copy(
            &src.ctx,
            self,
            &src.storage,
            &src.layout,
            &mut gathered.storage,
            &shape,
        )?;
        self.imp.download_into(&gathered.storage, host)?;
        self.faults.check()
    }

    /// Device-to-device copy of `src` into `dst`, ordered on this stream:
    /// equal shapes, or two contiguous arrays of one length.
    pub fn copy<T: Element>(&self, src: &GpuArray<T>, dst: &mut GpuArray<T>) -> Result<()> {
        check_len("Stream::copy", dst.len(), src.len())?;
        if src.layout.is_whole(src.storage.len()) && dst.layout.is_whole(dst.storage.len()) {
            return self.imp.copy(&src.storage, &mut dst.storage);
        }
        let src_layout = if src.shape() == dst.shape() {
            src.layout.clone()
        } else if src.is_contiguous() && dst.is_contiguous() {
            // Same length, both in order: the elements in order.
            src.layout
                .reshape(dst.shape())
                .map_err(|e| shape_error("Stream::copy", e))?
        } else {
            return Err(Error::Shape {
                what: "Stream::copy",
                message: format!(
                    "the source has shape {:?} and the destination {:?}",
                    src.shape(),
                    dst.shape()
                ),
            });
        };
        crate::strided::copy(
            &src.ctx,
            self,
            &src.storage,
            &src_layout,
            &mut dst.storage,
            &dst.layout,
        )
    }
}
