//! wgpu buffers as such, below the arrays: their sizes in whole 16-byte
//! vectors, their creation with out-of-memory caught, the host-readable
//! buffers downloads land in, and waiting for a buffer to be mapped. What
//! arrays (`buffer.rs`), transfers (`transfer.rs`), ops and events share.

use std::sync::{Arc, Condvar, Mutex};

use super::catch;
use super::device::VkDevice;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::lock::lock;

/// `bytes` rounded up to whole 16-byte vectors, at least one: wgpu has no
/// empty buffer, an empty array must still bind as an array of any element
/// type, and a macro kernel's widened loop binds its arrays as
/// `array<vec4<f32>>` (or `vec2` of 8-byte elements), whose length is the
/// binding's size over 16: padded so, the last vector holds the last
/// elements (crates/kernel-macros/src/widen.rs).
pub(crate) fn padded(bytes: usize) -> u64 {
    (bytes.max(16).div_ceil(16) * 16) as u64
}

pub(crate) fn out_of_memory(device: &VkDevice, requested: usize) -> Error {
    Error::OutOfMemory {
        requested,
        free: device.memory_info().map_or(0, |m| m.free),
    }
}

/// A buffer of `size` bytes with `usage`, or `OutOfMemory` /
/// `Unsupported` (past the adapter's largest buffer) for `requested` bytes.
pub(crate) fn create(
    device: &VkDevice,
    requested: usize,
    size: u64,
    usage: wgpu::BufferUsages,
    mapped: bool,
) -> Result<wgpu::Buffer> {
    if size > device.limits.max_buffer_size {
        let total = device.memory_info().map_or(0, |m| m.total);
        if requested > total {
            return Err(out_of_memory(device, requested));
        }
        return Err(Error::Unsupported {
            backend: Backend::Vulkan,
            what: format!(
                "an array of {requested} bytes: adapter {} makes buffers of at most {} bytes",
                device.info.name, device.limits.max_buffer_size
            ),
        });
    }
    let made = catch::caught(device.ordinal, wgpu::ErrorFilter::OutOfMemory, || {
        device.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage,
            mapped_at_creation: mapped,
        })
    });
    match made {
        (buffer, None) => Ok(buffer),
        (_, Some(_)) => Err(out_of_memory(device, requested)),
    }
}

/// A host-readable buffer of `bytes` (padded) for a download to land in.
pub(crate) fn readback(device: &VkDevice, bytes: usize) -> Result<wgpu::Buffer> {
    create(
        device,
        bytes,
        padded(bytes),
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        false,
    )
}

/// A map's outcome: `None` until the callback runs, then why it failed,
/// if it did.
type MapOutcome = Mutex<Option<std::result::Result<(), String>>>;

/// Set by a map callback; waited for by the thread that reads the mapping.
#[derive(Debug, Clone, Default)]
pub(crate) struct MapSignal(Arc<(MapOutcome, Condvar)>);

impl MapSignal {
    /// The callback to hand `map_buffer_on_submit`.
    pub(crate) fn callback(
        &self,
    ) -> impl FnOnce(std::result::Result<(), wgpu::BufferAsyncError>) + Send + 'static {
        let me = self.clone();
        move |r| {
            let (slot, cv) = &*me.0;
            *lock(slot) = Some(r.map_err(|e| e.to_string()));
            cv.notify_all();
        }
    }

    /// Whether the callback has run.
    pub(crate) fn is_set(&self) -> bool {
        lock(&self.0.0).is_some()
    }

    /// Blocks until the buffer is mapped, or says why it could not be.
    pub(crate) fn wait(&self, what: &str) -> Result<()> {
        let (slot, cv) = &*self.0;
        let mut s = lock(slot);
        while s.is_none() {
            s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        match &*s {
            Some(Err(e)) => Err(Error::StreamWork {
                message: format!("{what}: the device could not map the result ({e})"),
            }),
            _ => Ok(()),
        }
    }
}

/// Copies the first `out.len()` bytes of mapped `buffer` into `out`.
pub(crate) fn read_mapped(buffer: &wgpu::Buffer, out: &mut [u8], what: &str) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let view = buffer
        .get_mapped_range(..padded(out.len()))
        .map_err(|e| Error::StreamWork {
            message: format!("{what}: {e}"),
        })?;
    super::staging::read_mapped_into(out, &view[..out.len()]);
    Ok(())
}
