//! The CUDA backend's kernels (`KernelApi`): CUDA C++ through NVRTC,
//! precompiled images, launches through `unigpu-cuda-safe`.

use smallvec::SmallVec;
use unigpu_core::Grid;
use unigpu_cuda_safe::KernelParam;

use super::Cuda;
use crate::backend::code::{KernelRef, Program};
use crate::backend::contract::LaunchArg;
use crate::backend::{Backend, KernelApi, nvrtc};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat};
use crate::kernel::signature::KernelDecl;

impl KernelApi for Cuda {
    fn compile(
        device: &Self::Device,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program> {
        Ok(nvrtc::compile(&device.driver, source, options, decls)?.into())
    }

    fn load_image(device: &Self::Device, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        Ok(nvrtc::load_image(&device.driver, format, bytes)?.into())
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        KernelParam::Buffer(buffer)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        KernelParam::BufferMut(buffer)
    }

    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let f = kernel.cuda().ok_or_else(|| Error::Unsupported {
            backend: Backend::Cuda,
            what: format!(
                "kernel `{}` has no CUDA code (it was made with Kernel::cpu_only)",
                kernel.name
            ),
        })?;
        let mut params = args
            .map(|a| {
                a.map(|a| match a {
                    LaunchArg::Scalar(s) => KernelParam::from(s),
                    LaunchArg::Buffer(p) => p,
                })
            })
            .collect::<Result<SmallVec<[KernelParam<'_>; 16]>>>()?;
        unigpu_cuda_safe::launch(
            &stream.handle,
            f,
            unigpu_cuda_safe::launch_dims(grid),
            &mut params,
        )
        .map_err(|e| Error::from(e).for_kernel(kernel.name))
    }
}
