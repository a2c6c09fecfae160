//! `ctx.launch` / `stream.launch`: check the arguments against the
//! kernel's declaration, then enqueue on CUDA or run the CPU implementation
//! on the stream's worker.

use std::sync::Arc;

use unigpu_cuda_safe::KernelParam;

use super::args::{Arg, CpuArgs, CpuValue};
use super::{Grid, Kernel, KernelArgs, ParamKind};
use crate::stream::{Stream, StreamImpl};
use crate::{Backend, Context, Error, Result};

impl Context {
    /// Launches `kernel` on the default stream.
    pub fn launch<'a>(&self, kernel: &Kernel, grid: Grid, args: impl KernelArgs<'a>) -> Result<()> {
        self.default_stream().launch(kernel, grid, args)
    }
}

impl Stream {
    /// Launches `kernel` on this stream. Arguments are checked against the
    /// kernel's declaration when it could be read. Faults inside the
    /// kernel (an illegal address) are reported by the next sync, naming
    /// the last kernel launched on the stream.
    pub fn launch<'a>(&self, kernel: &Kernel, grid: Grid, args: impl KernelArgs<'a>) -> Result<()> {
        let mut args = args.into_args();
        check_args(kernel, &args)?;
        let name = kernel.name();
        match &self.imp {
            StreamImpl::Cuda(s) => {
                let func = cuda_function(kernel)?;
                let mut params = args
                    .iter_mut()
                    .map(|a| match a {
                        Arg::Scalar(s) => Ok(s.to_param()),
                        Arg::Array(a) => a
                            .cuda_param()
                            .ok_or(Error::ContextMismatch { what: "launch" }),
                        Arg::ArrayMut(a) => a
                            .cuda_param_mut()
                            .ok_or(Error::ContextMismatch { what: "launch" }),
                    })
                    .collect::<Result<Vec<KernelParam<'_>>>>()?;
                self.note_launch(kernel.inner.id);
                unigpu_cuda_safe::launch(s, func, grid.to_dims(), &mut params)
                    .map_err(|e| name_kernel(e.into(), name))
            }
            // A torch array goes in as its device address, after its
            // earlier uses on other c10 streams (the buffer's bookkeeping).
            #[cfg(feature = "torch")]
            StreamImpl::Torch(s) => {
                let func = cuda_function(kernel)?;
                let mut params = Vec::with_capacity(args.len());
                for a in &args {
                    let (array, write) = match a {
                        Arg::Scalar(v) => {
                            params.push(v.to_param());
                            continue;
                        }
                        Arg::Array(a) => (a.torch_buffer(), false),
                        Arg::ArrayMut(a) => (a.torch_buffer(), true),
                    };
                    let buffer = array.ok_or(Error::ContextMismatch { what: "launch" })?;
                    buffer.order(s, write)?;
                    params.push(KernelParam::U64(buffer.tensor.data_address()?));
                }
                self.note_launch(kernel.inner.id);
                s.foreign
                    .launch(func, grid.to_dims(), &params)
                    .map_err(|e| name_kernel(Error::from(e).on_backend(Backend::Torch), name))
            }
            StreamImpl::Cpu(s) => {
                let f = kernel.inner.cpu.clone().ok_or_else(|| Error::Unsupported {
                    backend: Backend::Cpu,
                    what: format!(
                        "kernel `{name}` has no CPU implementation; attach one with Kernel::with_cpu"
                    ),
                })?;
                let mut values = Vec::with_capacity(args.len());
                let (mut reads, mut writes) = (Vec::new(), Vec::new());
                for a in &args {
                    let (array, writable) = match a {
                        Arg::Scalar(s) => {
                            values.push(CpuValue::Scalar(*s));
                            continue;
                        }
                        Arg::Array(a) => (&**a, false),
                        Arg::ArrayMut(a) => (&**a, true),
                    };
                    let (data, tracker) = array
                        .cpu_slot()
                        .ok_or(Error::ContextMismatch { what: "launch" })?;
                    if writable {
                        writes.push(tracker)
                    } else {
                        reads.push(tracker)
                    }
                    values.push(CpuValue::Array {
                        data,
                        dtype: array.dtype(),
                        writable,
                    });
                }
                let kernel_name: Arc<str> = name.into();
                let reads: Vec<_> = reads.iter().collect();
                let writes: Vec<_> = writes.iter().collect();
                crate::backend::cpu::submit(s, &reads, &writes, move || {
                    let args = CpuArgs { values, grid };
                    // Caught here, not by the worker, so the error names the kernel.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args)))
                        .unwrap_or_else(|p| {
                            Err(Error::StreamWork {
                                message: crate::backend::cpu::panic_message(p.as_ref()),
                            })
                        })
                        .map_err(|e| name_kernel(e, &kernel_name))
                })
                .map(drop)
            }
        }
    }
}

fn check_args(kernel: &Kernel, args: &[Arg<'_>]) -> Result<()> {
    let name = kernel.name();
    let bad = |message: String| Error::KernelArgs {
        kernel: name.to_string(),
        message,
    };
    let Some(params) = kernel.params() else {
        return Ok(());
    };
    if params.len() != args.len() {
        return Err(bad(format!(
            "declared with {} parameters ({}), launched with {} arguments",
            params.len(),
            params
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            args.len()
        )));
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let ok = match (p, a) {
            (ParamKind::Scalar(d), Arg::Scalar(s)) => *d == s.dtype(),
            (ParamKind::Pointer { dtype, .. }, Arg::Array(a)) => {
                dtype.is_none_or(|d| d == a.dtype())
            }
            (ParamKind::Pointer { dtype, .. }, Arg::ArrayMut(a)) => {
                dtype.is_none_or(|d| d == a.dtype())
            }
            _ => false,
        };
        if !ok {
            let given = match a {
                Arg::Scalar(s) => format!("a {} value", s.dtype()),
                Arg::Array(a) => format!("&GpuArray<{}>", a.dtype()),
                Arg::ArrayMut(a) => format!("&mut GpuArray<{}>", a.dtype()),
            };
            return Err(bad(format!(
                "parameter {i} is declared `{p}` but {given} was passed"
            )));
        }
    }
    Ok(())
}

/// Puts the kernel's name on errors that do not already carry it.
fn name_kernel(e: Error, name: &str) -> Error {
    match e {
        Error::KernelArgs { kernel, message } if kernel.starts_with('(') => Error::KernelArgs {
            kernel: name.to_string(),
            message,
        },
        e => e.in_kernel(name),
    }
}

/// The kernel's CUDA function, or why it has none.
fn cuda_function(kernel: &Kernel) -> Result<&unigpu_cuda_safe::CudaFunctionHandle> {
    kernel
        .inner
        .cuda
        .as_ref()
        .ok_or_else(|| Error::Unsupported {
            backend: Backend::Cuda,
            what: format!(
                "kernel `{}` has no CUDA code (it was made with Kernel::cpu_only)",
                kernel.name()
            ),
        })
}
