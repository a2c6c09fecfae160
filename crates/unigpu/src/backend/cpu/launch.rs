//! Kernel launches on the CPU backend: the kernel's CPU implementation
//! runs as a job on the stream's worker, ordered against the other uses of
//! its array arguments.

use std::any::Any;
use std::sync::Arc;

use super::args::{CpuArgs, CpuValue};
use super::{CpuBuffer, CpuStream, Tracker, panic_message, submit};
use crate::backend::Backend;
use crate::backend::code::KernelRef;
use crate::backend::contract::LaunchArg;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::grid::Grid;

/// An array as a CPU launch argument.
pub(crate) struct CpuArg {
    data: Arc<dyn Any + Send + Sync>,
    uses: Tracker,
    dtype: DType,
    writable: bool,
}

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

pub(crate) fn launch(
    stream: &CpuStream,
    kernel: KernelRef<'_>,
    grid: Grid,
    args: Vec<LaunchArg<'_, super::Cpu>>,
) -> Result<()> {
    let name = kernel.name;
    let f = kernel.cpu().cloned().ok_or_else(|| Error::Unsupported {
        backend: Backend::Cpu,
        what: format!(
            "kernel `{name}` has no CPU implementation; attach one with Kernel::with_cpu"
        ),
    })?;
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
    let kernel_name: Arc<str> = name.into();
    let reads: Vec<_> = reads.iter().collect();
    let writes: Vec<_> = writes.iter().collect();
    submit(stream, &reads, &writes, move || {
        let args = CpuArgs { values, grid };
        // Caught here, not by the worker, so the error names the kernel.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args)))
            .unwrap_or_else(|p| {
                Err(Error::StreamWork {
                    message: panic_message(p.as_ref()),
                })
            })
            .map_err(|e| e.for_kernel(&kernel_name))
    })
    .map(drop)
}
