//! What a device is: name, capability, memory.

use crate::backend::cpu::memory;
use crate::{Backend, Result};

/// Free and total memory of a device, in bytes. For the CPU backend this is
/// system RAM (available and total).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    pub free: usize,
    pub total: usize,
}

/// One device as `unigpu info` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub backend: Backend,
    pub ordinal: usize,
    pub name: String,
    /// (major, minor) for CUDA devices; `None` for the CPU.
    pub compute_capability: Option<(i32, i32)>,
    pub memory: MemoryInfo,
}

/// Every device `backend` can use on this machine. A backend that cannot
/// run here is an error that says why.
pub fn list_devices(backend: Backend) -> Result<Vec<DeviceInfo>> {
    match backend {
        Backend::Cpu => Ok(vec![cpu_device_info()]),
        Backend::Cuda => {
            let count = unigpu_cuda_safe::device_count()?;
            (0..count)
                .map(|ordinal| cuda_device_info(&unigpu_cuda_safe::CudaDevice::open(ordinal)?))
                .collect()
        }
        #[cfg(feature = "torch")]
        Backend::Torch => (0..crate::backend::torch::device_count()?)
            .map(|ordinal| {
                let d = crate::backend::torch::open(ordinal)?;
                Ok(DeviceInfo {
                    backend,
                    ..cuda_device_info(&d.cuda).map_err(|e| e.on_backend(backend))?
                })
            })
            .collect(),
        #[cfg(not(feature = "torch"))]
        Backend::Torch => Err(crate::Error::BackendUnavailable {
            backend,
            reason: crate::context::TORCH_UNAVAILABLE.into(),
        }),
    }
}

pub(crate) fn cpu_device_info() -> DeviceInfo {
    let (free, total) = memory::memory_info();
    DeviceInfo {
        backend: Backend::Cpu,
        ordinal: 0,
        name: memory::cpu_name(),
        compute_capability: None,
        memory: MemoryInfo { free, total },
    }
}

pub(crate) fn cuda_device_info(device: &unigpu_cuda_safe::CudaDevice) -> Result<DeviceInfo> {
    let props = device.properties()?;
    let (free, total) = device.memory_info()?;
    Ok(DeviceInfo {
        backend: Backend::Cuda,
        ordinal: props.ordinal,
        name: props.name,
        compute_capability: Some(props.compute_capability),
        memory: MemoryInfo { free, total },
    })
}
