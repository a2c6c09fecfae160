//! Arrays in device memory: one wgpu buffer each, sized to a whole number
//! of 4-byte words (wgpu copies and binds whole words, and the 16-bit ops
//! read two elements a word), plus the host-visible buffers that carry data
//! in and out.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use super::Vulkan;
use super::catch;
use super::device::VkDevice;
use super::errors::unsupported;
use super::spin;
use super::tracker::Tracker;
use super::transfer;
use crate::backend::Backend;
use crate::backend::BufferApi;
use crate::backend::unified::not_unified;
use crate::device::Location;
use crate::dlpack::sync::DlpackSync;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::lock::lock;
use unigpu_core::dlpack::ManagedTensor;

/// `len` elements of `T` in a wgpu buffer, with its pending uses.
pub(crate) struct VkBuffer<T> {
    pub(crate) buffer: wgpu::Buffer,
    pub(crate) len: usize,
    pub(crate) uses: Tracker,
    pub(crate) device: Arc<VkDevice>,
    _t: PhantomData<fn() -> T>,
}

// Unwind safe as `VkDevice` is (device.rs says why).
impl<T> std::panic::UnwindSafe for VkBuffer<T> {}
impl<T> std::panic::RefUnwindSafe for VkBuffer<T> {}

impl<T> std::fmt::Debug for VkBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VkBuffer")
            .field("len", &self.len)
            .field("bytes", &self.buffer.size())
            .finish()
    }
}

impl<T> Drop for VkBuffer<T> {
    fn drop(&mut self) {
        // wgpu keeps the memory until the work that uses it is done.
        self.device
            .allocated
            .fetch_sub(self.buffer.size(), Ordering::Relaxed);
    }
}

/// `bytes` rounded up to whole 16-byte vectors, at least one: wgpu has no
/// empty buffer, an empty array must still bind as an array of any element
/// type, and a macro kernel's widened loop binds its arrays as
/// `array<vec4<f32>>` (or `vec2` of 8-byte elements), whose length is the
/// binding's size over 16: padded so, the last vector holds the last
/// elements (crates/kernel-macros/src/widen.rs).
pub(crate) fn padded(bytes: usize) -> u64 {
    (bytes.max(16).div_ceil(16) * 16) as u64
}

fn out_of_memory(device: &VkDevice, requested: usize) -> Error {
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

impl<T: Element> VkBuffer<T> {
    /// `len` elements, zeroed (wgpu clears a buffer before its first use).
    pub(crate) fn zeros(device: &Arc<VkDevice>, len: usize) -> Result<VkBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| out_of_memory(device, usize::MAX))?;
        let size = padded(bytes);
        let buffer = create(
            device,
            bytes,
            size,
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            false,
        )?;
        device.allocated.fetch_add(size, Ordering::Relaxed);
        Ok(VkBuffer {
            buffer,
            len,
            uses: Tracker::default(),
            device: device.clone(),
            _t: PhantomData,
        })
    }

    /// The elements' bytes, without the padding.
    pub(crate) fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
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

fn no_dlpack() -> Error {
    Error::Dlpack {
        message: "a vulkan array cannot be shared through DLPack: wgpu gives no address or \
                  memory handle of its buffers to safe code; move it with to_context or \
                  download it"
            .into(),
    }
}

/// `alloc` is the contract's default, `zeros` (wgpu zeroes every buffer
/// it makes); `read` its default, a `download_into`.
impl BufferApi for Vulkan {
    fn zeros<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        VkBuffer::zeros(&stream.device, len)
    }

    fn from_host<T: Element>(stream: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        let mut buffer = VkBuffer::zeros(&stream.device, host.len())?;
        Self::upload(stream, host, &mut buffer)?;
        Ok(buffer)
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len
    }

    fn write<T: Element>(
        stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
        host: &[T],
    ) -> Result<()> {
        if let Some(done) = transfer::upload(stream, host, dst)? {
            // Polled first, as a sync is (spin.rs): the poller thread's
            // wake-up costs tens of µs, as much as a 1 MiB copy.
            spin::poll_for(&stream.device.device, spin::TRANSFER, || done.is_done());
            done.wait_done();
        }
        Ok(())
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        transfer::upload(stream, host, dst).map(drop)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        super::transfer::download_into(stream, src, host)
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        if src.len == 0 {
            return Ok(());
        }
        let (from, to) = (src.buffer.clone(), dst.buffer.clone());
        let size = from.size().min(to.size());
        stream.submit_replayable(
            &[&src.uses],
            &[&dst.uses],
            Arc::new(move |enc| {
                enc.copy_buffer_to_buffer(&from, 0, &to, 0, size);
                Ok(())
            }),
        )
    }

    fn alloc_unified<T: Element>(_: &Self::Stream, _: usize) -> Result<Self::Buffer<T>> {
        Err(unsupported(
            "alloc_unified: wgpu has no memory that the host and shaders address at once (a \
             mapped buffer cannot be used by the GPU); upload and download, or use pinned \
             buffers"
                .into(),
        ))
    }

    fn is_unified<T: Element>(_: &Self::Buffer<T>) -> bool {
        false
    }

    fn host_view<T: Element>(_: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>> {
        Err(not_unified(Backend::Vulkan))
    }

    fn host_view_mut<T: Element>(_: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>> {
        Err(not_unified(Backend::Vulkan))
    }

    fn prefetch<T: Element>(_: &Self::Stream, _: &Self::Buffer<T>, _: Location) -> Result<()> {
        Err(not_unified(Backend::Vulkan))
    }

    fn to_dlpack<T: Element>(
        _: &Self::Stream,
        _: &mut Self::Buffer<T>,
        _: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        Err(no_dlpack())
    }

    fn from_dlpack<T: Element>(_: &Self::Stream, _: ManagedTensor) -> Result<Self::Buffer<T>> {
        Err(no_dlpack())
    }
}

crate::backend::host_pinned::host_pinned_api!(Vulkan);
