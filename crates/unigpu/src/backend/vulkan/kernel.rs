//! Launching a kernel's shader: checked against its bindings, compiled
//! into a pipeline once per device and code (the device's cache), and
//! recorded as replayable work on the stream.

use std::borrow::Cow;
use std::sync::Arc;

use super::Vulkan;
use super::buffer::VkBuffer;
use super::device::{Pipeline, VkDevice};
use super::errors::unsupported;
use super::shader::{Code, Shader, ShaderKernel};
use super::stream::VkStream;
use super::tracker::Tracker;
use crate::backend::Backend;
use crate::backend::KernelApi;
use crate::backend::code::{KernelCode, KernelRef, ModuleCode, Program, ShaderSource};
use crate::backend::contract::LaunchArg;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat, Origin};
use crate::kernel::signature::KernelDecl;
use crate::kernel::signature::ParamKind;
use unigpu_core::Grid;
use unigpu_core::Scalar;

/// One launch argument: a value, or an array.
#[derive(Debug)]
pub(crate) enum KernelArg<'a> {
    Scalar(Scalar),
    Buffer(VkArg<'a>),
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
                // A shader's bindings read as pointers and scalars only.
                ParamKind::Scalar(_) | ParamKind::Integer { .. } | ParamKind::Bytes { .. } => {
                    VkDevice::uniform()
                }
            })
            .collect();
        let source = match &shader.code {
            Code::Wgsl(s) => wgpu::ShaderSource::Wgsl(Cow::Borrowed(s)),
            Code::SpirV(w) => wgpu::ShaderSource::SpirV(Cow::Borrowed(w)),
        };
        device.build_pipeline(&shader.entry, source, &shader.entry, &types, 0, true)
    })
}

/// Bytes each scalar's uniform takes in the launch's one uniform buffer.
const SCALAR_SLOT: u64 = 16;

pub(crate) fn launch(
    stream: &Arc<VkStream>,
    name: &str,
    shader: &ShaderKernel,
    grid: Grid,
    args: Vec<KernelArg<'_>>,
) -> Result<()> {
    let shader = shader.shader();
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
            KernelArg::Scalar(s) => Some((i, *s)),
            KernelArg::Buffer(_) => None,
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
        let buf = device.uniforms.get(&bytes, || {
            let buf = super::wgpu_buffer::create(
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
            Ok(buf)
        })?;
        Some(buf)
    };
    let mut entries = Vec::with_capacity(args.len());
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    let mut slot = 0u64;
    for (i, (arg, param)) in args.iter().zip(&shader.params).enumerate() {
        let resource = match (arg, param) {
            (KernelArg::Buffer(b), ParamKind::Pointer { dtype, writable }) => {
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
            (KernelArg::Scalar(s), ParamKind::Scalar(d)) => {
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
            (KernelArg::Buffer(b), ParamKind::Scalar(d)) => {
                return Err(bad(
                    name,
                    format!(
                        "binding {i} is a uniform {d}, but a GpuArray<{}> was passed",
                        b.dtype
                    ),
                ));
            }
            (KernelArg::Scalar(s), ParamKind::Pointer { .. }) => {
                return Err(bad(
                    name,
                    format!(
                        "binding {i} is a storage array, but a {} value was passed",
                        s.dtype()
                    ),
                ));
            }
            // Bindings read from a shader are never these.
            (_, ParamKind::Integer { .. } | ParamKind::Bytes { .. }) => {
                return Err(bad(
                    name,
                    format!("binding {i} is `{param}`, which no shader binding is"),
                ));
            }
        };
        entries.push(wgpu::BindGroupEntry {
            binding: i as u32,
            resource,
        });
    }
    let pipeline = compiled(device, shader)?;
    let bind = device
        .checked("binding the arguments", || {
            device.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &pipeline.layout,
                entries: &entries,
            })
        })
        .map_err(|e| bad(name, e.to_string()))?;
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
        other => other.to_string(),
    }
}

/// `buffer` as an argument.
pub(crate) fn arg<T: Element>(buffer: &VkBuffer<T>, writable: bool) -> VkArg<'_> {
    VkArg {
        buffer: &buffer.buffer,
        uses: &buffer.uses,
        dtype: T::DTYPE,
        writable,
    }
}

impl KernelApi for Vulkan {
    /// Nothing to compile from CUDA C++: kernels run their WGSL or SPIR-V.
    fn compile(_: &Self::Device, _: &str, _: &CompileOptions, _: &[KernelDecl]) -> Result<Program> {
        Ok(Program {
            origin: Origin::NotCompiled,
            log: String::new(),
            code: ModuleCode::Host,
        })
    }

    fn load_image(_: &Self::Device, format: ImageFormat, _: &[u8]) -> Result<Program> {
        Err(Error::Unsupported {
            backend: Backend::Vulkan,
            what: format!(
                "loading {format} code: a CUDA image cannot run on a Vulkan device; give the kernel a shader (Kernel::from_wgsl, Kernel::from_spirv)"
            ),
        })
    }

    fn shader_kernel(
        name: &str,
        source: ShaderSource<'_>,
        word_arrays: &[(usize, DType)],
    ) -> Result<KernelCode> {
        let shader = match source {
            ShaderSource::Wgsl(text) => ShaderKernel::wgsl(name, text)?,
            ShaderSource::Spirv(bytes) => ShaderKernel::spirv(name, bytes)?,
        };
        Ok(KernelCode::Shader(shader.with_word_arrays(word_arrays)))
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        arg(buffer, false)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        arg(buffer, true)
    }

    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let name = kernel.name;
        let shader = kernel.shader().ok_or_else(|| {
            unsupported(format!(
                "kernel `{name}` has no WGSL or SPIR-V code; attach one with Kernel::with_wgsl \
                 or Kernel::with_spirv"
            ))
        })?;
        let args = args
            .map(|a| {
                a.map(|a| match a {
                    LaunchArg::Scalar(s) => KernelArg::Scalar(s),
                    LaunchArg::Buffer(b) => KernelArg::Buffer(b),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        launch(stream, name, shader, grid, args)
    }
}
