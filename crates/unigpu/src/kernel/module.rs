//! `Module` (a compiled program) and `Kernel` (one of its kernels, with
//! every form of code it carries).

use std::sync::Arc;

use super::names::register;
use super::precompiled_params::{checked_params, precompiled, undeclared};
use super::signature::{KernelDecl, ParamKind};
use crate::backend::{
    Backend, CpuArgs, KernelCode, KernelRef, Lookup, ModuleCode, ShaderSource, shader_kernel,
};
use crate::error::{Error, Result};
use crate::kernel::options::Origin;

/// A compiled program (or loaded precompiled code). `Clone` is cheap;
/// Send + Sync.
#[derive(Debug, Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

#[derive(Debug)]
pub(crate) struct ModuleInner {
    pub(crate) backend: Backend,
    pub(crate) origin: Origin,
    pub(crate) decls: Vec<KernelDecl>,
    pub(crate) code: ModuleCode,
    pub(crate) log: String,
}

impl Module {
    /// The kernel called `name`: its source name, not the mangled one;
    /// in precompiled code ([`crate::Context::load_module`]), its symbol
    /// (the mangled name unless the kernel is `extern "C"`). A precompiled
    /// kernel whose parameters nothing gives (not declared, no PTX list,
    /// a driver that cannot list them) is an error: it would launch
    /// unchecked.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let decl = self.inner.decls.iter().find(|d| d.name == name);
        let code = match self.inner.code.kernel(name)? {
            Lookup::Found(code) => vec![code],
            Lookup::NoCode if decl.is_some() => Vec::new(),
            Lookup::Missing | Lookup::NoCode => return Err(self.no_such_kernel(name)),
        };
        let mut params = decl.and_then(|d| d.params.clone());
        if let Some(format) = precompiled(self.inner.origin) {
            if params.is_none() {
                if let Some(code) = code.first() {
                    params = checked_params(self.inner.backend, format, name, None, code)?;
                }
            }
            if params.is_none() {
                return Err(undeclared(format, name));
            }
        }
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                id: register(name),
                name: name.to_string(),
                params,
                code,
                hidden_lengths: false,
                fault_code: None,
                workgroup: None,
            }),
        })
    }

    /// The `__global__` functions found in the source; for precompiled
    /// code, the PTX's kernels (`.entry`) and the declared ones.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.inner.decls.iter().map(|d| d.name.as_str()).collect()
    }

    /// Where this module's machine code came from when it was loaded.
    pub fn origin(&self) -> Origin {
        self.inner.origin
    }

    /// True when both handles are the same compiled module (a cache hit).
    pub fn same_as(&self, other: &Module) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Compiler warnings, if any.
    pub fn log(&self) -> &str {
        &self.inner.log
    }

    fn no_such_kernel(&self, name: &str) -> Error {
        let found = self.kernel_names().join(", ");
        let message = match precompiled(self.inner.origin) {
            Some(format) => format!(
                "no such kernel in this {format} code (found: {found}); a kernel's name in precompiled code is its symbol, the mangled name (`_Z...`) unless it is `extern \"C\"`"
            ),
            None => format!(
                "no such kernel in this module (found: {found}); on {} a kernel needs `extern \"C\"` or a plain `__global__` declaration",
                self.inner.backend
            ),
        };
        Error::KernelArgs {
            kernel: name.to_string(),
            message,
        }
    }
}

/// One kernel, ready to launch with `ctx.launch` or `stream.launch`.
/// `Clone` is cheap; Send + Sync.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: Arc<KernelInner>,
}

pub(crate) struct KernelInner {
    /// Process-wide id, so a stream can remember its last kernel with one
    /// atomic store; see [`name_of`].
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) params: Option<Vec<ParamKind>>,
    /// Every form of code the kernel has; a launch runs the one that fits
    /// its stream's backend.
    pub(crate) code: Vec<KernelCode>,
    /// Made by `#[unigpu::kernel]`: its CUDA form takes each array's
    /// length (u64) after the declared parameters, appended at launch.
    pub(crate) hidden_lengths: bool,
    /// Made by `#[unigpu::kernel]`: its code base in fault words (see
    /// kernel/bounds.rs); the launch appends the stream's fault word and
    /// this after the lengths.
    pub(crate) fault_code: Option<u32>,
    /// Made by `#[unigpu::kernel]`: the only block a launch may use (its
    /// CUDA form is compiled for it).
    pub(crate) workgroup: Option<(u32, u32, u32)>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.inner.name)
            .field("params", &self.inner.params)
            .field(
                "code",
                &self
                    .inner
                    .code
                    .iter()
                    .map(KernelCode::form)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Kernel {
    /// A kernel with only a CPU implementation (no CUDA source), for code
    /// that runs on the CPU backend alone. `params`, when given, is checked
    /// at every launch like a parsed declaration.
    pub fn cpu_only(
        name: &str,
        params: Option<Vec<ParamKind>>,
        f: impl Fn(&CpuArgs) -> Result<()> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel {
            inner: Arc::new(KernelInner {
                id: register(name),
                name: name.to_string(),
                params,
                code: vec![KernelCode::Cpu(Arc::new(f))],
                hidden_lengths: false,
                fault_code: None,
                workgroup: None,
            }),
        }
    }

    /// The same kernel with a CPU implementation, used on the CPU backend.
    pub fn with_cpu(self, f: impl Fn(&CpuArgs) -> Result<()> + Send + Sync + 'static) -> Kernel {
        let mut code: Vec<KernelCode> = self
            .inner
            .code
            .iter()
            .filter(|c| !matches!(c, KernelCode::Cpu(_)))
            .cloned()
            .collect();
        code.push(KernelCode::Cpu(Arc::new(f)));
        Kernel {
            inner: Arc::new(KernelInner {
                id: self.inner.id,
                name: self.inner.name.clone(),
                params: self.inner.params.clone(),
                code,
                hidden_lengths: self.inner.hidden_lengths,
                fault_code: self.inner.fault_code,
                workgroup: self.inner.workgroup,
            }),
        }
    }

    /// The same kernel with a WGSL compute shader, which backends that run
    /// shaders (vulkan) launch. The entry point is the `@compute` function
    /// named after the kernel, or the module's only one; argument i is
    /// `@group(0) @binding(i)`: an array as a storage buffer
    /// (`var<storage, read>` for `&GpuArray`, `read_write` for
    /// `&mut GpuArray`), a scalar as a uniform. The shader is parsed and
    /// validated now, and its bindings must agree with the parameters the
    /// kernel already has; it is compiled on first launch, once per device.
    pub fn with_wgsl(self, source: &str) -> Result<Kernel> {
        let shader = shader_kernel(&self.inner.name, ShaderSource::Wgsl(source), &[])?;
        self.with_shader(shader)
    }

    /// As [`Kernel::with_wgsl`], with a SPIR-V module (little-endian words,
    /// e.g. from `glslc` or `slangc` in a build script).
    pub fn with_spirv(self, spirv: &[u8]) -> Result<Kernel> {
        let shader = shader_kernel(&self.inner.name, ShaderSource::Spirv(spirv), &[])?;
        self.with_shader(shader)
    }

    /// A kernel with only a WGSL shader (no CUDA source); its parameters
    /// are read from the shader's bindings.
    pub fn from_wgsl(name: &str, source: &str) -> Result<Kernel> {
        Kernel::named(name, None).with_wgsl(source)
    }

    /// A kernel with only a SPIR-V shader. `params`, when given, must agree
    /// with the module's bindings; else they are read from them.
    pub fn from_spirv(name: &str, spirv: &[u8], params: Option<Vec<ParamKind>>) -> Result<Kernel> {
        Kernel::named(name, params).with_spirv(spirv)
    }

    fn named(name: &str, params: Option<Vec<ParamKind>>) -> Kernel {
        Kernel {
            inner: Arc::new(KernelInner {
                id: register(name),
                name: name.to_string(),
                params,
                code: Vec::new(),
                hidden_lengths: false,
                fault_code: None,
                workgroup: None,
            }),
        }
    }

    /// Adds (or replaces) the kernel's shader after checking its bindings
    /// against the parameters the kernel has.
    /// `shader` is a `KernelCode::Shader`, as `shader_kernel` makes it.
    fn with_shader(self, shader: KernelCode) -> Result<Kernel> {
        let params = match (self.params(), shader.bound_params()) {
            (Some(have), Some(bound)) => {
                if !same_params(have, &bound) {
                    let list = |p: &[ParamKind]| {
                        p.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    return Err(Error::KernelArgs {
                        kernel: self.inner.name.clone(),
                        message: format!(
                            "the {} shader binds ({}), but the kernel is declared ({})",
                            shader.form(),
                            list(&bound),
                            list(have)
                        ),
                    });
                }
                Some(
                    have.iter()
                        .zip(&bound)
                        .map(|(h, b)| match h {
                            // What precompiled code left open, the shader says.
                            ParamKind::Integer { .. } | ParamKind::Bytes { .. } => *b,
                            _ => *h,
                        })
                        .collect(),
                )
            }
            (have, bound) => have.map(<[ParamKind]>::to_vec).or(bound),
        };
        let mut code: Vec<KernelCode> = self
            .inner
            .code
            .iter()
            .filter(|c| !matches!(c, KernelCode::Shader(_)))
            .cloned()
            .collect();
        code.push(shader);
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                id: self.inner.id,
                name: self.inner.name.clone(),
                params,
                code,
                hidden_lengths: self.inner.hidden_lengths,
                fault_code: self.inner.fault_code,
                workgroup: self.inner.workgroup,
            }),
        })
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The parameter types read from the declaration, when readable.
    pub fn params(&self) -> Option<&[ParamKind]> {
        self.inner.params.as_deref()
    }

    pub fn has_cpu_impl(&self) -> bool {
        self.code_ref().cpu().is_some()
    }

    /// Whether the kernel carries a WGSL or SPIR-V shader.
    pub fn has_shader(&self) -> bool {
        self.code_ref().shader().is_some()
    }

    pub(crate) fn code_ref(&self) -> KernelRef<'_> {
        KernelRef {
            name: &self.inner.name,
            code: &self.inner.code,
        }
    }
}

/// Whether a shader's bindings (`bound`) fit a declaration (`have`): the
/// same kinds in the same order, pointers of the same element type (or
/// `void*`) and writability; where the declaration is precompiled code's
/// width-only reading, a binding that refines it.
fn same_params(have: &[ParamKind], bound: &[ParamKind]) -> bool {
    have.len() == bound.len()
        && have.iter().zip(bound).all(|(h, b)| match (h, b) {
            (ParamKind::Integer { .. } | ParamKind::Bytes { .. }, b) => b.refines(h),
            (ParamKind::Scalar(x), ParamKind::Scalar(y)) => x == y,
            (
                ParamKind::Pointer {
                    dtype: dx,
                    writable: wx,
                },
                ParamKind::Pointer {
                    dtype: dy,
                    writable: wy,
                },
            ) => wx == wy && (dx.is_none() || dy.is_none() || dx == dy),
            _ => false,
        })
}
