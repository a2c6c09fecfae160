//! Moves between backends that share a GPU without going through the host:
//! the one place that names two backends' buffers. Today that is the cuda
//! and torch backends on the same device: a device-to-device copy ordered
//! after the source's pending writes and before later work on both sides.

use std::sync::Arc;

use unigpu_cuda_safe::DeviceBuffer;
use unigpu_torch_bridge::cuda_interop;

use super::BufferApi;
use super::cuda::device::Stream as CudaStream;
use super::torch::{Torch, TorchBuffer, TorchStream};
use crate::element::Element;
use crate::error::Result;

/// A new torch buffer (for `torch`) holding a copy of the cuda buffer
/// `src` (ordered on `cuda`).
pub(crate) fn cuda_to_torch<T: Element>(
    src: &DeviceBuffer<T>,
    cuda: &CudaStream,
    torch: &Arc<TorchStream>,
) -> Result<TorchBuffer> {
    // Fresh from `torch`'s allocator, so `torch` is already its only user.
    let mut out = Torch::alloc::<T>(torch, src.len())?;
    cuda_interop::copy_buffer_to_tensor(src, out.tensor_mut(), &torch.inner, &cuda.handle)?;
    Ok(out)
}

/// A new cuda buffer (for `cuda`) holding a copy of the torch buffer `src`
/// (ordered on `torch`).
pub(crate) fn torch_to_cuda<T: Element>(
    src: &TorchBuffer,
    torch: &Arc<TorchStream>,
    cuda: &CudaStream,
) -> Result<DeviceBuffer<T>> {
    let mut out = DeviceBuffer::<T>::alloc(&cuda.handle, src.len())?;
    src.order(torch, false)?;
    cuda_interop::copy_tensor_to_buffer(&src.tensor, &mut out, &torch.inner, &cuda.handle)?;
    Ok(out)
}
