//! `GpuArray<T>`: a typed array in device memory (host memory on the CPU
//! backend), freed on drop.

use std::fmt;

pub(crate) use crate::backend::Storage;
use crate::stream::{Stream, check_len};
use crate::{Context, DType, Element, Error, Result};

/// `len` elements of `T` on the context's device.
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
}

impl<T: Element> fmt::Debug for GpuArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuArray")
            .field("backend", &self.ctx.backend())
            .field("device_id", &self.ctx.device_id())
            .field("dtype", &T::DTYPE)
            .field("len", &self.len())
            .finish()
    }
}

impl<T: Element> GpuArray<T> {
    pub(crate) fn zeros(ctx: &Context, len: usize) -> Result<Self> {
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage: Storage::zeros(&ctx.default_stream().imp, len)?,
        })
    }

    pub(crate) fn uninit(ctx: &Context, len: usize) -> Result<Self> {
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage: Storage::alloc(&ctx.default_stream().imp, len)?,
        })
    }

    pub(crate) fn from_host(ctx: &Context, host: &[T]) -> Result<Self> {
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage: Storage::from_host(&ctx.default_stream().imp, host)?,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.storage.len()
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

    /// Copies the array to a new host vector, after every pending write to
    /// it (on any stream) has finished. Blocks.
    pub fn download(&self) -> Result<Vec<T>> {
        let stream = self.ctx.default_stream();
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
        self.storage.read(&stream.imp, host)?;
        stream.faults.check()
    }

    /// Overwrites the array with `host` (same length), after every pending
    /// use of it has finished.
    pub fn upload_from(&mut self, host: &[T]) -> Result<()> {
        check_len("GpuArray::upload_from", self.len(), host.len())?;
        self.storage.write(&self.ctx.default_stream().imp, host)
    }

    /// Device-to-device copy into `dst`, on the context's default stream.
    /// Arrays of different lengths are an error.
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
            return self.storage.copy_between_devices(
                &self.ctx.default_stream().imp,
                &mut dst.storage,
                &dst.ctx.default_stream().imp,
            );
        }
        self.ctx.default_stream().copy(self, dst)
    }

    /// A copy of this array in `ctx`, which may be a context of another
    /// backend or device. Between two devices of one backend the copy is
    /// [`GpuArray::copy_to`]'s (direct, or staged through page-locked
    /// memory). Between the torch and cuda backends on the same GPU the
    /// copy stays on the GPU, ordered after the array's pending writes and
    /// before later work on both sides. Any other move goes through host
    /// memory.
    pub fn to_context(&self, ctx: &Context) -> Result<GpuArray<T>> {
        if self.ctx.same_device(ctx) {
            let mut out = GpuArray::uninit(ctx, self.len())?;
            self.copy_to(&mut out)?;
            return Ok(out);
        }
        if self.ctx.backend() == ctx.backend() {
            let mut out = GpuArray::uninit(ctx, self.len())?;
            match self.copy_to(&mut out) {
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
            return Ok(GpuArray {
                ctx: ctx.clone(),
                storage: moved?,
            });
        }
        ctx.upload(&self.download()?)
    }

    /// A new array with the same contents.
    pub fn try_clone(&self) -> Result<GpuArray<T>> {
        let mut out = GpuArray::uninit(&self.ctx, self.len())?;
        self.copy_to(&mut out)?;
        Ok(out)
    }
}

impl Context {
    /// An array of `len` elements whose contents are unspecified (zeroes on
    /// the CPU backend, whatever the memory held on CUDA).
    pub fn alloc<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        GpuArray::uninit(self, len)
    }

    /// An array of `len` zeroes.
    pub fn alloc_zeros<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        GpuArray::zeros(self, len)
    }

    /// Same as [`Context::alloc_zeros`].
    pub fn zeros<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        self.alloc_zeros(len)
    }

    /// An array holding a copy of `host`.
    pub fn alloc_upload<T: Element>(&self, host: &[T]) -> Result<GpuArray<T>> {
        GpuArray::from_host(self, host)
    }

    /// Same as [`Context::alloc_upload`].
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<GpuArray<T>> {
        self.alloc_upload(host)
    }
}

/// Transfers of arrays, ordered on a stream.
impl Stream {
    /// Copies `host` into `dst`, ordered on this stream. Returns once `host`
    /// may be reused; the copy itself may still be pending.
    pub fn upload<T: Element>(&self, host: &[T], dst: &mut GpuArray<T>) -> Result<()> {
        check_len("Stream::upload", dst.len(), host.len())?;
        self.imp.upload(host, &mut dst.storage)
    }

    /// Copies `src` into a new vector after the work before it on this
    /// stream (and any work that writes `src`); blocks until it is done.
    pub fn download<T: Element>(&self, src: &GpuArray<T>) -> Result<Vec<T>> {
        let mut out = vec![T::default(); src.len()];
        self.download_into(src, &mut out)?;
        Ok(out)
    }

    /// Like [`Stream::download`], into an existing slice of the same length.
    pub fn download_into<T: Element>(&self, src: &GpuArray<T>, host: &mut [T]) -> Result<()> {
        check_len("Stream::download_into", src.len(), host.len())?;
        self.imp.download_into(&src.storage, host)?;
        self.faults.check()
    }

    /// Device-to-device copy of `src` into `dst`, ordered on this stream.
    pub fn copy<T: Element>(&self, src: &GpuArray<T>, dst: &mut GpuArray<T>) -> Result<()> {
        check_len("Stream::copy", dst.len(), src.len())?;
        self.imp.copy(&src.storage, &mut dst.storage)
    }
}
