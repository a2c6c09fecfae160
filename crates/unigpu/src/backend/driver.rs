//! What the cuda and torch backends share: the CUDA driver's view of a
//! device (torch's devices are CUDA devices, opened beside it).

use unigpu_cuda_safe::CudaDevice;

use super::Backend;
use crate::{DeviceInfo, Error, MemoryInfo, Result};

/// Name, capability and memory of `device`, said of `backend`.
pub(crate) fn device_info(device: &CudaDevice, backend: Backend) -> Result<DeviceInfo> {
    let on = |e| Error::from(e).on_backend(backend);
    let props = device.properties().map_err(on)?;
    let (free, total) = device.memory_info().map_err(on)?;
    Ok(DeviceInfo {
        backend,
        ordinal: props.ordinal,
        name: props.name,
        compute_capability: Some(props.compute_capability),
        memory: MemoryInfo { free, total },
    })
}

/// Free and total memory of `device`, said of `backend`.
pub(crate) fn memory_info(device: &CudaDevice, backend: Backend) -> Result<MemoryInfo> {
    let (free, total) = device
        .memory_info()
        .map_err(|e| Error::from(e).on_backend(backend))?;
    Ok(MemoryInfo { free, total })
}
