//! Precompiled CUDA code (PTX text, a CUBIN, a fatbin) to a module loaded
//! on one device, its kernels found by their symbols as they are.

use unigpu_cuda_safe::{CudaDevice, CudaModuleHandle};

use super::compile::{CudaProgram, LoadedModule};
use crate::error::Result;
use crate::kernel::options::{ImageFormat, Origin};

/// Loads `bytes`, an image of `format`, on `device`. The safe layer checks
/// the bytes first and turns the driver's refusal into `Error::Image`.
pub(crate) fn load_image(
    device: &CudaDevice,
    format: ImageFormat,
    bytes: &[u8],
) -> Result<CudaProgram> {
    let module = CudaModuleHandle::load_image(device, format, bytes)?;
    Ok(CudaProgram {
        module: LoadedModule::symbols_as_named(module),
        origin: Origin::Precompiled(format),
        log: String::new(),
    })
}
