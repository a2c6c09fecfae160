//! User kernels in WGSL or SPIR-V: read with naga when attached (so a
//! malformed shader fails at once, and its bindings are known), compiled
//! into a pipeline once per device and code, and launched with argument i
//! bound at `@group(0) @binding(i)`: arrays as storage buffers, scalars as
//! uniforms.

use std::borrow::Cow;
use std::sync::Arc;

use wgpu::naga;

use super::device::{Pipeline, VkDevice};
use super::stream::VkStream;
use super::tracker::Tracker;
use super::{Vulkan, unsupported};
use crate::backend::code::KernelRef;
use crate::backend::contract::LaunchArg;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::grid::Grid;
use crate::kernel::scalar::Scalar;
use crate::kernel::signature::ParamKind;

/// The code of a shader as wgpu takes it.
#[derive(Debug)]
enum Code {
    Wgsl(String),
    SpirV(Vec<u32>),
}

#[derive(Debug)]
struct Shader {
    /// Names the pipeline in the device's cache: a hash of code and entry.
    key: String,
    code: Code,
    entry: String,
    params: Vec<ParamKind>,
    workgroup: [u32; 3],
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

    pub(crate) fn form(&self) -> &'static str {
        match self.0.code {
            Code::Wgsl(_) => "wgsl",
            Code::SpirV(_) => "spir-v",
        }
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
/// (atomics too), or a struct wrapping either (as SPIR-V blocks do).
fn element(module: &naga::Module, ty: naga::Handle<naga::Type>, array: bool) -> Option<DType> {
    match &module.types[ty].inner {
        naga::TypeInner::Scalar(s) if !array => dtype_of(*s),
        naga::TypeInner::Array {
            base,
            size: naga::ArraySize::Dynamic,
            ..
        } if array => match &module.types[*base].inner {
            naga::TypeInner::Scalar(s) | naga::TypeInner::Atomic(s) => dtype_of(*s),
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
                        "`{name}`: a storage binding must be an array of f32, f16, f64, i32, u32, i64 or u64"
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

/// A buffer of any element type, as a launch argument.
#[derive(Debug)]
pub(crate) struct VkArg<'a> {
    pub(crate) buffer: &'a wgpu::Buffer,
    pub(crate) uses: &'a Tracker,
    pub(crate) dtype: DType,
    pub(crate) writable: bool,
}

fn bad(kernel: &str, message: String) -> Error {
    Error::KernelArgs {
        kernel: kernel.to_string(),
        message,
    }
}

fn compiled(device: &VkDevice, shader: &Shader) -> Result<Arc<Pipeline>> {
    device.pipeline(&shader.key, || {
        let types: Vec<wgpu::BindingType> = shader
            .params
            .iter()
            .map(|p| match p {
                ParamKind::Pointer { writable, .. } => VkDevice::storage(!writable),
                ParamKind::Scalar(_) => VkDevice::uniform(),
            })
            .collect();
        let source = match &shader.code {
            Code::Wgsl(s) => wgpu::ShaderSource::Wgsl(Cow::Borrowed(s)),
            Code::SpirV(w) => wgpu::ShaderSource::SpirV(Cow::Borrowed(w)),
        };
        device.build_pipeline(&shader.entry, source, &shader.entry, &types, 0)
    })
}

/// Bytes each scalar's uniform takes in the launch's one uniform buffer.
const SCALAR_SLOT: u64 = 16;

pub(crate) fn launch<'a>(
    stream: &Arc<VkStream>,
    kernel: KernelRef<'_>,
    grid: Grid,
    args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Vulkan>>>,
) -> Result<()> {
    let name = kernel.name;
    let shader = kernel.shader().ok_or_else(|| {
        unsupported(format!(
            "kernel `{name}` has no WGSL or SPIR-V code; attach one with Kernel::with_wgsl or Kernel::with_spirv"
        ))
    })?;
    let shader = &shader.0;
    let args = args.collect::<Result<Vec<_>>>()?;
    let device = &stream.device;
    if args.len() != shader.params.len() {
        return Err(bad(
            name,
            format!(
                "the shader binds {} arguments, the launch passes {}",
                shader.params.len(),
                args.len()
            ),
        ));
    }
    let block = [grid.block.0, grid.block.1, grid.block.2];
    if block != shader.workgroup {
        return Err(bad(
            name,
            format!(
                "launched with blocks of {block:?}, but the shader's @workgroup_size is {:?}",
                shader.workgroup
            ),
        ));
    }
    if grid.shared_mem_bytes > 0 {
        return Err(unsupported(format!(
            "kernel `{name}`: dynamic shared memory; WGSL sizes workgroup memory in the shader (var<workgroup>)"
        )));
    }
    let max = device.limits.max_compute_workgroups_per_dimension;
    let dims = [grid.grid.0, grid.grid.1, grid.grid.2];
    if dims.iter().any(|&d| d > max) {
        return Err(bad(
            name,
            format!(
                "a grid of {dims:?} workgroups: adapter {} allows {max} per dimension",
                device.info.name
            ),
        ));
    }
    let align = u64::from(device.limits.min_uniform_buffer_offset_alignment).max(SCALAR_SLOT);
    let scalars: Vec<(usize, Scalar)> = args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            LaunchArg::Scalar(s) => Some((i, *s)),
            LaunchArg::Buffer(_) => None,
        })
        .collect();
    let uniforms = if scalars.is_empty() {
        None
    } else {
        let mut bytes = vec![0u8; scalars.len() * align as usize];
        for (slot, (_, s)) in scalars.iter().enumerate() {
            let at = slot * align as usize;
            bytes[at..at + s.bytes().len()].copy_from_slice(s.bytes());
        }
        let buf = super::buffer::create(
            device,
            bytes.len(),
            bytes.len() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            true,
        )?;
        buf.get_mapped_range_mut(..)
            .map_err(|e| Error::StreamWork {
                message: format!("kernel `{name}`: writing its scalars: {e}"),
            })?
            .copy_from_slice(&bytes);
        buf.unmap();
        Some(buf)
    };
    let mut entries = Vec::with_capacity(args.len());
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    let mut slot = 0u64;
    for (i, (arg, param)) in args.iter().zip(&shader.params).enumerate() {
        let resource = match (arg, param) {
            (LaunchArg::Buffer(b), ParamKind::Pointer { dtype, writable }) => {
                if dtype.is_some_and(|d| d != b.dtype) {
                    return Err(bad(
                        name,
                        format!(
                            "binding {i} is an array of {}, but a GpuArray<{}> was passed",
                            param_type(param),
                            b.dtype
                        ),
                    ));
                }
                if *writable && !b.writable {
                    return Err(bad(
                        name,
                        format!("binding {i} is read_write: pass the array as &mut"),
                    ));
                }
                if *writable {
                    writes.push(b.uses);
                } else {
                    reads.push(b.uses);
                }
                b.buffer.as_entire_binding()
            }
            (LaunchArg::Scalar(s), ParamKind::Scalar(d)) => {
                if s.dtype() != *d {
                    return Err(bad(
                        name,
                        format!(
                            "binding {i} is a uniform {d}, but a {} value was passed",
                            s.dtype()
                        ),
                    ));
                }
                let u = uniforms.as_ref().ok_or_else(|| Error::StreamWork {
                    message: format!(
                        "kernel `{name}`: a scalar argument without its uniform buffer"
                    ),
                })?;
                let r = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: u,
                    offset: slot * align,
                    size: std::num::NonZeroU64::new(s.bytes().len() as u64),
                });
                slot += 1;
                r
            }
            (LaunchArg::Buffer(b), ParamKind::Scalar(d)) => {
                return Err(bad(
                    name,
                    format!(
                        "binding {i} is a uniform {d}, but a GpuArray<{}> was passed",
                        b.dtype
                    ),
                ));
            }
            (LaunchArg::Scalar(s), ParamKind::Pointer { .. }) => {
                return Err(bad(
                    name,
                    format!(
                        "binding {i} is a storage array, but a {} value was passed",
                        s.dtype()
                    ),
                ));
            }
        };
        entries.push(wgpu::BindGroupEntry {
            binding: i as u32,
            resource,
        });
    }
    let pipeline = compiled(device, shader)?;
    let bind = device.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(name),
        layout: &pipeline.layout,
        entries: &entries,
    });
    stream.submit_replayable(
        &reads,
        &writes,
        Arc::new(move |enc| {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&pipeline.pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(dims[0], dims[1], dims[2]);
            Ok(())
        }),
    )
}

fn param_type(p: &ParamKind) -> String {
    match p {
        ParamKind::Pointer { dtype: Some(d), .. } | ParamKind::Scalar(d) => d.to_string(),
        ParamKind::Pointer { dtype: None, .. } => "any type".into(),
    }
}

/// `buffer` as an argument.
pub(crate) fn arg<T: Element>(buffer: &super::buffer::VkBuffer<T>, writable: bool) -> VkArg<'_> {
    VkArg {
        buffer: &buffer.buffer,
        uses: &buffer.uses,
        dtype: T::DTYPE,
        writable,
    }
}
