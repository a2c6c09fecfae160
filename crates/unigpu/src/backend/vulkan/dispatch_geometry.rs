//! How work is cut to fit the adapter: the workgroup grid of an
//! element-wise dispatch, and the slices of an array one binding can hold.

use std::num::NonZeroU64;

use super::device::VkDevice;
use crate::backend::Backend;
use crate::error::{Error, Result};

/// Invocations per workgroup of the 1-D shaders.
pub(crate) const GROUP: u64 = 256;

/// A grid of at least `units` invocations: `(x, y)` workgroups and the
/// invocations of one grid row, which the shaders index by.
pub(crate) fn grid(device: &VkDevice, units: u64) -> Result<(u32, u32, u32)> {
    let max = u64::from(device.limits.max_compute_workgroups_per_dimension).max(1);
    let groups = units.div_ceil(GROUP).max(1);
    let x = groups.min(max);
    let y = groups.div_ceil(x);
    if y > max {
        return Err(Error::Unsupported {
            backend: Backend::Vulkan,
            what: format!("an op over {units} elements: more than {max}² workgroups"),
        });
    }
    Ok((x as u32, y as u32, (x * GROUP) as u32))
}

/// `units` array elements of `unit_bytes` each, cut into runs that one
/// storage binding can hold, each starting on a 256-byte boundary (every
/// adapter's offset alignment divides 256): `(first unit, units)` pairs.
pub(crate) fn chunks(device: &VkDevice, units: usize, unit_bytes: usize) -> Vec<(usize, usize)> {
    let max_bytes = (device.limits.max_storage_buffer_binding_size / 256 * 256).max(256);
    let per = (max_bytes as usize / unit_bytes).max(1);
    (0..units)
        .step_by(per)
        .map(|first| (first, per.min(units - first)))
        .collect()
}

/// The bytes `[first, first + count)` units of `buffer`, as a binding.
pub(crate) fn slice(
    buffer: &wgpu::Buffer,
    first: usize,
    count: usize,
    unit_bytes: usize,
) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset: (first * unit_bytes) as u64,
        size: NonZeroU64::new((count * unit_bytes) as u64),
    })
}

/// Whether a whole array of `bytes` fits one binding; else why not.
pub(crate) fn fits(device: &VkDevice, what: &str, bytes: usize) -> Result<()> {
    let max = device.limits.max_storage_buffer_binding_size;
    if bytes as u64 > max {
        return Err(Error::Unsupported {
            backend: Backend::Vulkan,
            what: format!(
                "{what}: an operand of {bytes} bytes, more than adapter {} binds at once ({max} bytes)",
                device.info.name
            ),
        });
    }
    Ok(())
}
