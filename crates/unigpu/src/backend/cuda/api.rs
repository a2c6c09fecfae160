//! The CUDA backend's side of the contract.

use std::sync::Arc;

use unigpu_cuda_safe::{
    CudaEventHandle, CudaGraphHandle, CudaStreamHandle, DeviceBuffer, KernelParam, ManagedLocation,
    PinnedBuffer,
};

use super::device::{Device, Stream};
use crate::backend::code::{KernelRef, Program};
use crate::backend::contract::LaunchArg;
use crate::backend::{
    Backend, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, PinnedApi, StreamApi,
    cuda_device_info, nvrtc,
};
use crate::device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
use crate::dlpack::sync::DlpackSync;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat};
use crate::kernel::signature::KernelDecl;
use unigpu_core::Grid;
use unigpu_core::dlpack::ManagedTensor;

/// The CUDA backend: the driver API through `unigpu-cuda-safe`.
#[derive(Debug)]
pub(crate) struct Cuda;

impl Handles for Cuda {
    const KIND: Backend = Backend::Cuda;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    type Device = Arc<Device>;
    type Stream = Stream;
    type Event = CudaEventHandle;

    type Graph = CudaGraphHandle;

    type Buffer<T: Element> = DeviceBuffer<T>;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    type Arg<'a> = KernelParam<'a>;
}

impl DeviceApi for Cuda {
    fn device_count() -> Result<usize> {
        Ok(unigpu_cuda_safe::device_count()?)
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        Device::open(ordinal)
    }

    fn hardware() -> Option<String> {
        cuda_device_info::cuda_devices()
    }

    fn info(device: &Self::Device) -> Result<DeviceInfo> {
        cuda_device_info::device_info(&device.driver, Backend::Cuda)
    }

    fn memory_info(device: &Self::Device) -> Result<MemoryInfo> {
        cuda_device_info::memory_info(&device.driver, Backend::Cuda)
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        a.driver == b.driver
    }

    fn memory_stats(device: &Self::Device) -> Result<MemoryStats> {
        let s = device.driver.memory_stats();
        Ok(MemoryStats {
            reserved: s.reserved,
            in_use: s.in_use,
            cached: s.cached(),
            peak_in_use: s.peak_in_use,
            segments: s.segments,
            hits: s.hits,
            misses: s.misses,
            oom_retries: s.oom_retries,
        })
    }

    fn empty_cache(device: &Self::Device) -> Result<usize> {
        Ok(device.driver.empty_cache()?)
    }

    fn synchronize(device: &Self::Device) -> Result<()> {
        Ok(device.driver.synchronize()?)
    }

    /// A created non-blocking stream, not the legacy NULL stream, so work
    /// on other streams really overlaps with it.
    fn default_stream(device: &Self::Device) -> Result<Self::Stream> {
        Self::new_stream(device)
    }

    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(Stream {
            handle: CudaStreamHandle::new(&device.driver)?,
            device: device.clone(),
        })
    }

    fn can_access_peer(from: usize, to: usize) -> Result<bool> {
        Ok(unigpu_cuda_safe::can_access_peer(from, to)?)
    }
}

impl StreamApi for Cuda {
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        Ok(stream.handle.synchronize()?)
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.handle.query()?)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        Ok(stream.handle.wait(event)?)
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        Ok(stream.handle.host_fn(f)?)
    }

    fn native_stream(stream: &Self::Stream) -> Option<u64> {
        Some(stream.handle.raw())
    }
}

impl EventApi for Cuda {
    fn new_event(stream: &Self::Stream, timed: bool) -> Result<Self::Event> {
        Ok(CudaEventHandle::with_timing(&stream.device.driver, timed)?)
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        Ok(event.record(&stream.handle)?)
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        Ok(event.synchronize()?)
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.query()?)
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        Ok(start.elapsed_ms(end)?)
    }
}

impl GraphApi for Cuda {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        Ok(stream.handle.begin_capture()?)
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        Ok(stream.handle.end_capture()?)
    }

    fn is_capturing(stream: &Self::Stream) -> bool {
        stream.handle.is_capturing()
    }

    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()> {
        Ok(graph.launch(&stream.handle)?)
    }

    fn graph_len(graph: &Self::Graph) -> usize {
        graph.node_count()
    }
}

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

    fn read<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        Ok(src.read_into(&stream.handle, host)?)
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
}

impl KernelApi for Cuda {
    fn compile(
        device: &Self::Device,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program> {
        Ok(nvrtc::compile(&device.driver, source, options, decls)?.into())
    }

    fn load_image(device: &Self::Device, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        Ok(nvrtc::load_image(&device.driver, format, bytes)?.into())
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        KernelParam::Buffer(buffer)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        KernelParam::BufferMut(buffer)
    }

    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let f = kernel.cuda().ok_or_else(|| Error::Unsupported {
            backend: Backend::Cuda,
            what: format!(
                "kernel `{}` has no CUDA code (it was made with Kernel::cpu_only)",
                kernel.name
            ),
        })?;
        let mut params = args
            .map(|a| {
                a.map(|a| match a {
                    LaunchArg::Scalar(s) => KernelParam::from(s),
                    LaunchArg::Buffer(p) => p,
                })
            })
            .collect::<Result<Vec<KernelParam<'_>>>>()?;
        unigpu_cuda_safe::launch(
            &stream.handle,
            f,
            unigpu_cuda_safe::launch_dims(grid),
            &mut params,
        )
        .map_err(|e| Error::from(e).for_kernel(kernel.name))
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
