//! The Vulkan backend's side of the contract.

use std::sync::Arc;

use super::adapters::adapters;
use super::buffer::{MapSignal, VkBuffer, create, padded, read_mapped, readback};
use super::device::VkDevice;
use super::errors::unsupported;
use super::event::VkEvent;
use super::kernel::{KernelArg, VkArg, arg, launch};
use super::open::VkOpen;
use super::shader::ShaderKernel;
use super::stream::{Recorded, VkStream};
use crate::backend::code::{KernelCode, KernelRef, ModuleCode, Program, ShaderSource};
use crate::backend::contract::LaunchArg;
use crate::backend::unified::not_unified;
use crate::backend::{
    Backend, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, StreamApi,
};
use crate::device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
use crate::dlpack::sync::DlpackSync;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat, Origin};
use crate::kernel::signature::KernelDecl;
use unigpu_core::Grid;
use unigpu_core::dlpack::ManagedTensor;

/// The Vulkan backend: wgpu devices, worker-thread streams, WGSL ops.
#[derive(Debug)]
pub(crate) struct Vulkan;

fn no_dlpack() -> Error {
    Error::Dlpack {
        message: "a vulkan array cannot be shared through DLPack: wgpu gives no address or \
                  memory handle of its buffers to safe code; move it with to_context or \
                  download it"
            .into(),
    }
}

/// `host`'s elements as bytes.
fn bytes<T: Element>(host: &[T]) -> &[u8] {
    bytemuck::cast_slice(host)
}

impl Handles for Vulkan {
    const KIND: Backend = Backend::Vulkan;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLVulkan;
    type Device = VkOpen;

    type Stream = Arc<VkStream>;
    type Event = Arc<VkEvent>;

    type Graph = (Arc<VkDevice>, Vec<Recorded>);

    type Buffer<T: Element> = VkBuffer<T>;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    type Arg<'a> = VkArg<'a>;
}

impl DeviceApi for Vulkan {
    fn device_count() -> Result<usize> {
        Ok(adapters()?.len())
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        Ok(VkOpen::new(VkDevice::open(ordinal)?))
    }

    fn hardware() -> Option<String> {
        super::adapters::hardware()
    }

    fn fallback_refusal(ordinal: usize) -> Option<String> {
        super::adapters::fallback_refusal(ordinal)
    }

    fn info(open: &Self::Device) -> Result<DeviceInfo> {
        open.device.info()
    }

    fn memory_info(open: &Self::Device) -> Result<MemoryInfo> {
        open.device.memory_info()
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        Arc::ptr_eq(&a.device, &b.device)
    }

    fn memory_stats(_: &Self::Device) -> Result<MemoryStats> {
        Err(unsupported(
            "memory_stats: the vulkan backend has no caching allocator of its own (each array \
             is a wgpu buffer, returned to wgpu's allocator when dropped)"
                .into(),
        ))
    }

    /// Releases the staging buffers kept for transfers (arrays have no
    /// cache to empty: each is freed when dropped).
    fn empty_cache(open: &Self::Device) -> Result<usize> {
        Ok(open.device.staging.release())
    }

    fn synchronize(open: &Self::Device) -> Result<()> {
        let mut first = Ok(());
        for s in open.streams() {
            let r = s.wait_enqueued();
            if first.is_ok() {
                first = r;
            }
        }
        first?;
        open.device.take_error().map_or(Ok(()), Err)
    }

    fn default_stream(open: &Self::Device) -> Result<Self::Stream> {
        open.new_stream()
    }

    fn new_stream(open: &Self::Device) -> Result<Self::Stream> {
        open.new_stream()
    }
}

impl StreamApi for Vulkan {
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        stream.synchronize()
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.is_idle())
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        match event.fence() {
            Some(fence) => stream.wait_for(fence),
            // Never recorded: nothing to wait for, as on CUDA.
            None => Ok(()),
        }
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        stream.host_fn(f)
    }

    fn native_stream(_: &Self::Stream) -> Option<u64> {
        None
    }
}

impl EventApi for Vulkan {
    fn new_event(stream: &Self::Stream, timed: bool) -> Result<Self::Event> {
        Ok(Arc::new(VkEvent::new(&stream.device, timed)))
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        event.record(stream)
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        event.synchronize();
        Ok(())
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.query())
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        start.elapsed_ms(end)
    }
}

impl GraphApi for Vulkan {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        stream.begin_capture()
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        Ok((stream.device.clone(), stream.end_capture()?))
    }

    fn is_capturing(stream: &Self::Stream) -> bool {
        stream.is_capturing()
    }

    fn graph_launch((device, work): &Self::Graph, stream: &Self::Stream) -> Result<()> {
        // The recorded bind groups belong to the device that captured.
        if !Arc::ptr_eq(device, &stream.device) {
            return Err(Error::ContextMismatch {
                what: "Graph::launch",
            });
        }
        work.iter().try_for_each(|r| stream.replay(r))
    }

    fn graph_len((_, work): &Self::Graph) -> usize {
        work.len()
    }
}

impl BufferApi for Vulkan {
    fn alloc<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        VkBuffer::zeros(&stream.device, len)
    }

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

    fn read<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        Self::download_into(stream, src, host)
    }

    fn write<T: Element>(
        stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
        host: &[T],
    ) -> Result<()> {
        if let Some(done) = upload(stream, host, dst)? {
            done.wait_done();
        }
        Ok(())
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        upload(stream, host, dst).map(drop)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(host);
        let (device, staging) = (&stream.device, &stream.device.staging);
        let back = staging.download(padded(bytes), || readback(device, bytes))?;
        let mapped = MapSignal::default();
        let (source, target, on_mapped) = (src.buffer.clone(), back.clone(), mapped.callback());
        let size = padded(bytes);
        stream.submit(
            &[&src.uses],
            &[],
            Box::new(move |enc| {
                enc.copy_buffer_to_buffer(&source, 0, &target, 0, size);
                enc.map_buffer_on_submit(&target, wgpu::MapMode::Read, ..size, on_mapped);
                Ok(())
            }),
        )?;
        mapped.wait("a download")?;
        let read = read_mapped(&back, bytemuck::cast_slice_mut(host), "a download");
        staging.download_read(back);
        read
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

crate::backend::host_pinned::host_pinned_api!(Vulkan);

/// Copies `host` into a staging buffer now (so it may be reused at once)
/// and enqueues the copy into `dst`; the copy's fence, or `None` for no
/// data.
fn upload<T: Element>(
    stream: &Arc<VkStream>,
    host: &[T],
    dst: &mut VkBuffer<T>,
) -> Result<Option<super::fence::Fence>> {
    if host.is_empty() {
        return Ok(None);
    }
    let device = &stream.device;
    let data = bytes(host);
    let size = padded(data.len());
    let staging = device.staging.upload(data, size, || {
        create(
            device,
            data.len(),
            size,
            wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            true,
        )
    })?;
    let (target, pool) = (dst.buffer.clone(), device.staging.clone());
    let fence = stream.submit(
        &[],
        &[&dst.uses],
        Box::new(move |enc| {
            enc.copy_buffer_to_buffer(&staging, 0, &target, 0, size);
            pool.upload_copied(enc, &staging);
            Ok(())
        }),
    )?;
    Ok(Some(fence))
}
