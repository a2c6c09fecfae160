//! Arrays in device memory: one wgpu buffer each, sized to a whole number
//! of 16-byte vectors (`wgpu_buffer.rs` says why), and the contract's
//! `BufferApi` on them; transfers from and into host memory are
//! `transfer.rs`'s.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Vulkan;
use super::device::VkDevice;
use super::errors::unsupported;
use super::spin;
use super::tracker::Tracker;
use super::transfer;
use super::wgpu_buffer::{create, out_of_memory, padded};
use crate::backend::Backend;
use crate::backend::BufferApi;
use crate::backend::unified::not_unified;
use crate::device::Location;
use crate::dlpack::sync::DlpackSync;
use crate::element::Element;
use crate::error::{Error, Result};
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
        let data = bytemuck::cast_slice(host);
        if let Some(done) = transfer::upload(stream, data, &dst.buffer, &dst.uses)? {
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
        let data = bytemuck::cast_slice(host);
        transfer::upload(stream, data, &dst.buffer, &dst.uses).map(drop)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        let out = bytemuck::cast_slice_mut(host);
        transfer::download_into(stream, &src.buffer, &src.uses, out)
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
