//! CUDA C++ to a module loaded on one device, through NVRTC and two caches
//! (this process's compiled programs, and the files on disk).

use std::sync::{Arc, OnceLock};

use unigpu_cuda_safe::nvrtc::{self, Compiled};
use unigpu_cuda_safe::{CudaDevice, CudaFunctionHandle, CudaModuleHandle};

use super::cache;
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, Origin};
use crate::kernel::signature::KernelDecl;

/// A module loaded on a device, with the lowered (mangled) symbol of each
/// kernel NVRTC was asked to name.
#[derive(Debug, Clone)]
pub(crate) struct LoadedModule {
    module: CudaModuleHandle,
    lowered: Vec<(String, String)>,
}

impl LoadedModule {
    /// `module`, whose kernels are found by their symbols as they are.
    pub(super) fn symbols_as_named(module: CudaModuleHandle) -> LoadedModule {
        LoadedModule {
            module,
            lowered: Vec::new(),
        }
    }

    /// The kernel called `name` in the source, or `None` when the module
    /// has no such symbol.
    pub(crate) fn function(&self, name: &str) -> Result<Option<CudaFunctionHandle>> {
        let symbol = self
            .lowered
            .iter()
            .find(|(n, _)| n == name)
            .map_or(name, |(_, l)| l.as_str());
        match self.module.function(symbol).map_err(Error::from) {
            Ok(f) => Ok(Some(f)),
            // The driver's "not found"; anything else is a real failure.
            Err(Error::Driver { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A CUDA program loaded on a device.
#[derive(Debug)]
pub(crate) struct CudaProgram {
    pub(crate) module: LoadedModule,
    pub(crate) origin: Origin,
    /// Compiler warnings.
    pub(crate) log: String,
}

/// Compiles `source` for `device` (its own architecture unless `options`
/// names one) and loads it. `decls` are the source's kernels, whose
/// names NVRTC lowers.
pub(crate) fn compile(
    device: &CudaDevice,
    source: &str,
    options: &CompileOptions,
    decls: &[KernelDecl],
) -> Result<CudaProgram> {
    let arch = match options.arch {
        Some(a) => a,
        None => device.properties()?.compute_capability,
    };
    let flags = nvrtc_flags(options, arch);
    let key = cache::key(source, &flags, arch, nvrtc_version()?);
    let cached = crate::lock::lock(cache::memory()).get(&key).cloned();
    if let Some(c) = cached {
        return load(device, c, Origin::MemoryCache);
    }
    // A file that does not load (truncated, another driver) is a miss.
    if let Some(c) = cache::load(&key) {
        let c = Arc::new(c);
        if let Ok(program) = load(device, c.clone(), Origin::DiskCache) {
            crate::lock::lock(cache::memory()).insert(key, c);
            return Ok(program);
        }
    }
    // Name expressions give the mangled names of non-`extern "C"` kernels;
    // templates need explicit instantiations, so they are left out.
    let mut names: Vec<String> = decls
        .iter()
        .filter(|d| !d.template)
        .map(|d| d.name.clone())
        .collect();
    names.dedup();
    let compiled = Arc::new(nvrtc::compile(source, "unigpu_kernel.cu", &flags, &names)?);
    cache::store(&key, &compiled);
    crate::lock::lock(cache::memory()).insert(key, compiled.clone());
    load(device, compiled, Origin::Compiled)
}

fn load(device: &CudaDevice, c: Arc<Compiled>, origin: Origin) -> Result<CudaProgram> {
    let module = CudaModuleHandle::load(device, &c.cubin).map_err(Error::from)?;
    Ok(CudaProgram {
        module: LoadedModule {
            module,
            lowered: c.lowered_names.clone(),
        },
        origin,
        log: c.log.clone(),
    })
}

fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let v = nvrtc::version()?;
    Ok(*VERSION.get_or_init(|| v))
}

fn nvrtc_flags(options: &CompileOptions, arch: (i32, i32)) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture=sm_{}{}", arch.0, arch.1),
        "--std=c++17".to_string(),
    ];
    o.extend(
        options
            .include_paths
            .iter()
            .map(|p| format!("-I{}", p.display())),
    );
    o.extend(options.defines.iter().map(|(n, v)| match v {
        Some(v) => format!("-D{n}={v}"),
        None => format!("-D{n}"),
    }));
    o.extend(options.extra.iter().cloned());
    o
}
