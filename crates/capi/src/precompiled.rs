//! `ug_module_load`: precompiled kernels (PTX, a CUBIN, a fatbin, SPIR-V)
//! as a `ug_module`, their parameters declared from C with `ug_param`s.
//! What loads where, and the errors, are the bindings' shared policy
//! (`unigpu::binding::load_module`), the same as Python's `Module.load`.

use std::ffi::{c_char, c_void};

use unigpu::binding::{self, ImageKind};
use unigpu::kernel::ParamKind;
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::context::ug_context;
use crate::kernel::ug_module;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::types::dtype_arg;

/// The kind of precompiled code `ug_module_load` takes. Inputs are
/// `uint32_t` holding one of these values.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_image_kind {
    /// PTX text (`nvcc -ptx`), compiled for the device by the driver; its
    /// kernels' parameter lists are read from it. cuda and torch contexts.
    Ptx = 0,
    /// A CUBIN (`nvcc -cubin`): machine code for one architecture. cuda and
    /// torch contexts.
    Cubin = 1,
    /// A fatbin (`nvcc -fatbin`): machine code for several architectures,
    /// and PTX. cuda and torch contexts.
    Fatbin = 2,
    /// A SPIR-V compute shader module (little-endian words, from `glslc`
    /// or `slangc`); a kernel's parameters are its bindings. Vulkan
    /// contexts.
    Spirv = 3,
}

/// What one declared kernel parameter is. Inputs are `uint32_t` holding
/// one of these values.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_param_kind {
    /// A value of `ug_param.dtype`.
    Scalar = 0,
    /// A pointer to elements of `ug_param.dtype` (`T*` when
    /// `ug_param.writable`, else `const T*`): an array argument.
    Pointer = 1,
    /// An untyped pointer (`void*`, `const void*`): an array of any dtype.
    VoidPointer = 2,
    /// An integer of `ug_param.bytes` bytes whose sign is not said (PTX's
    /// `.u32` for `int` and `unsigned` alike): an integer scalar of that
    /// width; at 8 bytes an array too.
    Integer = 3,
    /// `ug_param.bytes` bytes of a type not said (a struct by value, a
    /// CUBIN's parameter known by its size): a scalar of that width; at 8
    /// bytes an array too.
    Bytes = 4,
}

/// One declared kernel parameter; make one with `ug_param_scalar`,
/// `ug_param_pointer`, `ug_param_void_pointer`, `ug_param_integer` or
/// `ug_param_bytes`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ug_param {
    /// A `ug_param_kind` value.
    pub kind: u32,
    /// `UG_PARAM_KIND_SCALAR` and `_POINTER`: a `ug_dtype` value.
    pub dtype: u32,
    /// `UG_PARAM_KIND_POINTER` and `_VOID_POINTER`: nonzero when the kernel
    /// writes through it.
    pub writable: u32,
    /// `UG_PARAM_KIND_INTEGER` and `_BYTES`: the width in bytes.
    pub bytes: usize,
}

/// The parameters of one kernel of precompiled code, by its name (its
/// symbol in CUDA code, its entry point in SPIR-V).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ug_kernel_decl {
    pub name: *const c_char,
    /// `n_params` parameters, in order; NULL when `n_params` is 0.
    pub params: *const ug_param,
    pub n_params: usize,
}

fn param(kind: ug_param_kind, dtype: u32, writable: bool, bytes: usize) -> ug_param {
    ug_param {
        kind: kind as u32,
        dtype,
        writable: u32::from(writable),
        bytes,
    }
}

/// A value parameter of `dtype` (a `ug_dtype` value).
#[unsafe(no_mangle)]
pub extern "C" fn ug_param_scalar(dtype: u32) -> ug_param {
    param(ug_param_kind::Scalar, dtype, false, 0)
}

/// A pointer parameter: `T*` (written) when `writable` is nonzero, else
/// `const T*`; `dtype` is `T`'s `ug_dtype` value.
#[unsafe(no_mangle)]
pub extern "C" fn ug_param_pointer(dtype: u32, writable: u32) -> ug_param {
    param(ug_param_kind::Pointer, dtype, writable != 0, 0)
}

/// `void*` (written) when `writable` is nonzero, else `const void*`.
#[unsafe(no_mangle)]
pub extern "C" fn ug_param_void_pointer(writable: u32) -> ug_param {
    param(ug_param_kind::VoidPointer, 0, writable != 0, 0)
}

/// An integer of `bytes` bytes, sign unsaid.
#[unsafe(no_mangle)]
pub extern "C" fn ug_param_integer(bytes: usize) -> ug_param {
    param(ug_param_kind::Integer, 0, false, bytes)
}

/// `bytes` bytes of a type unsaid.
#[unsafe(no_mangle)]
pub extern "C" fn ug_param_bytes(bytes: usize) -> ug_param {
    param(ug_param_kind::Bytes, 0, false, bytes)
}

/// A `ug_image_kind` value from C.
fn image_kind_arg(value: u32) -> Result<ImageKind> {
    Ok(match value {
        0 => ImageKind::Ptx,
        1 => ImageKind::Cubin,
        2 => ImageKind::Fatbin,
        3 => ImageKind::Spirv,
        v => {
            return Err(Failure::invalid_argument(format!(
                "`kind` is {v}, not a ug_image_kind value (UG_IMAGE_KIND_PTX 0, _CUBIN 1, _FATBIN 2, _SPIRV 3)"
            )));
        }
    })
}

/// A parameter from C as the facade's [`ParamKind`]; `what` names it.
fn param_arg(p: &ug_param, what: &str) -> Result<ParamKind> {
    let width = |bytes: usize| {
        if (1..=4096).contains(&bytes) {
            Ok(bytes)
        } else {
            Err(Failure::invalid_argument(format!(
                "`{what}.bytes` is {bytes}: a parameter is 1 to 4096 bytes"
            )))
        }
    };
    Ok(match p.kind {
        0 => ParamKind::Scalar(dtype_arg(p.dtype, &format!("{what}.dtype"))?),
        1 => ParamKind::Pointer {
            dtype: Some(dtype_arg(p.dtype, &format!("{what}.dtype"))?),
            writable: p.writable != 0,
        },
        2 => ParamKind::Pointer {
            dtype: None,
            writable: p.writable != 0,
        },
        3 => ParamKind::Integer {
            bytes: width(p.bytes)?,
        },
        4 => ParamKind::Bytes {
            bytes: width(p.bytes)?,
        },
        k => {
            return Err(Failure::invalid_argument(format!(
                "`{what}.kind` is {k}, not a ug_param_kind value (UG_PARAM_KIND_SCALAR 0, _POINTER 1, _VOID_POINTER 2, _INTEGER 3, _BYTES 4)"
            )));
        }
    })
}

/// Loads `size_bytes` bytes of precompiled code of `kind` (a
/// `ug_image_kind` value) on `ctx`'s device as a module, whose kernels
/// (`ug_module_kernel`) launch with `ug_kernel_launch`, each launch checked
/// against the kernel's parameters: those declared in `decls` (checked
/// against the code here; `n_decls` may be 0 with `decls` NULL), else read
/// from the code (PTX's parameter lists; a CUBIN's or fatbin's parameter
/// sizes, CUDA 12.4 drivers and later; a SPIR-V shader's bindings).
///
/// CUDA code (PTX, CUBIN, fatbin) loads on cuda and torch contexts, SPIR-V
/// on vulkan ones; anywhere else `UG_UNSUPPORTED`, the message saying what
/// to give the kernel instead. Code that is not what `kind` says, is
/// truncated, or has nothing this device runs (no machine code for its
/// architecture, PTX newer than the driver) is `UG_IMAGE` for CUDA code
/// and `UG_COMPILE` for SPIR-V; a declaration that disagrees with the code
/// is `UG_KERNEL_ARGS` naming the kernel and the parameter.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `bytes` is NULL or valid for reads of
/// `size_bytes` bytes; `decls` is NULL (with `n_decls` 0) or valid for
/// reads of `n_decls` declarations, each with a NULL or NUL-terminated
/// `name` and `params` NULL or valid for reads of `n_params`; `out` is NULL
/// or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_module_load(
    ctx: *const ug_context,
    bytes: *const c_void,
    size_bytes: usize,
    kind: u32,
    decls: *const ug_kernel_decl,
    n_decls: usize,
    out: *mut *mut ug_module,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        // SAFETY: NULL or valid for `size_bytes` reads (see # Safety).
        let bytes = unsafe { runtime::slice_arg(bytes.cast::<u8>(), size_bytes, "bytes") }?;
        let kind = image_kind_arg(kind)?;
        // SAFETY: NULL or valid for `n_decls` reads (see # Safety).
        let decls = unsafe { runtime::slice_arg(decls, n_decls, "decls") }?;
        let mut declared = Vec::with_capacity(decls.len());
        for (i, d) in decls.iter().enumerate() {
            // SAFETY: NULL or NUL-terminated (see # Safety).
            let name = unsafe { runtime::str_arg(d.name, &format!("decls[{i}].name")) }?;
            let what = format!("decls[{i}].params");
            // SAFETY: NULL or valid for `n_params` reads (see # Safety).
            let params = unsafe { runtime::slice_arg(d.params, d.n_params, &what) }?;
            let params = params
                .iter()
                .enumerate()
                .map(|(j, p)| param_arg(p, &format!("decls[{i}].params[{j}]")))
                .collect::<Result<Vec<_>>>()?;
            declared.push((name.to_string(), params));
        }
        let module = binding::load_module(&ctx.ctx, kind, bytes, declared).or_status()?;
        out.write(runtime::into_handle(ug_module { module }));
        Ok(())
    })
}
