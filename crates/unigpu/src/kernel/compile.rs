//! `Context::compile`: source to a loaded module, through the context's
//! own cache (the same source and options give the same module) and then
//! the backend's compiler with its caches.

use std::sync::Arc;

use super::signature::{KernelDecl, parse_kernels};
use super::{CompileOptions, Module, ModuleInner};
use crate::lock::lock;
use crate::{Context, Result};

impl Context {
    /// Compiles CUDA C++ for this context's device and loads it. A second
    /// compile of the same source and options is a cache lookup; a compile
    /// in a new process is served from the on-disk cache
    /// (`UNIGPU_CACHE_DIR`, default `~/.cache/unigpu/kernels`).
    ///
    /// On the CPU and vulkan backends nothing is compiled: the module lists
    /// the source's kernels, which run there once given a CPU
    /// implementation (`Kernel::with_cpu`) or a shader (`Kernel::with_wgsl`).
    pub fn compile(&self, source: &str) -> Result<Module> {
        self.compile_with(source, &CompileOptions::default())
    }

    /// [`Context::compile`] with include paths, defines, an architecture or
    /// other NVRTC options.
    pub fn compile_with(&self, source: &str, options: &CompileOptions) -> Result<Module> {
        self.compile_declared(source, options, || parse_kernels(source))
    }

    /// [`Context::compile_with`] for a source whose kernels the caller
    /// already knows (`#[unigpu::kernel]`'s generated CUDA): reading them
    /// from the source took 10 µs of a macro kernel's first build, five
    /// times a small hand-written source's.
    pub(crate) fn compile_declared(
        &self,
        source: &str,
        options: &CompileOptions,
        declared: impl FnOnce() -> Vec<KernelDecl>,
    ) -> Result<Module> {
        let key = (source.to_string(), options.clone());
        if let Some(m) = lock(self.module_cache()).get(&key) {
            return Ok(m.clone());
        }
        let decls = declared();
        let program = self.device().compile(source, options, &decls)?;
        let module = Module {
            inner: Arc::new(ModuleInner {
                backend: self.backend(),
                origin: program.origin,
                decls,
                code: program.code,
                log: program.log,
            }),
        };
        lock(self.module_cache()).insert(key, module.clone());
        Ok(module)
    }
}
