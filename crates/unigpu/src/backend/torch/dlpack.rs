//! DLPack on the torch backend: arrays are CUDA tensors, shared through
//! the bridge's `Tensor::to_managed` / `from_managed`.

use unigpu_cuda_safe::CudaEventHandle;
use unigpu_cuda_safe::dlpack::ffi;
use unigpu_torch_bridge as bridge;

use super::TorchBuffer;
use super::ops::{buf, stream_of};
use crate::array::Storage;
use crate::dlpack::{DlpackSync, DlpackTensor};
use crate::{Context, Element, Error, GpuArray, Result};

pub(crate) fn to_dlpack<T: Element>(
    a: &mut GpuArray<T>,
    sync: DlpackSync<'_>,
) -> Result<DlpackTensor> {
    let what = "GpuArray::to_dlpack";
    let s = stream_of(a.ctx.default_stream(), what)?;
    let b = buf(a, what)?;
    {
        let _current = s.enter()?;
        // The consumer may write: order after every earlier use.
        b.order(s, true)?;
    }
    let tensor = b.tensor.to_managed::<T>()?;
    match sync {
        DlpackSync::Host => s.inner.synchronize()?,
        DlpackSync::Stream(consumer) => {
            let ready = CudaEventHandle::new(consumer.device())?;
            s.foreign.record(&ready)?;
            consumer.wait(&ready)?;
        }
        DlpackSync::Unordered => {}
    }
    Ok(tensor)
}

pub(crate) fn from_dlpack<T: Element>(ctx: &Context, tensor: DlpackTensor) -> Result<GpuArray<T>> {
    let what = "Context::from_dlpack";
    let view = tensor.view()?;
    let ours = (ffi::kDLCUDA, ctx.device_id() as i32);
    if (view.device.device_type, view.device.device_id) != ours {
        return Err(Error::Dlpack {
            message: format!(
                "the tensor is on DLPack device ({}, {}), this torch context is CUDA device {}",
                view.device.device_type,
                view.device.device_id,
                ctx.device_id()
            ),
        });
    }
    view.expect_dtype::<T>()?;
    if tensor.is_read_only() {
        return Err(Error::Dlpack {
            message: "the tensor is read-only, and unigpu arrays are writable".into(),
        });
    }
    let s = stream_of(ctx.default_stream(), what)?;
    let t = bridge::Tensor::from_managed(tensor)?;
    Ok(GpuArray {
        ctx: ctx.clone(),
        storage: Storage::Torch(TorchBuffer::from_tensor(t, view.len, s)),
    })
}
