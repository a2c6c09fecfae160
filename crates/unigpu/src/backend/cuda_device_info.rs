//! The CUDA driver's view of a device (name, capability, memory), which
//! the cuda and torch backends share, being two ways to drive the same
//! CUDA devices (torch's devices are CUDA devices, opened beside it).
//! Not a backend: it names none.

use unigpu_cuda_safe::CudaDevice;

use super::Backend;
use crate::device::{DeviceInfo, MemoryInfo};
use crate::error::{Error, Result};

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
        details: Vec::new(),
    })
}

/// Free and total memory of `device`, said of `backend`.
pub(crate) fn memory_info(device: &CudaDevice, backend: Backend) -> Result<MemoryInfo> {
    let (free, total) = device
        .memory_info()
        .map_err(|e| Error::from(e).on_backend(backend))?;
    Ok(MemoryInfo { free, total })
}

/// The CUDA devices the driver counts, as [`Api::hardware`] describes
/// them: the cuda backend's hardware, and the torch backend's.
pub(crate) fn cuda_devices() -> Option<String> {
    let probe = unigpu_cuda_safe::probe();
    match probe.device_count {
        Ok(n) if n > 0 => Some(format!(
            "the CUDA driver loads and counts {n} device{}",
            if n == 1 { "" } else { "s" }
        )),
        _ => None,
    }
}
