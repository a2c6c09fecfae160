//! A kernel's WGSL or SPIR-V, read with naga when it is attached (so a
//! malformed shader fails at once, and its bindings are known): argument i
//! is `@group(0) @binding(i)`, an array as a storage buffer, a scalar as a
//! uniform. Launching it is kernel.rs.

use std::borrow::Cow;
use std::sync::Arc;

use wgpu::naga;

use crate::element::DType;
use crate::error::{Error, Result};
use crate::kernel::signature::ParamKind;

/// The code of a shader as wgpu takes it.
#[derive(Debug)]
pub(crate) enum Code {
    Wgsl(String),
    SpirV(Vec<u32>),
}

#[derive(Debug)]
pub(crate) struct Shader {
    /// Names the pipeline in the device's cache: a hash of code and entry.
    pub(crate) key: String,
    pub(crate) code: Code,
    pub(crate) entry: String,
    pub(crate) params: Vec<ParamKind>,
    pub(crate) workgroup: [u32; 3],
}

/// A kernel's WGSL or SPIR-V, read and checked. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ShaderKernel(Arc<Shader>);

fn compile_error(log: String) -> Error {
    Error::Compile { log }
}

impl ShaderKernel {
    /// `source`'s compute entry point named `kernel` (or its only one).
    pub(crate) fn wgsl(kernel: &str, source: &str) -> Result<ShaderKernel> {
        let module = naga::front::wgsl::parse_str(source)
            .map_err(|e| compile_error(e.emit_to_string(source)))?;
        read(kernel, &module, Code::Wgsl(source.to_string()), source)
    }

    /// SPIR-V `bytes` (a whole module, little-endian words); entry point as
    /// for [`ShaderKernel::wgsl`].
    pub(crate) fn spirv(kernel: &str, bytes: &[u8]) -> Result<ShaderKernel> {
        let options = naga::front::spv::Options {
            adjust_coordinate_space: false,
            ..Default::default()
        };
        let module = naga::front::spv::parse_u8_slice(bytes, &options)
            .map_err(|e| compile_error(format!("SPIR-V: {e}")))?;
        let words = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        read(kernel, &module, Code::SpirV(words), "")
    }

    pub(crate) fn shader(&self) -> &Shader {
        &self.0
    }

    pub(crate) fn form(&self) -> &'static str {
        match self.0.code {
            Code::Wgsl(_) => "wgsl",
            Code::SpirV(_) => "spir-v",
        }
    }

    /// Declares the bindings at `arrays` (each bound as `array<u32>` or
    /// `array<atomic<u32>>`) to hold 16-bit elements two to a word, so a
    /// launch checks a `GpuArray<f16>`/`<bf16>` against them; a buffer is
    /// padded to whole words (buffer.rs), so an odd length binds too.
    pub(crate) fn with_word_arrays(mut self, arrays: &[(usize, DType)]) -> ShaderKernel {
        if arrays.is_empty() {
            return self;
        }
        // Just read, so not shared yet; were it shared, the bindings'
        // own u32 would stay and the launch would refuse the array.
        if let Some(shader) = Arc::get_mut(&mut self.0) {
            for &(i, d) in arrays {
                if let Some(ParamKind::Pointer { dtype, .. }) = shader.params.get_mut(i) {
                    *dtype = Some(d);
                }
            }
        }
        self
    }

    /// The parameters the bindings declare.
    pub(crate) fn params(&self) -> Option<Vec<ParamKind>> {
        Some(self.0.params.clone())
    }
}

fn dtype_of(scalar: naga::Scalar) -> Option<DType> {
    use naga::ScalarKind::{Float, Sint, Uint};
    Some(match (scalar.kind, scalar.width) {
        (Float, 4) => DType::F32,
        (Float, 8) => DType::F64,
        (Float, 2) => DType::F16,
        (Sint, 4) => DType::I32,
        (Uint, 4) => DType::U32,
        (Sint, 8) => DType::I64,
        (Uint, 8) => DType::U64,
        _ => return None,
    })
}

/// The scalar of a binding's type: a scalar, a runtime-sized array of one
/// (atomics too) or of vectors of one (`array<vec4<f32>>` reads an f32
/// array four at a time), or a struct wrapping either (as SPIR-V blocks do).
fn element(module: &naga::Module, ty: naga::Handle<naga::Type>, array: bool) -> Option<DType> {
    match &module.types[ty].inner {
        naga::TypeInner::Scalar(s) if !array => dtype_of(*s),
        naga::TypeInner::Array {
            base,
            size: naga::ArraySize::Dynamic,
            ..
        } if array => match &module.types[*base].inner {
            naga::TypeInner::Scalar(s)
            | naga::TypeInner::Atomic(s)
            | naga::TypeInner::Vector { scalar: s, .. } => dtype_of(*s),
            _ => None,
        },
        naga::TypeInner::Struct { members, .. } if members.len() == 1 => {
            element(module, members[0].ty, array)
        }
        _ => None,
    }
}

fn read(kernel: &str, module: &naga::Module, code: Code, source: &str) -> Result<ShaderKernel> {
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(module)
    .map_err(|e| compile_error(e.emit_to_string(source)))?;
    let computes: Vec<&naga::EntryPoint> = module
        .entry_points
        .iter()
        .filter(|e| e.stage == naga::ShaderStage::Compute)
        .collect();
    let ep = match computes.iter().find(|e| e.name == kernel) {
        Some(e) => *e,
        None if computes.len() == 1 => computes[0],
        None => {
            return Err(compile_error(format!(
                "no compute entry point `{kernel}` (found: {}); name it after the kernel",
                computes
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    if ep.workgroup_size_overrides.is_some() {
        return Err(compile_error(format!(
            "entry point `{}`: a workgroup size set by override constants; give it in numbers",
            ep.name
        )));
    }
    let mut bound: Vec<(u32, ParamKind)> = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let Some(at) = &var.binding else { continue };
        let name = var.name.as_deref().unwrap_or("(unnamed)");
        if at.group != 0 {
            return Err(compile_error(format!(
                "`{name}` is in @group({}); arguments are bound in group 0",
                at.group
            )));
        }
        let param = match var.space {
            naga::AddressSpace::Storage { access } => ParamKind::Pointer {
                dtype: Some(element(module, var.ty, true).ok_or_else(|| {
                    compile_error(format!(
                        "`{name}`: a storage binding must be an array of f32, f16, f64, i32, u32, i64 or u64, or of vectors of one"
                    ))
                })?),
                writable: access.contains(naga::StorageAccess::STORE),
            },
            naga::AddressSpace::Uniform => ParamKind::Scalar(element(module, var.ty, false).ok_or_else(|| {
                compile_error(format!(
                    "`{name}`: a uniform binding must be one f32, f16, f64, i32, u32, i64 or u64"
                ))
            })?),
            _ => {
                return Err(compile_error(format!(
                    "`{name}`: arguments are storage buffers (arrays) or uniforms (scalars), not textures or samplers"
                )));
            }
        };
        bound.push((at.binding, param));
    }
    bound.sort_by_key(|(b, _)| *b);
    if let Some((i, (b, _))) = bound.iter().enumerate().find(|(i, (b, _))| *b != *i as u32) {
        return Err(compile_error(format!(
            "binding {b} where binding {i} was expected: argument i is @binding(i), without gaps"
        )));
    }
    let bytes: Cow<'_, [u8]> = match &code {
        Code::Wgsl(s) => Cow::Borrowed(s.as_bytes()),
        Code::SpirV(w) => Cow::Owned(w.iter().flat_map(|w| w.to_le_bytes()).collect()),
    };
    let mut hasher = blake3::Hasher::new();
    hasher.update(&bytes);
    hasher.update(ep.name.as_bytes());
    Ok(ShaderKernel(Arc::new(Shader {
        key: format!("kernel/{}", hasher.finalize().to_hex()),
        code,
        entry: ep.name.clone(),
        params: bound.into_iter().map(|(_, p)| p).collect(),
        workgroup: ep.workgroup_size,
    })))
}
