//! A CUDA device as this backend holds it, with what it keeps per device
//! (the built-in ops' kernels, the cuBLAS handle), and a stream that knows
//! its device; and the backend's `DeviceApi`, on them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use unigpu_cuda_safe::{BlasHandle, CudaDevice, CudaFunctionHandle, CudaStreamHandle};

use super::{Cuda, ops_src};
use crate::backend::nvrtc::{self, LoadedModule};
use crate::backend::{Backend, DeviceApi, cuda_device_info};
use crate::device::{DeviceInfo, MemoryInfo, MemoryStats};
use crate::error::{Error, Result};
use crate::kernel::options::CompileOptions;
use crate::kernel::signature::parse_kernels;
use crate::lock::lock;

/// One CUDA device, opened.
#[derive(Debug)]
pub(crate) struct Device {
    pub(crate) driver: CudaDevice,
    /// The built-in ops' module, compiled on the first op.
    builtin: Mutex<Option<LoadedModule>>,
    /// Kernels of the built-in ops, looked up once each.
    functions: Mutex<HashMap<String, CudaFunctionHandle>>,
    /// Created on the first matmul (`cublasCreate` takes milliseconds).
    blas: Mutex<Option<Arc<BlasHandle>>>,
}

impl Device {
    /// The built-in kernel `name` (from `ops_src`).
    pub(crate) fn builtin(&self, name: &str) -> Result<CudaFunctionHandle> {
        if let Some(f) = lock(&self.functions).get(name) {
            return Ok(f.clone());
        }
        let mut module = lock(&self.builtin);
        if module.is_none() {
            let decls = parse_kernels(ops_src::SOURCE);
            let program = nvrtc::compile(
                &self.driver,
                ops_src::SOURCE,
                &CompileOptions::default(),
                &decls,
            )?;
            *module = Some(program.module);
        }
        let found = match module.as_ref() {
            Some(m) => m.function(name)?,
            None => None,
        };
        let f = found.ok_or_else(|| Error::KernelArgs {
            kernel: name.to_string(),
            message: "no such built-in kernel".into(),
        })?;
        lock(&self.functions).insert(name.to_string(), f.clone());
        Ok(f)
    }

    /// The device's cuBLAS handle, created with `stream` on first use.
    pub(crate) fn blas(&self, stream: &CudaStreamHandle) -> Result<Arc<BlasHandle>> {
        let mut slot = lock(&self.blas);
        if let Some(b) = slot.as_ref() {
            return Ok(b.clone());
        }
        let handle = Arc::new(BlasHandle::new(stream)?);
        *slot = Some(handle.clone());
        Ok(handle)
    }
}

/// A non-blocking CUDA stream of one device.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub(crate) handle: CudaStreamHandle,
    pub(crate) device: Arc<Device>,
}

impl DeviceApi for Cuda {
    fn device_count() -> Result<usize> {
        Ok(unigpu_cuda_safe::device_count()?)
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        Ok(Arc::new(Device {
            driver: CudaDevice::open(ordinal)?,
            builtin: Mutex::default(),
            functions: Mutex::default(),
            blas: Mutex::default(),
        }))
    }

    fn hardware() -> Option<String> {
        cuda_device_info::cuda_devices()
    }

    fn info(device: &Self::Device) -> Result<DeviceInfo> {
        cuda_device_info::device_info(&device.driver, Backend::Cuda)
    }

    fn memory_info(device: &Self::Device) -> Result<MemoryInfo> {
        cuda_device_info::memory_info(&device.driver, Backend::Cuda)
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        a.driver == b.driver
    }

    fn memory_stats(device: &Self::Device) -> Result<MemoryStats> {
        let s = device.driver.memory_stats();
        Ok(MemoryStats {
            reserved: s.reserved,
            in_use: s.in_use,
            cached: s.cached(),
            peak_in_use: s.peak_in_use,
            segments: s.segments,
            hits: s.hits,
            misses: s.misses,
            oom_retries: s.oom_retries,
        })
    }

    fn empty_cache(device: &Self::Device) -> Result<usize> {
        Ok(device.driver.empty_cache()?)
    }

    fn synchronize(device: &Self::Device) -> Result<()> {
        Ok(device.driver.synchronize()?)
    }

    /// A created non-blocking stream, not the legacy NULL stream, so work
    /// on other streams really overlaps with it (also the default stream,
    /// the contract's default).
    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(Stream {
            handle: CudaStreamHandle::new(&device.driver)?,
            device: device.clone(),
        })
    }

    fn can_access_peer(from: usize, to: usize) -> Result<bool> {
        Ok(unigpu_cuda_safe::can_access_peer(from, to)?)
    }
}
