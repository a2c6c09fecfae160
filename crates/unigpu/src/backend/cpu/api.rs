//! The CPU backend's side of the contract.

use std::sync::{Arc, Mutex, Weak};

use super::args::{CpuArg, CpuArgs, CpuValue};
use super::fence::Fence;
use super::memory;
use super::panic_message;
use super::{CpuBuffer, CpuEvent, CpuStream, Recorded, Tracker, replay, submit, submit_replayable};
use crate::backend::code::{KernelRef, ModuleCode, Program};
use crate::backend::contract::LaunchArg;
use crate::backend::unified::not_unified;
use crate::backend::{
    Backend, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, StreamApi,
};
use crate::device::Location;
use crate::dlpack::sync::DlpackSync;
use crate::kernel::options::{CompileOptions, ImageFormat, Origin};
use crate::kernel::signature::KernelDecl;
use crate::lock::lock;
use crate::{DeviceInfo, Element, Error, MemoryInfo, MemoryStats, Result};
use unigpu_core::Grid;
use unigpu_core::dlpack::{HostExport, HostMem, HostRead, HostWrite, ManagedTensor};

/// The CPU backend: host memory, one worker thread per stream.
#[derive(Debug)]
pub(crate) struct Cpu;

/// The host as a device: it remembers its streams, so that a device-wide
/// sync waits for them all as `cuCtxSynchronize` does on CUDA.
#[derive(Debug, Default)]
pub(crate) struct CpuDevice {
    streams: Mutex<Vec<Weak<CpuStream>>>,
}

fn cpu_info() -> DeviceInfo {
    let (free, total) = memory::memory_info();
    DeviceInfo {
        backend: Backend::Cpu,
        ordinal: 0,
        name: memory::cpu_name(),
        compute_capability: None,
        memory: MemoryInfo { free, total },
        details: Vec::new(),
    }
}

/// Signals its fence when dropped, so that a job waiting on it is never
/// left waiting.
struct SignalOnDrop(Fence);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        self.0.signal();
    }
}

impl Handles for Cpu {
    const KIND: Backend = Backend::Cpu;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCPU;
    type Device = CpuDevice;
    type Stream = Arc<CpuStream>;
    type Event = Arc<CpuEvent>;

    type Graph = Vec<Recorded>;

    type Buffer<T: Element> = CpuBuffer<T>;

    type HostView<'a, T: Element> = HostRead<'a, T>;
    type HostViewMut<'a, T: Element> = HostWrite<'a, T>;

    type Arg<'a> = CpuArg;
}

impl DeviceApi for Cpu {
    fn device_count() -> Result<usize> {
        Ok(1)
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        if ordinal != 0 {
            return Err(Error::InvalidDevice {
                backend: Backend::Cpu,
                asked: ordinal,
                available: 1,
            });
        }
        Ok(CpuDevice::default())
    }

    fn info(_: &Self::Device) -> Result<DeviceInfo> {
        Ok(cpu_info())
    }

    fn memory_info(_: &Self::Device) -> Result<MemoryInfo> {
        let (free, total) = memory::memory_info();
        Ok(MemoryInfo { free, total })
    }

    fn same_device(_: &Self::Device, _: &Self::Device) -> bool {
        true
    }

    fn memory_stats(_: &Self::Device) -> Result<MemoryStats> {
        Err(Error::Unsupported {
            backend: Backend::Cpu,
            what: "memory_stats: the CPU backend has no caching allocator (arrays are plain \
                   host allocations, returned to the system allocator when dropped)"
                .into(),
        })
    }

    fn empty_cache(_: &Self::Device) -> Result<usize> {
        Ok(0)
    }

    fn synchronize(device: &Self::Device) -> Result<()> {
        let streams: Vec<Arc<CpuStream>> = {
            let mut list = lock(&device.streams);
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let mut first = Ok(());
        for s in streams {
            let r = s.synchronize();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn default_stream(device: &Self::Device) -> Result<Self::Stream> {
        Self::new_stream(device)
    }

    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        let stream = Arc::new(CpuStream::new()?);
        lock(&device.streams).push(Arc::downgrade(&stream));
        Ok(stream)
    }
}

impl StreamApi for Cpu {
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        stream.synchronize()
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.is_idle())
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        match event.fence() {
            Some(fence) => stream.enqueue(Box::new(move || {
                fence.wait();
                Ok(())
            })),
            // Never recorded: nothing to wait for, as on CUDA.
            None => Ok(()),
        }
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        stream.enqueue(Box::new(move || {
            f();
            Ok(())
        }))
    }

    fn native_stream(_: &Self::Stream) -> Option<u64> {
        None
    }
}

impl EventApi for Cpu {
    fn new_event(_: &Self::Stream, _timed: bool) -> Result<Self::Event> {
        Ok(Arc::new(CpuEvent::default()))
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

impl GraphApi for Cpu {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        stream.begin_capture()
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        stream.end_capture()
    }

    fn is_capturing(stream: &Self::Stream) -> bool {
        stream.is_capturing()
    }

    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()> {
        graph.iter().try_for_each(|r| replay(stream, r))
    }

    fn graph_len(graph: &Self::Graph) -> usize {
        graph.len()
    }
}

impl BufferApi for Cpu {
    // Host memory must be initialised to be safe Rust; zeroing it is the
    // cheapest way.
    fn alloc<T: Element>(_: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        CpuBuffer::zeros(len)
    }

    fn zeros<T: Element>(_: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        CpuBuffer::zeros(len)
    }

    fn from_host<T: Element>(_: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        CpuBuffer::from_slice(host)
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len()
    }

    fn read<T: Element>(_: &Self::Stream, src: &Self::Buffer<T>, host: &mut [T]) -> Result<()> {
        src.read_into(host);
        Ok(())
    }

    fn write<T: Element>(_: &Self::Stream, dst: &mut Self::Buffer<T>, host: &[T]) -> Result<()> {
        dst.write_from(host);
        Ok(())
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        let staged = stream.staging().copy_of(host)?;
        let (data, staging) = (dst.data.clone(), stream.staging().clone());
        submit(stream, &[], &[&dst.uses], move || {
            bytemuck::cast_slice_mut::<T, u8>(&mut data.write()).copy_from_slice(&staged);
            staging.give_back(staged);
            Ok(())
        })
        .map(drop)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        // `host` is borrowed, so the worker cannot write it. Rather than
        // have the worker copy into a staging vector for this thread to
        // copy again, the worker waits for the work before the download,
        // then holds the stream while this thread copies straight out of
        // the buffer: one copy and no allocation, still ordered on the
        // stream (a later writer of `src` waits for the job to end).
        let (reached, copied) = (Fence::default(), Fence::default());
        let (at_download, until_copied) = (reached.clone(), copied.clone());
        submit(stream, &[&src.uses], &[], move || {
            at_download.signal();
            until_copied.wait();
            Ok(())
        })?;
        // Releases the worker however this thread leaves.
        let _release = SignalOnDrop(copied);
        reached.wait();
        host.copy_from_slice(&src.data.read());
        Ok(())
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        super::check_distinct(|| "copy".into(), dst, &[src])?;
        let (from, to) = (src.data.clone(), dst.data.clone());
        submit_replayable(stream, &[&src.uses], &[&dst.uses], move || {
            to.write().copy_from_slice(&from.read());
            Ok(())
        })
    }

    /// Ordinary host memory: the host is the device.
    fn alloc_unified<T: Element>(_: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        let mut buffer = CpuBuffer::zeros(len)?;
        buffer.unified = true;
        Ok(buffer)
    }

    fn is_unified<T: Element>(buffer: &Self::Buffer<T>) -> bool {
        buffer.unified
    }

    fn host_view<T: Element>(buffer: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>> {
        if !buffer.unified {
            return Err(not_unified(Backend::Cpu));
        }
        buffer.uses.wait_writes();
        Ok(buffer.data.read())
    }

    fn host_view_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>> {
        if !buffer.unified {
            return Err(not_unified(Backend::Cpu));
        }
        buffer.uses.wait_all();
        Ok(buffer.data.write())
    }

    /// Nothing to move: the memory is the host's, which is the device.
    fn prefetch<T: Element>(_: &Self::Stream, buffer: &Self::Buffer<T>, _: Location) -> Result<()> {
        if !buffer.unified {
            return Err(not_unified(Backend::Cpu));
        }
        Ok(())
    }

    fn to_dlpack<T: Element>(
        _: &Self::Stream,
        buffer: &mut Self::Buffer<T>,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        match sync {
            DlpackSync::Host => buffer.uses.wait_all(),
            DlpackSync::Unordered => {}
            DlpackSync::Stream(_) => {
                return Err(Error::Dlpack {
                    message: "a CPU array cannot be ordered on a CUDA stream (a CPU consumer passes no stream)".into(),
                });
            }
        }
        // The tracker travels with the tensor, so that an import of it in
        // this process orders its work with the original's.
        Ok(buffer.data.to_dlpack_with(buffer.uses.clone()))
    }

    fn from_dlpack<T: Element>(_: &Self::Stream, tensor: ManagedTensor) -> Result<Self::Buffer<T>> {
        let view = tensor.view()?;
        Ok(match tensor.owner::<HostExport<T, Tracker>>() {
            // Our own export coming back whole: share the array's memory
            // through its lock, and its use tracking, rather than alias it
            // with a second array that orders its work on its own. (One
            // whose start or length a consumer changed is a slice of it.)
            Some(export) if export.spans(&view) => {
                CpuBuffer::shared(export.array.clone(), export.with.clone())
            }
            _ => CpuBuffer::from_mem(HostMem::from_dlpack(tensor)?),
        })
    }
}

impl KernelApi for Cpu {
    /// Nothing to compile: kernels run their CPU implementation here.
    fn compile(_: &Self::Device, _: &str, _: &CompileOptions, _: &[KernelDecl]) -> Result<Program> {
        Ok(Program {
            origin: Origin::NotCompiled,
            log: String::new(),
            code: ModuleCode::Host,
        })
    }

    fn load_image(_: &Self::Device, format: ImageFormat, _: &[u8]) -> Result<Program> {
        Err(Error::Unsupported {
            backend: Backend::Cpu,
            what: format!(
                "loading {format} code: a CUDA image cannot run on the host; give the kernel a CPU implementation (Kernel::cpu_only, or Kernel::with_cpu on a kernel compiled from source)"
            ),
        })
    }

    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_> {
        CpuArg::new(buffer, false)
    }

    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_> {
        CpuArg::new(buffer, true)
    }

    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()> {
        let name = kernel.name;
        let f = kernel.cpu().cloned().ok_or_else(|| Error::Unsupported {
            backend: Backend::Cpu,
            what: format!(
                "kernel `{name}` has no CPU implementation; attach one with Kernel::with_cpu"
            ),
        })?;
        let args = args.collect::<Result<Vec<_>>>()?;
        let mut values = Vec::with_capacity(args.len());
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        for a in args {
            match a {
                LaunchArg::Scalar(s) => values.push(CpuValue::Scalar(s)),
                LaunchArg::Buffer(a) => {
                    if a.writable {
                        writes.push(a.uses)
                    } else {
                        reads.push(a.uses)
                    }
                    values.push(CpuValue::Array {
                        data: a.data,
                        dtype: a.dtype,
                        writable: a.writable,
                    });
                }
            }
        }
        if let Some((i, j)) = super::args::written_alias(&values) {
            return Err(Error::Unsupported {
                backend: Backend::Cpu,
                what: format!(
                    "kernel `{name}`: argument {i}, written, shares its memory with argument {j} \
                     (an array and its own DLPack export imported again); pass one of the two, \
                     or copy one first"
                ),
            });
        }
        let kernel_name: Arc<str> = name.into();
        let reads: Vec<_> = reads.iter().collect();
        let writes: Vec<_> = writes.iter().collect();
        submit_replayable(stream, &reads, &writes, move || {
            let args = CpuArgs {
                values: values.clone(),
                grid,
            };
            // Caught here, not by the worker, so the error names the kernel.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args)))
                .unwrap_or_else(|p| {
                    Err(Error::StreamWork {
                        message: panic_message(p.as_ref()),
                    })
                })
                .map_err(|e| e.for_kernel(&kernel_name))
        })
    }
}

crate::backend::host_pinned::host_pinned_api!(Cpu);
