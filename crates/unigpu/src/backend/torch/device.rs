//! Opening a GPU through torch.

use unigpu_cuda_safe::CudaDevice;
use unigpu_torch_bridge as bridge;

use crate::{Backend, Error, Result};

/// One CUDA device used through torch, plus the CUDA driver's view of the
/// same device (same primary context).
#[derive(Debug)]
pub(crate) struct TorchDevice {
    pub(crate) ordinal: usize,
    pub(crate) cuda: CudaDevice,
}

/// CUDA devices torch can use, or why none.
pub(crate) fn device_count() -> Result<usize> {
    let status = bridge::cuda_status()?;
    if !status.is_empty() {
        return Err(Error::BackendUnavailable {
            backend: Backend::Torch,
            reason: status,
        });
    }
    Ok(usize::try_from(bridge::cuda_device_count()?).unwrap_or(0))
}

pub(crate) fn open(ordinal: usize) -> Result<TorchDevice> {
    let available = device_count()?;
    if ordinal >= available {
        return Err(Error::InvalidDevice {
            backend: Backend::Torch,
            asked: ordinal,
            available,
        });
    }
    let cuda = CudaDevice::open(ordinal).map_err(|e| Error::BackendUnavailable {
        backend: Backend::Torch,
        reason: format!(
            "torch sees cuda:{ordinal}, but the CUDA driver API beside it does not: {e}"
        ),
    })?;
    Ok(TorchDevice { ordinal, cuda })
}
