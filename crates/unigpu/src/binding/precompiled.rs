//! Precompiled kernels as the bindings load them: one call for every kind
//! of code (PTX, a CUBIN, a fatbin, SPIR-V), each checked against the
//! context it is loaded on, so that C's `ug_module_load` and Python's
//! `Module.load` accept and refuse the same things with the same words.

use std::sync::Arc;

use crate::kernel::{CudaImage, ImageFormat, Origin, ParamKind};
use crate::{Backend, Context, Error, Kernel, Module, Result};

/// The kinds of precompiled code a binding loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX text, compiled for the device by the driver (cuda, torch).
    Ptx,
    /// A CUBIN: machine code for one architecture (cuda, torch).
    Cubin,
    /// A fatbin: machine code for several architectures, and PTX (cuda,
    /// torch).
    Fatbin,
    /// A SPIR-V compute shader module, little-endian words (vulkan).
    Spirv,
}

impl ImageKind {
    /// The name a binding's caller writes (`"ptx"`, `"cubin"`, `"fatbin"`,
    /// `"spirv"`).
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Ptx => "ptx",
            ImageKind::Cubin => "cubin",
            ImageKind::Fatbin => "fatbin",
            ImageKind::Spirv => "spirv",
        }
    }

    /// The kind named `name` (as [`ImageKind::name`], any case).
    pub fn from_name(name: &str) -> Option<ImageKind> {
        [
            ImageKind::Ptx,
            ImageKind::Cubin,
            ImageKind::Fatbin,
            ImageKind::Spirv,
        ]
        .into_iter()
        .find(|k| k.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// One kernel's parameters as the caller declares them.
pub type Declaration = (String, Vec<ParamKind>);

/// A module as a binding holds it: compiled from source, or loaded from
/// precompiled code. `Clone` is cheap.
#[derive(Debug, Clone)]
pub struct BoundModule {
    inner: Inner,
}

#[derive(Debug, Clone)]
enum Inner {
    /// Compiled source, or CUDA code loaded with `Context::load_module`.
    Cuda(Module),
    /// A SPIR-V module: its kernels are made on lookup
    /// ([`Kernel::from_spirv`]), each checked against the module then.
    Spirv {
        bytes: Arc<[u8]>,
        declared: Arc<[Declaration]>,
    },
}

impl From<Module> for BoundModule {
    fn from(module: Module) -> BoundModule {
        BoundModule {
            inner: Inner::Cuda(module),
        }
    }
}

/// SPIR-V's magic number, the first word of every module.
const SPIRV_MAGIC: u32 = 0x0723_0203;

/// Loads `bytes` of `kind` on `ctx`, with the parameters of the kernels in
/// `declared` (each checked against the code now; the others are read
/// from the code: PTX's parameter list, the driver's parameter sizes of a
/// CUBIN or fatbin, a shader's bindings).
///
/// CUDA code loads where the device runs it (the cuda and torch backends)
/// and SPIR-V on vulkan; anywhere else the result is
/// [`Error::Unsupported`] saying what to give the kernel instead. Code
/// that is not what `kind` says is [`Error::Image`] (CUDA) or
/// [`Error::Compile`] (SPIR-V).
pub fn load_module(
    ctx: &Context,
    kind: ImageKind,
    bytes: &[u8],
    declared: Vec<Declaration>,
) -> Result<BoundModule> {
    let format = match kind {
        ImageKind::Ptx => ImageFormat::Ptx,
        ImageKind::Cubin => ImageFormat::Cubin,
        ImageKind::Fatbin => ImageFormat::Fatbin,
        ImageKind::Spirv => return load_spirv(ctx, bytes, declared),
    };
    let mut image = CudaImage::new(format, bytes.to_vec());
    for (name, params) in declared {
        image = image.declare(&name, params);
    }
    ctx.load_module(&image).map(BoundModule::from)
}

fn load_spirv(ctx: &Context, bytes: &[u8], declared: Vec<Declaration>) -> Result<BoundModule> {
    if ctx.backend() != Backend::Vulkan {
        let instead = match ctx.backend() {
            Backend::Cpu => "give the kernel a CPU implementation",
            _ => "load PTX, a CUBIN or a fatbin for this device",
        };
        return Err(Error::Unsupported {
            backend: ctx.backend(),
            what: format!(
                "SPIR-V: a compute shader runs on the vulkan backend only; on this one, {instead}"
            ),
        });
    }
    let bad = |why: String| Error::Compile {
        log: format!("not a SPIR-V module: {why}"),
    };
    if bytes.len() < 20 || !bytes.len().is_multiple_of(4) {
        return Err(bad(format!(
            "{} bytes; a module is a whole number of 4-byte words, at least its 5-word header",
            bytes.len()
        )));
    }
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if magic != SPIRV_MAGIC {
        return Err(bad(format!(
            "its first word is {magic:#010x}, not the magic number {SPIRV_MAGIC:#010x} (little-endian words)"
        )));
    }
    let module = BoundModule {
        inner: Inner::Spirv {
            bytes: bytes.into(),
            declared: declared.into(),
        },
    };
    // A declaration that disagrees with the shader fails now, as a CUDA
    // module's does, not at the first lookup.
    if let Inner::Spirv { declared, .. } = &module.inner {
        for (name, _) in declared.iter() {
            module.kernel(name)?;
        }
    }
    Ok(module)
}

impl BoundModule {
    /// The kernel called `name`: its source name for compiled code, its
    /// symbol in CUDA code (the mangled name unless `extern "C"`), its
    /// entry point in SPIR-V (or the module's only one).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        match &self.inner {
            Inner::Cuda(m) => m.kernel(name),
            Inner::Spirv { bytes, declared } => {
                let params = declared
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, p)| p.clone());
                Kernel::from_spirv(name, bytes, params)
            }
        }
    }

    /// The kernels the module names: compiled source's `__global__`
    /// functions, PTX's entries and the declared ones; for SPIR-V, the
    /// declared ones.
    pub fn kernel_names(&self) -> Vec<&str> {
        match &self.inner {
            Inner::Cuda(m) => m.kernel_names(),
            Inner::Spirv { declared, .. } => declared.iter().map(|(n, _)| n.as_str()).collect(),
        }
    }

    /// Where the machine code came from; SPIR-V is precompiled code with
    /// no CUDA format, `None`.
    pub fn origin(&self) -> Option<Origin> {
        match &self.inner {
            Inner::Cuda(m) => Some(m.origin()),
            Inner::Spirv { .. } => None,
        }
    }

    /// Compiler warnings, if any.
    pub fn log(&self) -> &str {
        match &self.inner {
            Inner::Cuda(m) => m.log(),
            Inner::Spirv { .. } => "",
        }
    }
}
