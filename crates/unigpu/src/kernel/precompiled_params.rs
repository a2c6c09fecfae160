//! The parameter lists of precompiled kernels: a declaration checked
//! against what the code says (the PTX's list, the driver's parameter
//! sizes), and the sizes standing in for a list where nothing else gives
//! one. Apart from `precompiled.rs` so that `Module::kernel` uses it
//! without reaching `Context`.

use super::options::{ImageFormat, Origin};
use super::signature::{KernelDecl, ParamKind};
use crate::backend::{Backend, KernelCode};
use crate::{Error, Result};

/// The PTX's kernels, each declared one's parameters replaced by the
/// declaration once it agrees with them.
pub(super) fn with_declared(
    mut found: Vec<KernelDecl>,
    declared: &[KernelDecl],
) -> Result<Vec<KernelDecl>> {
    for d in declared {
        let Some(at) = found.iter().position(|f| f.name == d.name) else {
            let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::KernelArgs {
                kernel: d.name.clone(),
                message: format!(
                    "declared, but the PTX has no such kernel (it has: {}); a kernel's name in PTX is its symbol, the mangled name unless it is `extern \"C\"`",
                    names.join(", ")
                ),
            });
        };
        let f = &mut found[at];
        if let (Some(mine), Some(read)) = (&d.params, &f.params) {
            agree(&d.name, mine, read, "the PTX")?;
        }
        f.params.clone_from(&d.params);
    }
    Ok(found)
}

/// The parameter list of the precompiled kernel `name`: `params` (declared
/// or read from PTX) once it agrees with the sizes `code` records, or
/// those sizes alone; `None` when neither is known.
pub(super) fn checked_params(
    backend: Backend,
    format: ImageFormat,
    name: &str,
    params: Option<Vec<ParamKind>>,
    code: &KernelCode,
) -> Result<Option<Vec<ParamKind>>> {
    let sizes = code.param_sizes().map_err(|e| e.on_backend(backend))?;
    let Some(sizes) = sizes else {
        return Ok(params);
    };
    let layout: Vec<ParamKind> = sizes
        .into_iter()
        .map(|bytes| ParamKind::Bytes { bytes })
        .collect();
    match params {
        Some(params) => {
            let source = format!("the {format} code's parameter layout");
            agree(name, &params, &layout, &source)?;
            Ok(Some(params))
        }
        None => Ok(Some(layout)),
    }
}

/// The error for a precompiled kernel whose parameters nothing gives.
pub(super) fn undeclared(format: ImageFormat, name: &str) -> Error {
    let why = match format {
        ImageFormat::Ptx => "its PTX parameter list could not be read",
        ImageFormat::Cubin | ImageFormat::Fatbin => "a CUBIN has no parameter list to read",
    };
    Error::KernelArgs {
        kernel: name.to_string(),
        message: format!(
            "the parameters of this {format} kernel are unknown: {why}, and this CUDA driver cannot list their sizes (cuFuncGetParamInfo, CUDA 12.4); declare them with CudaImage::declare"
        ),
    }
}

/// `Ok` when `declared` refines `found`, what `source` says of the same
/// kernel; else the error naming the kernel, the parameter and both.
fn agree(kernel: &str, declared: &[ParamKind], found: &[ParamKind], source: &str) -> Result<()> {
    let list = |p: &[ParamKind]| {
        p.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bad = |message: String| Error::KernelArgs {
        kernel: kernel.to_string(),
        message,
    };
    if declared.len() != found.len() {
        return Err(bad(format!(
            "declared with {} parameters ({}), but {source} has {} ({})",
            declared.len(),
            list(declared),
            found.len(),
            list(found)
        )));
    }
    for (i, (d, f)) in declared.iter().zip(found).enumerate() {
        if !d.refines(f) {
            return Err(bad(format!(
                "parameter {i} is declared `{d}` ({} bytes), but {source} has `{f}` ({} bytes) there",
                d.size_bytes(),
                f.size_bytes()
            )));
        }
    }
    Ok(())
}

/// Whether `origin` is precompiled code, and of which format.
pub(super) fn precompiled(origin: Origin) -> Option<ImageFormat> {
    match origin {
        Origin::Precompiled(format) => Some(format),
        _ => None,
    }
}
