//! Opening a GPU through torch: the torch backend's `DeviceApi`.

use std::sync::Arc;

use unigpu_cuda_safe::CudaDevice;
use unigpu_torch_bridge as bridge;

use super::{Torch, TorchStream, driver_error};
use crate::backend::{DeviceApi, cuda_device_info};
use crate::device::{DeviceInfo, MemoryInfo, MemoryStats};
use crate::{Backend, Error, Result};

/// One CUDA device used through torch, plus the CUDA driver's view of the
/// same device (same primary context).
#[derive(Debug)]
pub(crate) struct TorchDevice {
    pub(crate) ordinal: usize,
    pub(crate) cuda: CudaDevice,
}

impl DeviceApi for Torch {
    /// CUDA devices torch can use, or why none.
    fn device_count() -> Result<usize> {
        let status = bridge::cuda_status()?;
        if !status.is_empty() {
            return Err(Error::BackendUnavailable {
                backend: Backend::Torch,
                reason: status,
            });
        }
        Ok(usize::try_from(bridge::cuda_device_count()?).unwrap_or(0))
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        let available = Self::device_count()?;
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

    /// This build has torch; with a CUDA device, torch should open.
    fn hardware() -> Option<String> {
        cuda_device_info::cuda_devices().map(|d| format!("a torch build and {d}"))
    }

    fn info(device: &Self::Device) -> Result<DeviceInfo> {
        cuda_device_info::device_info(&device.cuda, Backend::Torch)
    }

    /// The driver's figure: memory torch's caching allocator holds counts
    /// as used.
    fn memory_info(device: &Self::Device) -> Result<MemoryInfo> {
        cuda_device_info::memory_info(&device.cuda, Backend::Torch)
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        a.ordinal == b.ordinal
    }

    /// torch's own caching allocator holds this backend's memory; its
    /// counters are `torch.cuda.memory_stats()`, which the bridge does not
    /// expose yet.
    fn memory_stats(_: &Self::Device) -> Result<MemoryStats> {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what: "memory_stats: arrays live in torch's caching allocator; read \
                   torch.cuda.memory_stats() (the bridge does not expose it yet)"
                .into(),
        })
    }

    fn empty_cache(_: &Self::Device) -> Result<usize> {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what: "empty_cache: arrays live in torch's caching allocator; call \
                   torch.cuda.empty_cache() (the bridge does not expose it yet)"
                .into(),
        })
    }

    /// torch's work and ours share the primary context, so one
    /// context-wide sync waits for every stream.
    fn synchronize(device: &Self::Device) -> Result<()> {
        device.cuda.synchronize().map_err(driver_error)
    }

    /// The stream torch code would use now (usually c10's default stream),
    /// so unigpu's work is ordered with the caller's torch work.
    fn default_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(Arc::new(TorchStream::current(&device.cuda)?))
    }

    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(Arc::new(TorchStream::from_pool(&device.cuda)?))
    }
}
