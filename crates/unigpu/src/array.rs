//! `GpuArray<T>`: a typed array in device memory (host memory on the CPU
//! backend), freed on drop.

use std::fmt;

use unigpu_cuda_safe::DeviceBuffer;

use crate::backend::cpu::CpuBuffer;
use crate::context::DeviceImpl;
use crate::stream::{StreamImpl, check_len};
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
/// the memory is released after that work (stream-ordered free on CUDA,
/// shared ownership on the CPU backend).
pub struct GpuArray<T: Element> {
    pub(crate) ctx: Context,
    pub(crate) storage: Storage<T>,
}

pub(crate) enum Storage<T: Element> {
    Cpu(CpuBuffer<T>),
    Cuda(DeviceBuffer<T>),
    #[cfg(feature = "torch")]
    Torch(crate::backend::torch::TorchBuffer),
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
        let storage = match ctx.device() {
            DeviceImpl::Cpu(_) => Storage::Cpu(CpuBuffer::zeros(len)?),
            DeviceImpl::Cuda(_) => Storage::Cuda(DeviceBuffer::zeros(ctx.cuda_stream()?, len)?),
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(_) => {
                let mut a = GpuArray::uninit(ctx, len)?;
                ctx.ops().fill(&mut a, T::default())?;
                return Ok(a);
            }
        };
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage,
        })
    }

    pub(crate) fn uninit(ctx: &Context, len: usize) -> Result<Self> {
        let storage = match ctx.device() {
            // Host memory must be initialised to be safe Rust; zeroing it is
            // the cheapest way.
            DeviceImpl::Cpu(_) => Storage::Cpu(CpuBuffer::zeros(len)?),
            DeviceImpl::Cuda(_) => Storage::Cuda(DeviceBuffer::alloc(ctx.cuda_stream()?, len)?),
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(_) => {
                Storage::Torch(crate::backend::torch::TorchBuffer::uninit::<T>(
                    crate::backend::torch::ops::stream_of(ctx.default_stream(), "alloc")?,
                    len,
                )?)
            }
        };
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage,
        })
    }

    pub(crate) fn from_host(ctx: &Context, host: &[T]) -> Result<Self> {
        let storage = match ctx.device() {
            DeviceImpl::Cpu(_) => Storage::Cpu(CpuBuffer::from_slice(host)?),
            DeviceImpl::Cuda(_) => {
                Storage::Cuda(DeviceBuffer::from_host(ctx.cuda_stream()?, host)?)
            }
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(_) => {
                let mut a = GpuArray::uninit(ctx, host.len())?;
                a.upload_from(host)?;
                return Ok(a);
            }
        };
        Ok(GpuArray {
            ctx: ctx.clone(),
            storage,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Cpu(b) => b.len(),
            Storage::Cuda(b) => b.len(),
            #[cfg(feature = "torch")]
            Storage::Torch(b) => b.len(),
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

    /// Copies the array to a new host vector, after every pending write to
    /// it (on any stream) has finished. Blocks.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.len()];
        self.download_into(&mut out)?;
        Ok(out)
    }

    /// Like [`GpuArray::download`], into a slice of the same length.
    pub fn download_into(&self, host: &mut [T]) -> Result<()> {
        check_len("GpuArray::download_into", self.len(), host.len())?;
        match &self.storage {
            Storage::Cpu(b) => {
                b.read_into(host);
                Ok(())
            }
            Storage::Cuda(b) => Ok(b.read_into(self.ctx.cuda_stream()?, host)?),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => self.ctx.default_stream().download_into(self, host),
        }
    }

    /// Overwrites the array with `host` (same length), after every pending
    /// use of it has finished.
    pub fn upload_from(&mut self, host: &[T]) -> Result<()> {
        check_len("GpuArray::upload_from", self.len(), host.len())?;
        let ctx = self.ctx.clone();
        match &mut self.storage {
            Storage::Cpu(b) => {
                b.write_from(host);
                Ok(())
            }
            Storage::Cuda(b) => Ok(b.write_from(ctx.cuda_stream()?, host)?),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => ctx.default_stream().upload(host, self),
        }
    }

    /// Device-to-device copy into `dst`, on the context's default stream.
    /// Arrays of different lengths are an error.
    pub fn copy_to(&self, dst: &mut GpuArray<T>) -> Result<()> {
        if !self.ctx.same_device(&dst.ctx) {
            return Err(Error::ContextMismatch {
                what: "GpuArray::copy_to",
            });
        }
        self.ctx.default_stream().copy(self, dst)
    }

    /// A copy of this array in `ctx`, which may be a context of another
    /// backend. Between the torch and cuda backends on the same GPU the copy
    /// stays on the GPU, ordered after the array's pending writes and before
    /// later work on both sides. A move that involves the CPU backend, or two
    /// different GPUs, goes through host memory.
    pub fn to_context(&self, ctx: &Context) -> Result<GpuArray<T>> {
        if self.ctx.same_device(ctx) {
            let mut out = GpuArray::uninit(ctx, self.len())?;
            self.copy_to(&mut out)?;
            return Ok(out);
        }
        #[cfg(feature = "torch")]
        if self.ctx.device_id() == ctx.device_id() {
            use crate::Backend;
            match (self.ctx.backend(), ctx.backend()) {
                (Backend::Cuda, Backend::Torch) => {
                    return crate::backend::torch::cuda_to_torch(self, ctx);
                }
                (Backend::Torch, Backend::Cuda) => {
                    return crate::backend::torch::torch_to_cuda(self, ctx);
                }
                _ => {}
            }
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
    /// The default stream of a cuda context, or the error for another backend.
    pub(crate) fn cuda_stream(&self) -> Result<&unigpu_cuda_safe::CudaStreamHandle> {
        match &self.default_stream().imp {
            StreamImpl::Cuda(s) => Ok(s),
            _ => Err(Error::ContextMismatch {
                what: "a CUDA array in a context of another backend",
            }),
        }
    }
}
