//! The CUDA backend's buffers (`BufferApi`) and page-locked host buffers
//! (`PinnedApi`): device memory through `unigpu-cuda-safe`.

use unigpu_core::dlpack::ManagedTensor;
use unigpu_cuda_safe::{DeviceBuffer, KernelParam, ManagedLocation, PinnedBuffer};

use super::Cuda;
use crate::backend::{Backend, BufferApi, PinnedApi};
use crate::device::Location;
use crate::dlpack::sync::DlpackSync;
use crate::element::Element;
use crate::error::Result;

/// `read` is the contract's default, a `download_into` (a blocking
/// `cuMemcpyDtoHAsync` on the stream).
impl BufferApi for Cuda {
    fn alloc<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::alloc(&stream.handle, len)?)
    }

    fn zeros<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::zeros(&stream.handle, len)?)
    }

    fn from_host<T: Element>(stream: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::from_host(&stream.handle, host)?)
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len()
    }

    fn read_vec<T: Element>(stream: &Self::Stream, src: &Self::Buffer<T>) -> Result<Vec<T>> {
        Ok(src.to_host(&stream.handle)?)
    }

    fn write<T: Element>(
        stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
        host: &[T],
    ) -> Result<()> {
        Ok(dst.write_from(&stream.handle, host)?)
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        Ok(dst.write_from(&stream.handle, host)?)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        Ok(src.read_into(&stream.handle, host)?)
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        Ok(src.copy_to(&stream.handle, dst)?)
    }

    /// Direct where the devices reach each other (peer access, enabled on
    /// first use), else staged through page-locked host memory; set
    /// `UNIGPU_PEER_ACCESS=0` to stage every copy (to compare the paths).
    fn copy_between_devices<T: Element>(
        src_stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst_stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        static STAGED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let staged =
            *STAGED.get_or_init(|| std::env::var("UNIGPU_PEER_ACCESS").as_deref() == Ok("0"));
        src.copy_to_device(&src_stream.handle, dst, &dst_stream.handle, staged)?;
        Ok(())
    }

    /// `cuMemAllocManaged` memory, checked against the driver's free bytes
    /// (managed memory is never over-subscribed here: that can hang the
    /// GPU), made resident on the device and zeroed there.
    fn alloc_unified<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::managed(&stream.handle, len)?)
    }

    fn is_unified<T: Element>(buffer: &Self::Buffer<T>) -> bool {
        buffer.is_managed()
    }

    fn host_view<T: Element>(buffer: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>> {
        not_unified::<T>(buffer)?;
        Ok(buffer.managed_slice()?)
    }

    fn host_view_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>> {
        not_unified::<T>(buffer)?;
        Ok(buffer.managed_slice_mut()?)
    }

    /// `cuMemPrefetchAsync` to the device or the host.
    fn prefetch<T: Element>(
        stream: &Self::Stream,
        buffer: &Self::Buffer<T>,
        to: Location,
    ) -> Result<()> {
        not_unified::<T>(buffer)?;
        let to = match to {
            Location::Device => ManagedLocation::Device,
            Location::Host => ManagedLocation::Host,
        };
        Ok(buffer.prefetch(&stream.handle, to)?)
    }

    fn to_dlpack<T: Element>(
        stream: &Self::Stream,
        buffer: &mut Self::Buffer<T>,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        let (tensor, ready) = buffer.to_dlpack(&stream.handle)?;
        match sync {
            DlpackSync::Host => ready.synchronize()?,
            DlpackSync::Stream(consumer) => consumer.wait(&ready)?,
            DlpackSync::Unordered => {}
        }
        Ok(tensor)
    }

    fn from_dlpack<T: Element>(
        stream: &Self::Stream,
        tensor: ManagedTensor,
    ) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::from_dlpack(&stream.handle, tensor)?)
    }
}

impl PinnedApi for Cuda {
    type Pinned<T: Element> = PinnedBuffer<T>;

    fn pinned<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Pinned<T>> {
        Ok(PinnedBuffer::new(&stream.device.driver, len)?)
    }

    fn pinned_len<T: Element>(pinned: &Self::Pinned<T>) -> usize {
        pinned.len()
    }

    fn pinned_slice<T: Element>(pinned: &Self::Pinned<T>) -> Result<&[T]> {
        Ok(pinned.as_slice()?)
    }

    fn pinned_slice_mut<T: Element>(pinned: &mut Self::Pinned<T>) -> Result<&mut [T]> {
        Ok(pinned.as_mut_slice()?)
    }

    fn upload_pinned<T: Element>(
        stream: &Self::Stream,
        src: &Self::Pinned<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        Ok(dst.write_from_pinned(&stream.handle, src)?)
    }

    fn download_pinned<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Pinned<T>,
    ) -> Result<()> {
        Ok(src.read_into_pinned(&stream.handle, dst)?)
    }

    fn pinned_arg<T: Element>(pinned: &mut Self::Pinned<T>) -> Option<Self::Arg<'_>> {
        pinned
            .kernels_can_take()
            .then_some(KernelParam::BufferMut(pinned))
    }

    fn pinned_take_word(pinned: &mut Self::Pinned<u32>) -> Result<u32> {
        Ok(pinned.swap_first(0).unwrap_or(0))
    }
}

/// `Unsupported` for a buffer that is not managed memory, in the facade's
/// words.
fn not_unified<T: Element>(buffer: &DeviceBuffer<T>) -> Result<()> {
    if buffer.is_managed() {
        Ok(())
    } else {
        Err(crate::backend::unified::not_unified(Backend::Cuda))
    }
}
