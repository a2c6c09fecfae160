//! A CUDA device as this backend holds it, with what it keeps per device
//! (the built-in ops' kernels, the cuBLAS handle), and a stream that knows
//! its device.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use unigpu_cuda_safe::{BlasHandle, CudaDevice, CudaFunctionHandle, CudaStreamHandle};

use super::ops_src;
use crate::backend::nvrtc::{self, LoadedModule};
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
    pub(crate) fn open(ordinal: usize) -> Result<Arc<Device>> {
        Ok(Arc::new(Device {
            driver: CudaDevice::open(ordinal)?,
            builtin: Mutex::default(),
            functions: Mutex::default(),
            blas: Mutex::default(),
        }))
    }

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
