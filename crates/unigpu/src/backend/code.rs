//! The forms kernel code takes, one variant per form: what a `Module`
//! holds once compiled and what a `Kernel` carries. A kernel carries every
//! form it has, and each backend runs the form it can (the cuda and torch
//! backends both run CUDA functions: they drive the same devices; the
//! vulkan backend runs a shader, WGSL or SPIR-V), so the same `launch` call
//! picks the code that fits the context.

use super::cpu::CpuKernelFn;
use super::cuda::code::{self as cuda, Function, Module};
use super::vulkan::ShaderKernel;
use crate::error::Result;
use crate::kernel::options::Origin;
use crate::kernel::signature::ParamKind;

/// A program compiled (or not) by one backend for one device.
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) origin: Origin,
    /// Compiler warnings.
    pub(crate) log: String,
    pub(crate) code: ModuleCode,
}

impl From<cuda::Program> for Program {
    fn from(p: cuda::Program) -> Program {
        let (origin, log, module) = cuda::parts(p);
        Program {
            origin,
            log,
            code: ModuleCode::Cuda(module),
        }
    }
}

/// What a compiled module holds.
#[derive(Debug)]
pub(crate) enum ModuleCode {
    /// Nothing was compiled (the CPU backend runs a kernel's host code).
    Host,
    /// A CUDA module loaded on a device.
    Cuda(Module),
}

impl ModuleCode {
    /// What the module holds for kernel `name`.
    pub(crate) fn kernel(&self, name: &str) -> Result<Lookup> {
        Ok(match self {
            ModuleCode::Host => Lookup::NoCode,
            ModuleCode::Cuda(m) => match cuda::function(m, name)? {
                Some(f) => Lookup::Found(KernelCode::Cuda(f)),
                None => Lookup::Missing,
            },
        })
    }
}

/// A kernel looked up in a module.
pub(crate) enum Lookup {
    Found(KernelCode),
    /// The module has code, but none for this kernel.
    Missing,
    /// The module holds no code (the kernel's host code runs instead).
    NoCode,
}

/// One form of a kernel's code.
#[derive(Clone)]
pub(crate) enum KernelCode {
    /// A CUDA function loaded in a device's primary context.
    Cuda(Function),
    /// A Rust (or, through the C API, C) implementation over host slices.
    Cpu(CpuKernelFn),
    /// A compute shader, WGSL or SPIR-V, read and checked.
    Shader(ShaderKernel),
}

impl KernelCode {
    /// The size in bytes of each of the kernel's parameters, where the
    /// code itself records them (a loaded CUDA function, through a driver
    /// that can list them); `None` where it does not.
    pub(crate) fn param_sizes(&self) -> Result<Option<Vec<usize>>> {
        match self {
            KernelCode::Cuda(f) => cuda::param_sizes(f),
            KernelCode::Cpu(_) | KernelCode::Shader(_) => Ok(None),
        }
    }

    /// The parameters the code itself declares (a shader's bindings);
    /// `None` where it does not.
    pub(crate) fn bound_params(&self) -> Option<Vec<ParamKind>> {
        match self {
            KernelCode::Shader(s) => s.params(),
            KernelCode::Cuda(_) | KernelCode::Cpu(_) => None,
        }
    }

    /// The form's name, for `Debug` and errors.
    pub(crate) fn form(&self) -> &'static str {
        match self {
            KernelCode::Cuda(_) => "cuda",
            KernelCode::Cpu(_) => "cpu",
            KernelCode::Shader(s) => s.form(),
        }
    }
}

/// A compute shader as a kernel is given it, for the backend that runs
/// shaders to read ([`Api::shader_kernel`](super::Api::shader_kernel)).
#[derive(Debug, Clone, Copy)]
pub(crate) enum ShaderSource<'a> {
    Wgsl(&'a str),
    /// A whole SPIR-V module, little-endian words.
    Spirv(&'a [u8]),
}

/// A kernel as a backend launches it: its name (for errors) and the code
/// it carries.
#[derive(Clone, Copy)]
pub(crate) struct KernelRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) code: &'a [KernelCode],
}

impl KernelRef<'_> {
    /// The kernel's CUDA function, if it has one (only the cuda and torch
    /// backends, built with the `cuda` feature, run one).
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda(&self) -> Option<&Function> {
        self.code.iter().find_map(|c| match c {
            KernelCode::Cuda(f) => Some(f),
            KernelCode::Cpu(_) | KernelCode::Shader(_) => None,
        })
    }

    /// The kernel's shader, if it has one.
    pub(crate) fn shader(&self) -> Option<&ShaderKernel> {
        self.code.iter().find_map(|c| match c {
            KernelCode::Shader(s) => Some(s),
            KernelCode::Cuda(_) | KernelCode::Cpu(_) => None,
        })
    }

    /// The kernel's CPU implementation, if it has one.
    pub(crate) fn cpu(&self) -> Option<&CpuKernelFn> {
        self.code.iter().find_map(|c| match c {
            KernelCode::Cpu(f) => Some(f),
            KernelCode::Cuda(_) | KernelCode::Shader(_) => None,
        })
    }
}
