//! DLPack on the torch backend: arrays are CUDA tensors, shared through
//! the bridge's `Tensor::to_managed` / `from_managed`.

use std::sync::Arc;

use unigpu_core::dlpack::{ManagedTensor, ffi};
use unigpu_cuda_safe::CudaEventHandle;
use unigpu_torch_bridge as bridge;

use super::buffer::Shared;
use super::{TorchBuffer, TorchStream};
use crate::dlpack::sync::DlpackSync;
use crate::element::Element;
use crate::error::{Error, Result};

pub(crate) fn export<T: Element>(
    s: &Arc<TorchStream>,
    b: &mut TorchBuffer,
    sync: DlpackSync<'_>,
) -> Result<ManagedTensor> {
    {
        let _current = s.enter()?;
        // The consumer may write: order after every earlier use.
        b.order(s, true)?;
    }
    // The export carries the buffer's use record, so that an import of it
    // in this process (`import` below) is ordered with this buffer.
    let tensor = b.tensor.to_managed_with::<T, _>(b.shared())?;
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

pub(crate) fn import<T: Element>(
    s: &Arc<TorchStream>,
    tensor: ManagedTensor,
) -> Result<TorchBuffer> {
    let view = tensor.view()?;
    let ordinal = s.foreign.device().ordinal();
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
    // A buffer's own export coming back (same device and dtype, checked
    // above): a second reference to the same tensor with the buffer's use
    // record, so that a write through either, then a use through the other
    // on any stream, is ordered as on one buffer. The tensor is dropped
    // here (its deleter drops only the export's own reference).
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
    Ok(TorchBuffer::from_tensor(t, view.len, s))
}
