//! The torch backend's kernels (`KernelApi`): compiled and loaded as on
//! the cuda backend (torch shares the device's primary context), launched
//! on c10 streams.

use unigpu_core::Grid;
use unigpu_cuda_safe::KernelParam;

use super::{Torch, driver_error};
use crate::backend::code::{KernelRef, Program};
use crate::backend::contract::LaunchArg;
use crate::backend::{Backend, KernelApi, nvrtc};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat};
use crate::kernel::signature::KernelDecl;

impl KernelApi for Torch {
    /// torch shares the device's primary context with the driver API, so
    /// kernels compile and load as on the cuda backend.
    fn compile(
        device: &Self::Device,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program> {
        nvrtc::compile(&device.cuda, source, options, decls)
            .map(Into::into)
            .map_err(|e| e.on_backend(Backend::Torch))
    }

    /// As on the cuda backend: the module loads in the device's primary
    /// context, which torch shares.
    fn load_image(device: &Self::Device, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        nvrtc::load_image(&device.cuda, format, bytes)
            .map(Into::into)
            .map_err(|e| e.on_backend(Backend::Torch))
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        (buffer, false)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        (buffer, true)
    }

    /// A tensor goes in as its device address, after its earlier uses on
    /// other c10 streams (the buffer's bookkeeping).
    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let f = kernel.cuda().ok_or_else(|| Error::Unsupported {
            backend: Backend::Torch,
            what: format!(
                "kernel `{}` has no CUDA code (it was made with Kernel::cpu_only)",
                kernel.name
            ),
        })?;
        let args = args.collect::<Result<Vec<_>>>()?;
        let mut params = Vec::with_capacity(args.len());
        for a in args {
            match a {
                LaunchArg::Scalar(v) => params.push(KernelParam::from(v)),
                LaunchArg::Buffer((buffer, write)) => {
                    buffer.order(stream, write)?;
                    params.push(KernelParam::U64(buffer.tensor.data_address()?));
                }
            }
        }
        stream
            .foreign
            .launch(f, unigpu_cuda_safe::launch_dims(grid), &params)
            .map_err(|e| driver_error(e).for_kernel(kernel.name))
    }
}
