//! `ctx.launch` / `stream.launch`: check the arguments against the
//! kernel's declaration, then hand the launch to the stream's backend.

use super::args::Arg;
use super::{Grid, Kernel, KernelArgs, ParamKind};
use crate::backend::{ArgImpl, Backend};
use crate::kernel::Scalar;
use crate::stream::Stream;
use crate::{Context, Error, Result};

use smallvec::SmallVec;

/// Arguments a launch lists on the stack; more spill to the heap.
const INLINE_ARGS: usize = 16;

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
        if let Some(size) = kernel.inner.workgroup {
            super::generated::check_block(kernel.name(), &grid, size)?;
        }
        // A generated kernel's fault word and code follow the lengths, on
        // every backend (the CPU form records its faults there too);
        // declared first, since the argument lists below borrow it.
        let mut fault = match kernel.inner.fault_code {
            Some(code) => Some((self.faults.hold()?, code)),
            None => None,
        };
        // A generated kernel's CUDA and WGSL forms read their arrays'
        // lengths from extra u32 parameters after the declared ones (the
        // CPU form has the slices; a vulkan buffer is padded, so its
        // arrayLength is not the array's).
        let mut lengths: SmallVec<[ArgImpl<'_>; INLINE_ARGS]> = SmallVec::new();
        if kernel.inner.hidden_lengths {
            for a in &args {
                let n = match a {
                    Arg::Array(a) => a.len(),
                    Arg::ArrayMut(a) => a.len(),
                    Arg::Scalar(_) => continue,
                };
                let n = u32::try_from(n).map_err(|_| Error::KernelArgs {
                    kernel: kernel.name().to_string(),
                    message: format!(
                        "an array of {n} elements: kernels made by #[unigpu::kernel] index arrays with 32 bits"
                    ),
                })?;
                // Every backend named, so that a new one must say here
                // whether its generated kernels take the lengths.
                let takes_lengths = match self.imp.backend() {
                    Backend::Cuda | Backend::Torch | Backend::Vulkan => true,
                    Backend::Cpu => false,
                };
                if takes_lengths {
                    lengths.push(ArgImpl::Scalar(Scalar::new(n)));
                }
            }
        }
        let mut args: SmallVec<[ArgImpl<'_>; INLINE_ARGS]> = args
            .iter_mut()
            .map(|a| match a {
                Arg::Scalar(s) => ArgImpl::Scalar(*s),
                Arg::Array(a) => a.arg().0,
                Arg::ArrayMut(a) => a.arg_mut().0,
            })
            .collect();
        args.extend(lengths);
        if let Some((word, code)) = &mut fault {
            let word = word.arg().ok_or_else(|| Error::StreamWork {
                message: "the stream's fault word was not made".into(),
            })?;
            args.push(word);
            args.push(ArgImpl::Scalar(Scalar::new(*code)));
        }
        self.note_launch(kernel.inner.id);
        self.imp.launch(kernel.code_ref(), grid, args.into_iter())
    }
}

fn check_args(kernel: &Kernel, args: &[Arg<'_>]) -> Result<()> {
    let name = kernel.name();
    let bad = |message: String| Error::KernelArgs {
        kernel: name.to_string(),
        message,
    };
    for (i, a) in args.iter().enumerate() {
        let whole = match a {
            Arg::Array(a) => a.is_whole(),
            Arg::ArrayMut(a) => a.is_whole(),
            Arg::Scalar(_) => true,
        };
        if !whole {
            return Err(bad(format!(
                "argument {i} is a strided array (a DLPack import with strides): kernels index \
                 whole contiguous arrays; pass a contiguous copy (to_contiguous())"
            )));
        }
    }
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
        // A kernel may write through a pointer that is not `const`, and a
        // shared borrow is tracked as a read: other streams' reads of the
        // array would not wait for the write. Only where the declaration
        // names the element type (CUDA C++, a `declare`): PTX says neither
        // the type nor whether the pointee is const.
        if let (
            ParamKind::Pointer {
                dtype: Some(_),
                writable: true,
            },
            Arg::Array(a),
        ) = (p, a)
        {
            return Err(bad(format!(
                "parameter {i} is declared `{p}`, which the kernel may write, but the \
                 GpuArray<{}> was passed read-only (&, or ug_arg_in in C): pass it as &mut \
                 (ug_arg_out), or declare the parameter const",
                a.dtype()
            )));
        }
        let ok = match (p, a) {
            (ParamKind::Scalar(d), Arg::Scalar(s)) => *d == s.dtype(),
            (ParamKind::Pointer { dtype, .. }, Arg::Array(a)) => {
                dtype.is_none_or(|d| d == a.dtype())
            }
            (ParamKind::Pointer { dtype, .. }, Arg::ArrayMut(a)) => {
                dtype.is_none_or(|d| d == a.dtype())
            }
            // Widths and classes only: what precompiled code says.
            (ParamKind::Integer { bytes }, Arg::Scalar(s)) => {
                s.dtype().is_integer() && s.dtype().size_bytes() == *bytes
            }
            (ParamKind::Bytes { bytes }, Arg::Scalar(s)) => s.dtype().size_bytes() == *bytes,
            // An array goes in as its 8-byte device address.
            (
                ParamKind::Integer { bytes: 8 } | ParamKind::Bytes { bytes: 8 },
                Arg::Array(_) | Arg::ArrayMut(_),
            ) => true,
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
