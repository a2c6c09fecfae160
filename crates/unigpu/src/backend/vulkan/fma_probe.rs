//! Whether the device's `fma` rounds once. WGSL lets `fma` round twice, and
//! lavapipe does; the built-in axpy promises one rounding, so where `fma`
//! is not fused it uses an emulation (shaders/mod.rs). Asked once, when
//! the device opens, with values whose fused and unfused results differ:
//! (1 + 2^-s)² - (1 + 2^-(s-1)) is 2^-2s exactly, 0 when rounded twice.

use super::catch::Catch;
use crate::error::{Error, Result};

const WGSL_F32: &str = "
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() { o[2] = fma(o[0], o[0], o[1]); }
";

const WGSL_F64: &str = "
@group(0) @binding(0) var<storage, read_write> o: array<f64>;
@compute @workgroup_size(1) fn main() { o[2] = fma(o[0], o[0], o[1]); }
";

fn run(
    ordinal: usize,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    wgsl: &str,
    data: &[u8],
    width: usize,
) -> Result<bool> {
    let failed = |what: &str| Error::BackendUnavailable {
        backend: crate::backend::Backend::Vulkan,
        reason: format!("the device failed a first shader ({what})"),
    };
    let catch = Catch::open(ordinal, wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("unigpu fma probe"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("unigpu fma probe"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: data.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    buffer
        .get_mapped_range_mut(..)
        .map_err(|e| failed(&e.to_string()))?
        .copy_from_slice(data);
    buffer.unmap();
    let back = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: data.len() as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    enc.copy_buffer_to_buffer(&buffer, 0, &back, 0, data.len() as u64);
    queue.submit([enc.finish()]);
    back.map_async(wgpu::MapMode::Read, .., |_| {});
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| failed(&e.to_string()))?;
    if let Some(e) = catch.close() {
        return Err(failed(&e.to_string()));
    }
    let view = back
        .get_mapped_range(..)
        .map_err(|e| failed(&e.to_string()))?;
    // Fused: the third value is not zero.
    Ok(view[2 * width..3 * width].iter().any(|&b| b != 0))
}

/// (f32 `fma` is fused, f64 `fma` is fused); f64 is asked only with `f64`.
/// `ordinal`: the adapter's, which the device's error handler catches by.
pub(crate) fn fused(
    ordinal: usize,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    f64: bool,
) -> Result<(bool, bool)> {
    let a = 1.0f32 + 2f32.powi(-12);
    let c = -(1.0f32 + 2f32.powi(-11));
    let data: Vec<u8> = [a, c, 0.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let single = run(ordinal, device, queue, WGSL_F32, &data, 4)?;
    let double = if f64 {
        let a = 1.0f64 + 2f64.powi(-27);
        let c = -(1.0f64 + 2f64.powi(-26));
        let data: Vec<u8> = [a, c, 0.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        run(ordinal, device, queue, WGSL_F64, &data, 8)?
    } else {
        false
    };
    Ok((single, double))
}
