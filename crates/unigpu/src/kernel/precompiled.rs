//! `Context::load_module`: precompiled CUDA code (PTX text, a CUBIN or a
//! fatbin, built by nvcc in a build script, say) loaded as a [`Module`]
//! whose kernels launch like compiled ones, each launch checked against
//! the kernel's parameter list: read from the PTX, declared by the caller,
//! or, for a CUBIN or fatbin, the sizes the driver lists.

use std::sync::Arc;

use super::options::ImageFormat;
use super::precompiled_params::{checked_params, with_declared};
use super::ptx::parse_ptx;
use super::signature::{KernelDecl, ParamKind};
use super::{Module, ModuleInner};
use crate::backend::Lookup;
use crate::{Context, Error, Result};

/// Precompiled CUDA code, labelled with its format, and the parameter
/// lists the caller declares for its kernels. `Clone` is cheap.
///
/// ```no_run
/// # fn main() -> unigpu::Result<()> {
/// use unigpu::kernel::{CudaImage, ParamKind};
/// use unigpu::{Context, DType, Grid};
/// let ctx = Context::default()?;
/// let image = CudaImage::fatbin(std::fs::read("axpy.fatbin").expect("built by nvcc"))
///     .declare("axpy", vec![
///         ParamKind::Scalar(DType::F32),
///         ParamKind::Pointer { dtype: Some(DType::F32), writable: false },
///         ParamKind::Pointer { dtype: Some(DType::F32), writable: true },
///         ParamKind::Scalar(DType::U32),
///     ]);
/// let axpy = ctx.load_module(&image)?.kernel("axpy")?;
/// let x = ctx.upload(&[1.0f32, 2.0])?;
/// let mut y = ctx.upload(&[0.5f32, 0.5])?;
/// ctx.launch(&axpy, Grid::for_elems(2), (2.0f32, &x, &mut y, 2u32))?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CudaImage {
    format: ImageFormat,
    bytes: Arc<[u8]>,
    declared: Vec<KernelDecl>,
}

impl std::fmt::Debug for CudaImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaImage")
            .field("format", &self.format)
            .field("bytes", &self.bytes.len())
            .field("declared", &self.declared)
            .finish()
    }
}

impl CudaImage {
    /// `bytes` of `format`; nothing is checked until it is loaded.
    pub fn new(format: ImageFormat, bytes: impl Into<Vec<u8>>) -> CudaImage {
        CudaImage {
            format,
            bytes: bytes.into().into(),
            declared: Vec::new(),
        }
    }

    /// PTX text (`nvcc -ptx`), compiled for the device by the driver when
    /// loaded. Its kernels' parameter lists are read from it.
    pub fn ptx(text: impl Into<String>) -> CudaImage {
        CudaImage::new(ImageFormat::Ptx, text.into().into_bytes())
    }

    /// A CUBIN (`nvcc -cubin`): machine code for one architecture.
    pub fn cubin(bytes: impl Into<Vec<u8>>) -> CudaImage {
        CudaImage::new(ImageFormat::Cubin, bytes)
    }

    /// A fatbin (`nvcc -fatbin`): machine code for several architectures,
    /// and PTX the driver compiles for the others.
    pub fn fatbin(bytes: impl Into<Vec<u8>>) -> CudaImage {
        CudaImage::new(ImageFormat::Fatbin, bytes)
    }

    /// Declares the parameters of kernel `name` (its symbol: the mangled
    /// name unless the kernel is `extern "C"`), replacing an earlier
    /// declaration of it. A declaration is checked against what the code
    /// says when loaded (the PTX's parameter list, the driver's parameter
    /// sizes) and then checks every launch, in place of that.
    pub fn declare(mut self, name: &str, params: Vec<ParamKind>) -> CudaImage {
        self.declared.retain(|d| d.name != name);
        self.declared.push(KernelDecl {
            name: name.to_string(),
            params: Some(params),
            extern_c: !name.starts_with("_Z"),
            template: false,
        });
        self
    }

    pub fn format(&self) -> ImageFormat {
        self.format
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The kernels declared with [`CudaImage::declare`].
    pub fn declared(&self) -> &[KernelDecl] {
        &self.declared
    }
}

impl Context {
    /// Loads precompiled CUDA code on this context's device. Its format is
    /// checked first, on every backend: a CUBIN is an ELF file for the
    /// CUDA machine, a fatbin starts with its magic number, PTX is text
    /// with a `.version`; a wrong label or a truncated file is
    /// [`Error::Image`]. So is code the device cannot run (no machine code
    /// for its architecture, PTX newer than the driver).
    ///
    /// The module's kernels (looked up by their symbols) launch with
    /// `ctx.launch`, their arguments checked: against the parameter list
    /// declared with [`CudaImage::declare`], else the PTX's, else, for a
    /// CUBIN or fatbin, the parameter sizes the driver lists (CUDA 12.4
    /// and later; an older driver needs the declaration). A declaration
    /// that disagrees with the code is an error here, naming the kernel
    /// and the parameter.
    ///
    /// Only devices that run CUDA code load it: elsewhere (the CPU and
    /// vulkan backends) this is `Unsupported`, saying what to give the
    /// kernel instead.
    pub fn load_module(&self, image: &CudaImage) -> Result<Module> {
        let format = image.format;
        unigpu_core::image::check(format, &image.bytes)
            .map_err(|message| Error::Image { format, message })?;
        let decls = match format {
            ImageFormat::Ptx => with_declared(
                parse_ptx(&String::from_utf8_lossy(&image.bytes)),
                &image.declared,
            )?,
            ImageFormat::Cubin | ImageFormat::Fatbin => image.declared.clone(),
        };
        let program = self.device().load_image(format, &image.bytes)?;
        // Every kernel the code or the caller names is checked now, so a
        // wrong declaration fails here rather than at a launch.
        let mut checked = Vec::with_capacity(decls.len());
        for mut decl in decls {
            let code = match program.code.kernel(&decl.name)? {
                Lookup::Found(code) => code,
                Lookup::Missing | Lookup::NoCode => {
                    return Err(Error::KernelArgs {
                        kernel: decl.name,
                        message: format!(
                            "declared, but the {format} code has no such kernel; a kernel's name in precompiled code is its symbol, the mangled name unless it is `extern \"C\"`"
                        ),
                    });
                }
            };
            decl.params = checked_params(self.backend(), format, &decl.name, decl.params, &code)?;
            checked.push(decl);
        }
        Ok(Module {
            inner: Arc::new(ModuleInner {
                backend: self.backend(),
                origin: program.origin,
                decls: checked,
                code: program.code,
                log: program.log,
            }),
        })
    }
}
