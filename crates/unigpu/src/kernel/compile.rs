//! `Context::compile`: source to a loaded module, through three caches.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use unigpu_cuda_safe::nvrtc::{self, Compiled};
use unigpu_cuda_safe::{CudaDevice, CudaModuleHandle};

use super::cache;
use super::signature::parse_kernels;
use super::{Module, ModuleInner, Origin};
use crate::context::DeviceImpl;
use crate::{Context, Result};

/// Options for [`Context::compile_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// `-I` folders for `#include "..."`.
    pub include_paths: Vec<PathBuf>,
    /// `-D NAME` or `-D NAME=VALUE`.
    pub defines: Vec<(String, Option<String>)>,
    /// Target (major, minor); the device's own when `None`.
    pub arch: Option<(i32, i32)>,
    /// Any other NVRTC option, passed through.
    pub extra: Vec<String>,
}

impl CompileOptions {
    pub fn include(mut self, path: impl Into<PathBuf>) -> Self {
        self.include_paths.push(path.into());
        self
    }

    pub fn define(mut self, name: &str, value: Option<&str>) -> Self {
        self.defines
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    pub fn arch(mut self, major: i32, minor: i32) -> Self {
        self.arch = Some((major, minor));
        self
    }

    pub fn option(mut self, option: &str) -> Self {
        self.extra.push(option.to_string());
        self
    }

    fn nvrtc_options(&self, arch: (i32, i32)) -> Vec<String> {
        let mut o = vec![
            format!("--gpu-architecture=sm_{}{}", arch.0, arch.1),
            "--std=c++17".to_string(),
        ];
        o.extend(
            self.include_paths
                .iter()
                .map(|p| format!("-I{}", p.display())),
        );
        o.extend(self.defines.iter().map(|(n, v)| match v {
            Some(v) => format!("-D{n}={v}"),
            None => format!("-D{n}"),
        }));
        o.extend(self.extra.iter().cloned());
        o
    }
}

impl Context {
    /// Compiles CUDA C++ for this context's device and loads it. A second
    /// compile of the same source and options is a cache lookup; a compile
    /// in a new process is served from the on-disk cache
    /// (`UNIGPU_CACHE_DIR`, default `~/.cache/unigpu/kernels`).
    ///
    /// On the CPU backend nothing is compiled: the module lists the source's
    /// kernels, which run there once given a CPU implementation.
    pub fn compile(&self, source: &str) -> Result<Module> {
        self.compile_with(source, &CompileOptions::default())
    }

    /// [`Context::compile`] with include paths, defines, an architecture or
    /// other NVRTC options.
    pub fn compile_with(&self, source: &str, options: &CompileOptions) -> Result<Module> {
        let device = match self.device() {
            DeviceImpl::Cpu(_) => {
                return Ok(Module {
                    inner: Arc::new(ModuleInner {
                        backend: self.backend(),
                        origin: super::Origin::NotCompiled,
                        decls: parse_kernels(source),
                        cuda: None,
                        log: String::new(),
                    }),
                });
            }
            DeviceImpl::Cuda(d) => d,
            // torch shares the device's primary context with the driver API.
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(d) => &d.cuda,
        };
        let arch = match options.arch {
            Some(a) => a,
            None => self.device_arch()?,
        };
        let flags = options.nvrtc_options(arch);
        let key = cache::key(source, &flags, arch, nvrtc_version()?);
        if let Some(m) = crate::backend::cpu::lock(self.module_cache()).get(&key) {
            return Ok(m.clone());
        }
        let module = load_or_compile(device, source, &flags, &key)?;
        crate::backend::cpu::lock(self.module_cache()).insert(key, module.clone());
        Ok(module)
    }
}

fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let v = nvrtc::version()?;
    Ok(*VERSION.get_or_init(|| v))
}

fn load_or_compile(
    device: &CudaDevice,
    source: &str,
    flags: &[String],
    key: &cache::Key,
) -> Result<Module> {
    let decls = parse_kernels(source);
    let cached = crate::backend::cpu::lock(cache::memory()).get(key).cloned();
    if let Some(c) = cached {
        return finish(device, decls, c, Origin::MemoryCache);
    }
    // A file that does not load (truncated, another driver) is a miss.
    if let Some(c) = cache::load(key)
        && let Ok(m) = finish(
            device,
            decls.clone(),
            Arc::new(c.clone()),
            Origin::DiskCache,
        )
    {
        crate::backend::cpu::lock(cache::memory()).insert(*key, Arc::new(c));
        return Ok(m);
    }
    // Name expressions give the mangled names of non-`extern "C"` kernels;
    // templates need explicit instantiations, so they are left out.
    let mut names: Vec<String> = decls
        .iter()
        .filter(|d| !d.template)
        .map(|d| d.name.clone())
        .collect();
    names.dedup();
    let compiled = Arc::new(nvrtc::compile(source, "unigpu_kernel.cu", flags, &names)?);
    cache::store(key, &compiled);
    crate::backend::cpu::lock(cache::memory()).insert(*key, compiled.clone());
    finish(device, decls, compiled, Origin::Compiled)
}

fn finish(
    device: &CudaDevice,
    decls: Vec<super::KernelDecl>,
    c: Arc<Compiled>,
    origin: Origin,
) -> Result<Module> {
    let module = CudaModuleHandle::load(device, &c.cubin)?;
    Ok(Module {
        inner: Arc::new(ModuleInner {
            backend: crate::Backend::Cuda,
            origin,
            decls,
            cuda: Some((module, c.lowered_names.clone())),
            log: c.log.clone(),
        }),
    })
}
