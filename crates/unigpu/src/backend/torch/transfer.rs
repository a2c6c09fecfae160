//! Arrays moving between the torch and cuda backends on one GPU: a
//! device-to-device copy ordered on both sides' streams, never through the
//! host.

use unigpu_torch_bridge::cuda_interop;

use super::ops::{buf, buf_mut, stream_of};
use crate::array::Storage;
use crate::{Context, Element, Error, GpuArray, Result};

/// A new array in the torch context `torch` holding a copy of `src`, an
/// array of a cuda context on the same GPU.
pub(crate) fn cuda_to_torch<T: Element>(src: &GpuArray<T>, torch: &Context) -> Result<GpuArray<T>> {
    let what = "GpuArray::to_context";
    let Storage::Cuda(from) = &src.storage else {
        return Err(Error::ContextMismatch { what });
    };
    let cuda = src.ctx.cuda_stream()?;
    let t = stream_of(torch.default_stream(), what)?;
    let mut out = GpuArray::<T>::uninit(torch, src.len())?;
    // Fresh from `t`'s allocator, so `t` is already its only user.
    let dst = buf_mut(&mut out, what)?;
    cuda_interop::copy_buffer_to_tensor(from, dst.tensor_mut(), &t.inner, cuda)?;
    Ok(out)
}

/// A new array in the cuda context `cuda_ctx` holding a copy of `src`, an
/// array of a torch context on the same GPU.
pub(crate) fn torch_to_cuda<T: Element>(
    src: &GpuArray<T>,
    cuda_ctx: &Context,
) -> Result<GpuArray<T>> {
    let what = "GpuArray::to_context";
    let from = buf(src, what)?;
    let t = stream_of(src.ctx.default_stream(), what)?;
    let cuda = cuda_ctx.cuda_stream()?;
    let mut out = GpuArray::<T>::uninit(cuda_ctx, src.len())?;
    let Storage::Cuda(dst) = &mut out.storage else {
        return Err(Error::ContextMismatch { what });
    };
    from.order(t, false)?;
    cuda_interop::copy_tensor_to_buffer(&from.tensor, dst, &t.inner, cuda)?;
    Ok(out)
}
