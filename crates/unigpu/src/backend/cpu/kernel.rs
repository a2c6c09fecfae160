//! Kernels on the CPU backend (`KernelApi`): nothing to compile, each
//! kernel runs its CPU implementation as a job of the stream.

use std::sync::Arc;

use super::args::{CpuArg, CpuArgs, CpuValue};
use super::{Cpu, CpuBuffer, panic_message, submit_replayable};
use crate::backend::code::{KernelRef, ModuleCode, Program};
use crate::backend::contract::LaunchArg;
use crate::backend::{Backend, KernelApi};
use crate::kernel::options::{CompileOptions, ImageFormat, Origin};
use crate::kernel::signature::KernelDecl;
use crate::{Element, Error, Result};
use unigpu_core::Grid;

/// `arg` and `arg_mut`: a CPU buffer as a launch argument.
impl CpuArg {
    pub(crate) fn new<T: Element>(buffer: &CpuBuffer<T>, writable: bool) -> CpuArg {
        CpuArg {
            data: Arc::new(buffer.data.clone()),
            uses: buffer.uses.clone(),
            dtype: T::DTYPE,
            writable,
        }
    }
}

impl KernelApi for Cpu {
    /// Nothing to compile: kernels run their CPU implementation here.
    fn compile(_: &Self::Device, _: &str, _: &CompileOptions, _: &[KernelDecl]) -> Result<Program> {
        Ok(Program {
            origin: Origin::NotCompiled,
            log: String::new(),
            code: ModuleCode::Host,
        })
    }

    fn load_image(_: &Self::Device, format: ImageFormat, _: &[u8]) -> Result<Program> {
        Err(Error::Unsupported {
            backend: Backend::Cpu,
            what: format!(
                "loading {format} code: a CUDA image cannot run on the host; give the kernel a CPU implementation (Kernel::cpu_only, or Kernel::with_cpu on a kernel compiled from source)"
            ),
        })
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        CpuArg::new(buffer, false)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        CpuArg::new(buffer, true)
    }

    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let name = kernel.name;
        let f = kernel.cpu().cloned().ok_or_else(|| Error::Unsupported {
            backend: Backend::Cpu,
            what: format!(
                "kernel `{name}` has no CPU implementation; attach one with Kernel::with_cpu"
            ),
        })?;
        let args = args.collect::<Result<Vec<_>>>()?;
        let mut values = Vec::with_capacity(args.len());
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        for a in args {
            match a {
                LaunchArg::Scalar(s) => values.push(CpuValue::Scalar(s)),
                LaunchArg::Buffer(a) => {
                    if a.writable {
                        writes.push(a.uses)
                    } else {
                        reads.push(a.uses)
                    }
                    values.push(CpuValue::Array {
                        data: a.data,
                        dtype: a.dtype,
                        writable: a.writable,
                    });
                }
            }
        }
        if let Some((i, j)) = super::args::written_alias(&values) {
            return Err(Error::Unsupported {
                backend: Backend::Cpu,
                what: format!(
                    "kernel `{name}`: argument {i}, written, shares its memory with argument {j} \
                     (an array and its own DLPack export imported again); pass one of the two, \
                     or copy one first"
                ),
            });
        }
        let kernel_name: Arc<str> = name.into();
        let reads: Vec<_> = reads.iter().collect();
        let writes: Vec<_> = writes.iter().collect();
        submit_replayable(stream, &reads, &writes, move || {
            let args = CpuArgs {
                values: values.clone(),
                grid,
            };
            // Caught here, not by the worker, so the error names the kernel.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args)))
                .unwrap_or_else(|p| {
                    Err(Error::StreamWork {
                        message: panic_message(p.as_ref()),
                    })
                })
                .map_err(|e| e.for_kernel(&kernel_name))
        })
    }
}
