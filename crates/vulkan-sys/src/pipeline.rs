//! A compute pipeline from WGSL in which the driver may not contract float
//! arithmetic (`a * b + c` into one fma): the WGSL is translated here, with
//! naga, as wgpu-hal's Vulkan backend would translate it, every float
//! multiply, add and subtract of the SPIR-V is decorated `NoContraction`
//! (no_contraction.rs), and the words go to the driver through wgpu's
//! passthrough (`Device::create_shader_module_passthrough`, `unsafe`,
//! which is why this is in the -sys crate).
//!
//! wgpu checks nothing of a passthrough module; what it would check, this
//! does: the WGSL is parsed and validated with the validator wgpu-core
//! makes for the device's features, and the module's bindings and
//! immediates are checked against the pipeline layout, which is made here
//! so nothing else can pair the module with another one.

use std::borrow::Cow;
use std::num::NonZeroU64;

use naga::back::spv;

use crate::float_controls::{self, FloatControls};
use crate::no_contraction::forbid_contraction;

/// What [`compute_pipeline`] builds from: `wgsl`'s compute entry point
/// `entry`, its one bind group (group 0) holding `bindings` (binding i is
/// `bindings[i]`), and `immediate_size` bytes of immediates (push
/// constants).
#[derive(Debug, Clone, Copy)]
pub struct ComputeShader<'a> {
    pub label: &'a str,
    pub wgsl: &'a str,
    pub entry: &'a str,
    pub bindings: &'a [wgpu::BindingType],
    pub immediate_size: u32,
}

/// A pipeline and the layout of its one bind group.
#[derive(Debug)]
pub struct Built {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Whether `device` can take the modules [`compute_pipeline`] makes (it
/// was opened with `Features::PASSTHROUGH_SHADERS`, and is Vulkan).
pub fn available(device: &wgpu::Device, adapter: &wgpu::AdapterInfo) -> bool {
    adapter.backend == wgpu::Backend::Vulkan
        && device
            .features()
            .contains(wgpu::Features::PASSTHROUGH_SHADERS)
}

/// The SPIR-V options wgpu-hal 30's Vulkan backend uses (its
/// `Adapter::open`), for what a compute shader can use: the same
/// capabilities, bounds checks (`Restrict`, as wgpu does without
/// VK_EXT_robustness2), loop bounding, integer division checks; SPIR-V
/// 1.0 (1.3 on a device with subgroup operations), which every Vulkan takes (wgpu picks the newest the device does;
/// naga writes the same arithmetic for each), and workgroup memory
/// zeroed by the shader itself (wgpu zeroes it through the driver where
/// it can; this cannot ask the driver).
fn options(features: wgpu::Features, downlevel: wgpu::DownlevelFlags) -> spv::Options<'static> {
    use spv::Capability as C;
    let mut caps = vec![
        C::Shader,
        C::Matrix,
        C::Sampled1D,
        C::Image1D,
        C::ImageQuery,
        C::DerivativeControl,
        C::StorageImageExtendedFormats,
    ];
    if downlevel.contains(wgpu::DownlevelFlags::CUBE_ARRAY_TEXTURES) {
        caps.push(C::SampledCubeArray);
    }
    if downlevel.contains(wgpu::DownlevelFlags::MULTISAMPLED_SHADING) {
        caps.push(C::SampleRateShading);
    }
    if features.contains(wgpu::Features::SHADER_INT64) {
        caps.push(C::Int64);
    }
    if features.contains(wgpu::Features::SHADER_F16) {
        caps.push(C::Float16);
    }
    if features.contains(wgpu::Features::SHADER_I16) {
        caps.push(C::Int16);
    }
    if features.intersects(
        wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS | wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX,
    ) {
        caps.push(C::Int64Atomics);
    }
    if features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC) {
        caps.push(C::AtomicFloat32AddEXT);
    }
    // Subgroup operations (the kernel language's `subgroup_add`, ...):
    // GroupNonUniform is SPIR-V 1.3, which a device with them (Vulkan
    // 1.1) takes.
    let subgroups = features.contains(wgpu::Features::SUBGROUP);
    if subgroups {
        caps.extend([
            C::GroupNonUniform,
            C::GroupNonUniformArithmetic,
            C::GroupNonUniformShuffle,
        ]);
    }
    let mut flags = spv::WriterFlags::FORCE_POINT_SIZE | spv::WriterFlags::LABEL_VARYINGS;
    flags.set(spv::WriterFlags::DEBUG, false);
    spv::Options {
        lang_version: if subgroups { (1, 3) } else { (1, 0) },
        flags,
        capabilities: Some(caps.into_iter().collect()),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Restrict,
            buffer: naga::proc::BoundsCheckPolicy::Restrict,
            image_load: naga::proc::BoundsCheckPolicy::Restrict,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::Polyfill,
        force_loop_bounding: true,
        ray_query_initialization_tracking: true,
        use_storage_input_output_16: false,
        fake_missing_bindings: false,
        binding_map: Default::default(),
        debug_info: None,
        task_dispatch_limits: None,
        mesh_shader_primitive_indices_clamp: true,
        trace_ray_argument_validation: true,
        emit_int_div_checks: true,
    }
}

/// What [`translate`] makes.
#[derive(Debug)]
pub struct Translated {
    /// The module, decorated.
    pub words: Vec<u32>,
    /// The bind group layout's entries.
    pub entries: Vec<wgpu::BindGroupLayoutEntry>,
    /// The entry point's `@workgroup_size`.
    pub workgroup: [u32; 3],
}

/// The SPIR-V of `shader`'s entry point, every float multiply, add and
/// subtract decorated `NoContraction`, and the layout entries of its
/// bind group (each binding's least size the shader's type, as wgpu
/// checks at a dispatch); or why not: the WGSL does not parse or
/// validate, or its bindings or immediates do not match the layout.
pub fn translate(
    shader: &ComputeShader<'_>,
    features: wgpu::Features,
    downlevel: wgpu::DownlevelFlags,
    preserve: &FloatControls,
) -> Result<Translated, String> {
    let src = shader.wgsl;
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    let info = wgpu_naga_bridge::create_validator(
        features,
        downlevel,
        naga::valid::ValidationFlags::all(),
    )
    .validate(&module)
    .map_err(|e| e.emit_to_string(src))?;
    let stage = naga::ShaderStage::Compute;
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((stage, shader.entry)),
        &Default::default(),
    )
    .map_err(|e| format!("override constants: {e}"))?;
    let workgroup = module
        .entry_points
        .iter()
        .find(|e| e.stage == stage && e.name == shader.entry)
        .ok_or_else(|| format!("no compute entry point `{}`", shader.entry))?
        .workgroup_size;
    let mut entries: Vec<wgpu::BindGroupLayoutEntry> = shader
        .bindings
        .iter()
        .enumerate()
        .map(|(i, ty)| wgpu::BindGroupLayoutEntry {
            binding: i as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: *ty,
            count: None,
        })
        .collect();
    for (_, var) in module.global_variables.iter() {
        let name = var.name.as_deref().unwrap_or("(unnamed)");
        let size = module.types[var.ty]
            .inner
            .try_size(module.to_ctx())
            .ok_or_else(|| format!("`{name}`: a type too large"))?;
        if var.space == naga::AddressSpace::Immediate && size > shader.immediate_size {
            return Err(format!(
                "`{name}`: {size} bytes of immediates, the layout has {}",
                shader.immediate_size
            ));
        }
        let Some(at) = &var.binding else { continue };
        let entry = entries
            .get_mut(at.binding as usize)
            .filter(|_| at.group == 0)
            .ok_or_else(|| {
                format!(
                    "`{name}` is at @group({}) @binding({}), which the layout lacks",
                    at.group, at.binding
                )
            })?;
        let wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size,
        } = &mut entry.ty
        else {
            return Err(format!(
                "`{name}`: the layout's binding is not a plain buffer"
            ));
        };
        let fits = match (var.space, *ty) {
            (naga::AddressSpace::Uniform, wgpu::BufferBindingType::Uniform) => true,
            (
                naga::AddressSpace::Storage { access },
                wgpu::BufferBindingType::Storage { read_only },
            ) => read_only != access.contains(naga::StorageAccess::STORE),
            _ => false,
        };
        if !fits {
            return Err(format!(
                "`{name}` is {:?}, the layout's binding {} is {ty:?}",
                var.space, at.binding
            ));
        }
        if min_binding_size.is_none() {
            *min_binding_size = NonZeroU64::new(u64::from(size));
        }
    }
    // wgpu-hal numbers a layout's Vulkan bindings by the entries' order
    // (its `create_bind_group_layout`, `next_binding`) and writes each
    // module with that map; the entries here are bindings 0, 1, ... in
    // order, so binding i of group 0 is Vulkan binding i of set 0.
    let mut options = options(features, downlevel);
    options.binding_map = (0..entries.len() as u32)
        .map(|binding| {
            (
                naga::ResourceBinding { group: 0, binding },
                spv::BindingInfo {
                    descriptor_set: 0,
                    binding,
                    binding_array_size: None,
                },
            )
        })
        .collect();
    let words = spv::write_vec(
        &module,
        &info,
        &options,
        Some(&spv::PipelineOptions {
            shader_stage: stage,
            entry_point: shader.entry.to_string(),
        }),
    )
    .map_err(|e| format!("translating to SPIR-V: {e}"))?;
    let words = forbid_contraction(&words).map_err(|e| e.to_string())?;
    let words = float_controls::request(&words, preserve).map_err(|e| e.to_string())?;
    Ok(Translated {
        words,
        entries,
        workgroup,
    })
}

/// `shader` as a pipeline on `device` whose float arithmetic the driver
/// may not contract; an error as for [`translate`], or when `device`
/// cannot take passthrough modules. What wgpu reports of the calls (it
/// should report nothing) goes to `device`'s error scopes and handler.
pub fn compute_pipeline(
    device: &wgpu::Device,
    downlevel: wgpu::DownlevelFlags,
    shader: &ComputeShader<'_>,
) -> Result<Built, String> {
    let features = device.features();
    if !features.contains(wgpu::Features::PASSTHROUGH_SHADERS) {
        return Err("the device was opened without PASSTHROUGH_SHADERS".into());
    }
    let Translated {
        words,
        entries,
        workgroup: [x, y, z],
    } = translate(shader, features, downlevel, &float_controls::query(device))?;
    // SAFETY: wgpu hands these words to vkCreateShaderModule unchecked.
    // They are valid SPIR-V for this device and this pipeline: naga wrote
    // them from a module that parsed and passed the validator wgpu itself
    // would use for this device's features (`translate`), with the options
    // wgpu-hal uses (bounds checks included), for the one entry point the
    // pipeline below names; `forbid_contraction` only adds `OpDecorate`
    // instructions of an existing decoration (NoContraction, valid on any
    // of the arithmetic results it names) to the annotations section,
    // where SPIR-V's layout puts them, and makes no id; `request` adds
    // only float-controls capabilities, their extension and execution
    // modes the device reports it supports (`query`, Vulkan 1.2, where
    // the extension is core), each in its section, and makes no id. Its descriptor
    // numbers are those wgpu-hal gives the layout below (`translate`'s
    // binding map). The module is used
    // only with the layout made below from the same `entries` that
    // `translate` checked every binding and the immediates against, so
    // the descriptors the shader reads are those the layout declares.
    let module = unsafe {
        device.create_shader_module_passthrough(wgpu::ShaderModuleDescriptorPassthrough {
            label: Some(shader.label),
            entry_points: Cow::Owned(vec![wgpu::PassthroughShaderEntryPoint {
                name: Cow::Borrowed(shader.entry),
                workgroup_size: (x, y, z),
            }]),
            spirv: Some(Cow::Owned(words)),
            ..Default::default()
        })
    };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(shader.label),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(shader.label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: shader.immediate_size,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(shader.label),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some(shader.entry),
        compilation_options: Default::default(),
        cache: None,
    });
    Ok(Built { pipeline, layout })
}
