//! The torch backend's side of the contract.

use std::sync::Arc;

use super::graph::{self, TorchGraph};
use super::{TorchBuffer, TorchDevice, TorchEvent, TorchStream};
use unigpu_cuda_safe::KernelParam;

use crate::backend::code::{KernelRef, Program};
use crate::backend::contract::LaunchArg;
use crate::backend::{
    Backend, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, StreamApi,
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

/// The torch backend: c10 streams and events, torch tensors and ops.
#[derive(Debug)]
pub(crate) struct Torch;

/// Why host transfers are refused while capturing.
const HOST_MEMORY: &str = "a replay would read or write host memory the graph does not own; do \
                           host transfers before begin_capture or after end_capture";

/// Why DLPack exchanges are refused while capturing.
const DLPACK: &str = "the exchange orders the other library's work with events, which a capture \
                      cannot record; exchange before begin_capture or after end_capture";

/// A driver error met through a torch context, said of torch.
fn driver_error(e: unigpu_cuda_safe::SafeError) -> Error {
    Error::from(e).on_backend(Backend::Torch)
}

impl Handles for Torch {
    const KIND: Backend = Backend::Torch;
    /// Torch tensors here are CUDA tensors.
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    type Device = TorchDevice;
    type Stream = Arc<TorchStream>;
    type Event = TorchEvent;

    /// The c10 stream captured by the driver; the graph keeps the tensors
    /// its work uses (`graph.rs`).
    type Graph = TorchGraph;

    type Buffer<T: Element> = TorchBuffer;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    /// The buffer and whether the kernel writes it.
    type Arg<'a> = (&'a TorchBuffer, bool);
}

impl DeviceApi for Torch {
    fn device_count() -> Result<usize> {
        super::device_count()
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        super::open(ordinal)
    }

    /// This build has torch; with a CUDA device, torch should open.
    fn hardware() -> Option<String> {
        cuda_device_info::cuda_devices().map(|d| format!("a torch build and {d}"))
    }

    fn info(device: &Self::Device) -> Result<DeviceInfo> {
        cuda_device_info::device_info(&device.cuda, Backend::Torch)
    }

    /// The driver's figure: memory torch's caching allocator holds counts
    /// as used.
    fn memory_info(device: &Self::Device) -> Result<MemoryInfo> {
        cuda_device_info::memory_info(&device.cuda, Backend::Torch)
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        a.ordinal == b.ordinal
    }

    /// torch's own caching allocator holds this backend's memory; its
    /// counters are `torch.cuda.memory_stats()`, which the bridge does not
    /// expose yet.
    fn memory_stats(_: &Self::Device) -> Result<MemoryStats> {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what: "memory_stats: arrays live in torch's caching allocator; read \
                   torch.cuda.memory_stats() (the bridge does not expose it yet)"
                .into(),
        })
    }

    fn empty_cache(_: &Self::Device) -> Result<usize> {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what: "empty_cache: arrays live in torch's caching allocator; call \
                   torch.cuda.empty_cache() (the bridge does not expose it yet)"
                .into(),
        })
    }

    /// torch's work and ours share the primary context, so one
    /// context-wide sync waits for every stream.
    fn synchronize(device: &Self::Device) -> Result<()> {
        device.cuda.synchronize().map_err(driver_error)
    }

    /// The stream torch code would use now (usually c10's default stream),
    /// so unigpu's work is ordered with the caller's torch work.
    fn default_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(Arc::new(TorchStream::current(&device.cuda)?))
    }

    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(Arc::new(TorchStream::from_pool(&device.cuda)?))
    }
}

impl StreamApi for Torch {
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        stream.sync().map_err(|e| e.on_backend(Backend::Torch))
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.inner.query()?)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        graph::refuse(
            stream,
            "waiting for an event",
            "the event marks work outside the capture, which a replay cannot wait for; \
             wait before begin_capture",
        )?;
        Ok(stream.inner.wait_event(&event.read())?)
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        graph::refuse(
            stream,
            "a host function",
            "it runs once, and a graph replays; enqueue it after launching the graph",
        )?;
        stream.foreign.host_fn(f).map_err(driver_error)
    }

    fn native_stream(stream: &Self::Stream) -> Option<u64> {
        Some(stream.foreign.raw())
    }
}

impl EventApi for Torch {
    /// c10 events are always timed here: the bridge's event is made with
    /// timing on, and a torch record costs microseconds either way.
    fn new_event(_: &Self::Stream, _timed: bool) -> Result<Self::Event> {
        TorchEvent::new()
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        graph::refuse(
            stream,
            "recording an event",
            "the event would mark no work until a replay; record it after end_capture",
        )?;
        event.record(stream)
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        Ok(event.read().synchronize()?)
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.read().query()?)
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        // c10 refuses to time events that are still pending.
        let (a, b) = (start.read(), end.read());
        a.synchronize()?;
        b.synchronize()?;
        Ok(a.elapsed_ms(&b)? as f32)
    }
}

impl GraphApi for Torch {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        graph::begin(stream)
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        graph::end(stream)
    }

    fn is_capturing(stream: &Self::Stream) -> bool {
        graph::is_capturing(stream)
    }

    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()> {
        graph.launch(stream)
    }

    fn graph_len(graph: &Self::Graph) -> usize {
        graph.len()
    }
}

impl BufferApi for Torch {
    fn alloc<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        TorchBuffer::uninit::<T>(stream, len)
    }

    fn zeros<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        let mut b = Self::alloc::<T>(stream, len)?;
        let _current = stream.enter()?;
        b.order(stream, true)?;
        b.tensor_mut().fill_bits(0)?;
        Ok(b)
    }

    fn from_host<T: Element>(stream: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        let mut b = Self::alloc::<T>(stream, host.len())?;
        Self::upload(stream, host, &mut b)?;
        Ok(b)
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len()
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
        Self::upload(stream, host, dst)
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        graph::refuse(stream, "an upload from host memory", HOST_MEMORY)?;
        let _current = stream.enter()?;
        dst.order(stream, true)?;
        Ok(dst.tensor_mut().write_bytes(bytemuck::cast_slice(host))?)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        graph::refuse(stream, "a download into host memory", HOST_MEMORY)?;
        let _current = stream.enter()?;
        src.order(stream, false)?;
        Ok(src.tensor.read_bytes(bytemuck::cast_slice_mut(host))?)
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        let _current = stream.enter()?;
        src.order(stream, false)?;
        dst.order(stream, true)?;
        Ok(dst.tensor_mut().copy_from(&src.tensor, false)?)
    }

    /// torch's caching allocator has no managed memory.
    fn alloc_unified<T: Element>(_: &Self::Stream, _: usize) -> Result<Self::Buffer<T>> {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what: "alloc_unified: torch's caching allocator has no managed (unified) memory; \
                   use a cuda context (Context::new(Backend::Cuda, ..)), whose arrays move to \
                   torch with GpuArray::to_context"
                .into(),
        })
    }

    fn is_unified<T: Element>(_: &Self::Buffer<T>) -> bool {
        false
    }

    fn host_view<T: Element>(_: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>> {
        Err(crate::backend::unified::not_unified(Backend::Torch))
    }

    fn host_view_mut<T: Element>(_: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>> {
        Err(crate::backend::unified::not_unified(Backend::Torch))
    }

    fn prefetch<T: Element>(_: &Self::Stream, _: &Self::Buffer<T>, _: Location) -> Result<()> {
        Err(crate::backend::unified::not_unified(Backend::Torch))
    }

    fn to_dlpack<T: Element>(
        stream: &Self::Stream,
        buffer: &mut Self::Buffer<T>,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        graph::refuse(stream, "a DLPack export", DLPACK)?;
        super::dlpack::export::<T>(stream, buffer, sync)
    }

    fn from_dlpack<T: Element>(
        stream: &Self::Stream,
        tensor: ManagedTensor,
    ) -> Result<Self::Buffer<T>> {
        graph::refuse(stream, "a DLPack import", DLPACK)?;
        super::dlpack::import::<T>(stream, tensor)
    }
}

impl KernelApi for Torch {
    /// torch shares the device's primary context with the driver API, so
    /// kernels compile and load as on the cuda backend.
    fn compile(
        device: &Self::Device,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program> {
        nvrtc::compile(&device.cuda, source, options, decls)
            .map(Into::into)
            .map_err(|e| e.on_backend(Backend::Torch))
    }

    /// As on the cuda backend: the module loads in the device's primary
    /// context, which torch shares.
    fn load_image(device: &Self::Device, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        nvrtc::load_image(&device.cuda, format, bytes)
            .map(Into::into)
            .map_err(|e| e.on_backend(Backend::Torch))
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        (buffer, false)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        (buffer, true)
    }

    /// A tensor goes in as its device address, after its earlier uses on
    /// other c10 streams (the buffer's bookkeeping).
    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let f = kernel.cuda().ok_or_else(|| Error::Unsupported {
            backend: Backend::Torch,
            what: format!(
                "kernel `{}` has no CUDA code (it was made with Kernel::cpu_only)",
                kernel.name
            ),
        })?;
        let args = args.collect::<Result<Vec<_>>>()?;
        let mut params = Vec::with_capacity(args.len());
        for a in args {
            match a {
                LaunchArg::Scalar(v) => params.push(KernelParam::from(v)),
                LaunchArg::Buffer((buffer, write)) => {
                    buffer.order(stream, write)?;
                    params.push(KernelParam::U64(buffer.tensor.data_address()?));
                }
            }
        }
        stream
            .foreign
            .launch(f, unigpu_cuda_safe::launch_dims(grid), &params)
            .map_err(|e| driver_error(e).for_kernel(kernel.name))
    }
}

crate::backend::host_pinned::host_pinned_api!(Torch);
