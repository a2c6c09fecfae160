//! The contract every backend implements (see `backend/mod.rs`), one trait
//! per kind of handle as wgpu-hal has it: `Handles` names a backend's
//! handle types; `DeviceApi`, `StreamApi`, `EventApi`, `GraphApi`,
//! `BufferApi`, `PinnedApi` and `KernelApi` are the operations on each, and
//! `BuiltinOps` the built-in ops; `Api` is all of them, implemented once
//! for every backend that has them. Each trait's doc comment states its
//! contract, each method's the guarantee every backend keeps, so that a
//! program behaves the same on each; docs/design/backend-contract.md says
//! why it is dispatched statically.

use std::fmt::Debug;
use std::ops::{Deref, DerefMut};

use super::Backend;
use super::code::{KernelCode, KernelRef, Program, ShaderSource};
use crate::device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
use crate::dlpack::sync::DlpackSync;
use crate::element::{DType, Element};
use crate::error::Result;
use crate::kernel::options::{CompileOptions, ImageFormat};
use crate::kernel::signature::KernelDecl;
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::GemmShape;
use unigpu_core::Grid;
use unigpu_core::Scalar;
use unigpu_core::dlpack::ManagedTensor;

/// One backend's handle types, as wgpu-hal's `Api` names them: every
/// per-handle trait below extends it, so each speaks of the same device,
/// stream, event, graph, buffer and argument types. Contract: a handle is
/// only ever given to the backend that made it (the dispatch turns a mix
/// into `ContextMismatch`); every handle is `Send + Sync`, usable from any
/// thread; dropping one with work pending is safe. Static dispatch:
/// `dispatch.rs` holds one enum variant per backend.
pub(crate) trait Handles: Sized + 'static {
    /// Which backend this is.
    const KIND: Backend;
    /// The DLPack device type (`kDLCPU`, `kDLCUDA`, ...) of this backend's
    /// memory, as `__dlpack_device__` reports it for its arrays.
    const DLPACK_DEVICE_TYPE: i32;

    /// An opened device, with whatever the backend keeps per device.
    type Device: Debug + Send + Sync;

    /// An ordered queue of work. Cheap to clone.
    type Stream: Debug + Clone + Send + Sync;
    /// A marker in a stream's work.
    type Event: Debug + Send + Sync;

    /// Work recorded from a stream, replayable on any stream of the
    /// device. Keeps the memory the work uses valid for every replay.
    type Graph: Debug + Send + Sync;

    /// `len` elements of `T` in this backend's memory. Every use of a
    /// buffer is ordered after the earlier uses it conflicts with, on any
    /// stream; dropping one with work pending is safe.
    type Buffer<T: Element>: Debug + Send + Sync;

    /// A unified buffer's elements seen from the host, held as long as the
    /// view is: whatever keeps device work from writing them meanwhile.
    type HostView<'a, T: Element>: Deref<Target = [T]>;
    /// As [`Handles::HostView`], writable.
    type HostViewMut<'a, T: Element>: DerefMut<Target = [T]>;

    /// A buffer of any element type, borrowed as a launch argument.
    type Arg<'a>;
}

/// Devices: counting, opening and describing them, and what is per device
/// (memory, caches, the streams it gives). Contract: a device stays valid
/// as long as any handle made from it; a failed `open` leaves nothing
/// behind; `device_count` and `hardware` open nothing.
pub(crate) trait DeviceApi: Handles {
    /// How many devices the backend can use here, or why none.
    fn device_count() -> Result<usize>;
    fn open(ordinal: usize) -> Result<Self::Device>;
    /// Why `Context::default()` should pass over device `ordinal` without
    /// opening it and try the next backend (a software Vulkan adapter,
    /// slower than the CPU backend); `None` to try it. A device asked for
    /// by name is opened whatever this says.
    fn fallback_refusal(_ordinal: usize) -> Option<String> {
        None
    }
    /// The hardware this machine has for this backend, found without
    /// opening it (a CUDA device the driver counts, a Vulkan adapter that
    /// is not a software one), described for a message; `None` where there
    /// is none, or where the backend needs no hardware of its own (cpu).
    /// Tells "nothing to open here" from "there was, and it did not open".
    fn hardware() -> Option<String> {
        None
    }
    fn info(device: &Self::Device) -> Result<DeviceInfo>;
    fn memory_info(device: &Self::Device) -> Result<MemoryInfo>;
    fn same_device(a: &Self::Device, b: &Self::Device) -> bool;
    /// The device's caching allocator's counters, or `Unsupported` where
    /// the backend has no allocator of its own.
    fn memory_stats(device: &Self::Device) -> Result<MemoryStats>;
    /// Gives cached memory nothing uses back to the system, after the work
    /// that last used it; returns the bytes released (0 where nothing is
    /// cached).
    fn empty_cache(device: &Self::Device) -> Result<usize>;
    /// Waits for the work of every stream of the device; returns the first
    /// error.
    fn synchronize(device: &Self::Device) -> Result<()>;
    /// The stream a new context's array operations use. By default a new
    /// stream of its own ([`DeviceApi::new_stream`]); a backend overrides
    /// it where the device already has a stream that other code orders
    /// its work on (torch's current c10 stream).
    fn default_stream(device: &Self::Device) -> Result<Self::Stream> {
        Self::new_stream(device)
    }
    fn new_stream(device: &Self::Device) -> Result<Self::Stream>;

    /// Whether device `from` reaches device `to`'s memory directly, so
    /// that a copy between them needs no host memory. A device reaches
    /// itself.
    fn can_access_peer(from: usize, to: usize) -> Result<bool> {
        Ok(from == to)
    }
}

/// Streams: ordered queues of work. Contract: work enqueued on one stream
/// runs in order; nothing orders two streams but events and the buffers'
/// own use tracking; an error raised by enqueued work is returned (once)
/// by the next sync.
pub(crate) trait StreamApi: Handles {
    /// Waits for the work enqueued so far; returns the first error any of
    /// it raised (once).
    fn stream_sync(stream: &Self::Stream) -> Result<()>;
    /// True when all enqueued work is done. Never blocks.
    fn stream_is_idle(stream: &Self::Stream) -> Result<bool>;
    /// Later work on `stream` waits for `event`; nothing else orders it.
    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()>;
    /// Runs `f` on the host once the work before it is done; later work
    /// waits for it. A panic in `f` is returned by the next sync.
    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()>;
    /// The native queue handle a foreign library can take (a `CUstream`
    /// for DLPack consumers), where the backend has one.
    fn native_stream(stream: &Self::Stream) -> Option<u64>;
}

/// Events: markers in a stream's work. Contract: an event captures the
/// work enqueued before its last `record`; waiting on one never waits for
/// later work; an unrecorded event is complete.
pub(crate) trait EventApi: Handles {
    /// A new, unrecorded event (its query is true). `timed` asks for one
    /// that `elapsed_ms` accepts; a backend may time every event (the
    /// facade enforces the rule, so programs behave the same everywhere).
    fn new_event(stream: &Self::Stream, timed: bool) -> Result<Self::Event>;
    /// Captures the work enqueued on `stream` so far, replacing any earlier
    /// capture.
    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()>;
    fn event_sync(event: &Self::Event) -> Result<()>;
    fn event_query(event: &Self::Event) -> Result<bool>;
    /// Milliseconds from `start` to `end`; waits for both.
    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32>;
}

/// Graphs: work recorded from a stream and replayed. Contract: a capture
/// records only what a replay can repeat and refuses the rest with
/// `Unsupported`; a replay orders itself like the recorded work would be,
/// and keeps the memory it uses valid.
pub(crate) trait GraphApi: Handles {
    /// From now until `end_capture`, kernels, built-in ops and device
    /// copies enqueued on `stream` are recorded, not run; work a replay
    /// could not repeat (host transfers, host functions, event records,
    /// reductions that return to the host) is refused with `Unsupported`.
    /// Refused when `stream` already captures, or where the backend cannot
    /// capture (saying why).
    fn begin_capture(stream: &Self::Stream) -> Result<()>;
    /// Ends the capture begun on `stream` (even when it fails) and makes
    /// the graph.
    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph>;
    fn is_capturing(stream: &Self::Stream) -> bool;
    /// Enqueues one replay on `stream`, ordered after the pending uses of
    /// the memory it uses, like the recorded work itself would be.
    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()>;
    /// How many pieces of work (kernels, ops, copies) the graph replays.
    fn graph_len(graph: &Self::Graph) -> usize;
}

/// Buffers: memory of the backend's device, the copies between it and the
/// host or another device, unified memory and DLPack. Contract: every use
/// of a buffer is ordered after the earlier uses it conflicts with, on any
/// stream; a call that returns host data returns it complete; lengths and
/// devices are checked by the caller.
pub(crate) trait BufferApi: Handles {
    /// Contents unspecified. By default [`BufferApi::zeros`], for backends
    /// without uninitialised memory (cpu: safe Rust's memory is
    /// initialised; vulkan: wgpu zeroes every buffer it makes); a backend
    /// that can skip the zeroing (cuda, torch) overrides it.
    fn alloc<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Self::zeros(stream, len)
    }
    fn zeros<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>>;
    fn from_host<T: Element>(stream: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>>;
    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize;
    /// Blocks until `host` holds the buffer, after its pending writes
    /// (`stream` is the context's default stream). By default a
    /// [`BufferApi::download_into`] on `stream`, which returns once `host`
    /// holds the data; a backend overrides it where a read need not be
    /// ordered on the stream (cpu copies under the buffer's lock).
    fn read<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        Self::download_into(stream, src, host)
    }
    /// A new vector holding the buffer, after its pending writes
    /// (`stream` is the context's default stream). Blocks. A backend
    /// overrides it where it can fill the vector without zeroing it first.
    fn read_vec<T: Element>(stream: &Self::Stream, src: &Self::Buffer<T>) -> Result<Vec<T>> {
        let mut host = vec![T::default(); Self::len(src)];
        Self::read(stream, src, &mut host)?;
        Ok(host)
    }
    /// Blocks until the buffer holds `host`, after its pending uses.
    fn write<T: Element>(
        stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
        host: &[T],
    ) -> Result<()>;
    /// Ordered on `stream`; returns once `host` may be reused.
    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// Ordered on `stream`; returns once `host` holds the data.
    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()>;
    /// Device-to-device, ordered on `stream`.
    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// Copies `src` into `dst`, a buffer of the same length on another
    /// device of this backend: the read ordered on `src_stream` (`src`'s
    /// device), the write on `dst_stream` (`dst`'s), each after the
    /// buffer's pending uses, and later uses of either wait for it.
    /// By default staged through host memory (a download on `src_stream`,
    /// then an upload on `dst_stream`; returns once the host copy may be
    /// dropped); a backend with a direct path between its devices (cuda's
    /// peer copies) overrides it.
    fn copy_between_devices<T: Element>(
        src_stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst_stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        let mut host = vec![T::default(); Self::len(src)];
        Self::download_into(src_stream, src, &mut host)?;
        Self::upload(dst_stream, &host, dst)
    }

    /// `len` zeroed elements that the host and the device both address
    /// (managed memory on CUDA; plain host memory where the device is the
    /// host), usable as any other buffer. Never more than the device has
    /// free: a larger request is `OutOfMemory` with the free bytes.
    /// `Unsupported`, with the reason, where the backend has no such memory.
    fn alloc_unified<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>>;
    /// Whether `buffer` came from [`BufferApi::alloc_unified`].
    fn is_unified<T: Element>(buffer: &Self::Buffer<T>) -> bool;
    /// The elements, once the pending writes to `buffer` (on any stream)
    /// are done; `Unsupported` naming `alloc_unified` for other buffers.
    fn host_view<T: Element>(buffer: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>>;
    /// The elements for writing, once every pending use of `buffer` is
    /// done; `Unsupported` as [`BufferApi::host_view`].
    fn host_view_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>>;
    /// Moves a unified buffer's memory to `to`, ordered on `stream` after
    /// its pending writes; a hint that never changes the contents (`Ok`
    /// and nothing done where memory does not move). `Unsupported` as
    /// [`BufferApi::host_view`].
    fn prefetch<T: Element>(
        stream: &Self::Stream,
        buffer: &Self::Buffer<T>,
        to: Location,
    ) -> Result<()>;

    /// Shares `buffer` as a DLPack tensor that keeps its memory alive,
    /// ordered before the consumer as `sync` says (`stream` is the
    /// context's default stream).
    fn to_dlpack<T: Element>(
        stream: &Self::Stream,
        buffer: &mut Self::Buffer<T>,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor>;
    /// Takes `tensor` as a buffer without copying, or says why it cannot
    /// (another device, another dtype, read-only, not contiguous).
    fn from_dlpack<T: Element>(
        stream: &Self::Stream,
        tensor: ManagedTensor,
    ) -> Result<Self::Buffer<T>>;
}

/// Pinned host buffers: host memory that copies on a stream read and
/// write without staging. Contract: the host side of a pinned buffer is
/// only handed out once the copies pending on it are done. Backends
/// without page-locked memory of their own share one implementation,
/// `host_pinned_api!` (`host_pinned.rs`).
pub(crate) trait PinnedApi: BufferApi {
    /// Host memory that copies on a stream read and write without staging
    /// (page-locked on CUDA; ordinary memory where the backend's copies
    /// finish before they return). Zeroed when made.
    type Pinned<T: Element>: Debug + Send + Sync;

    fn pinned<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Pinned<T>>;
    fn pinned_len<T: Element>(pinned: &Self::Pinned<T>) -> usize;
    /// The contents, once pending copies into `pinned` are done.
    fn pinned_slice<T: Element>(pinned: &Self::Pinned<T>) -> Result<&[T]>;
    /// The contents for writing, once pending copies from or into
    /// `pinned` are done.
    fn pinned_slice_mut<T: Element>(pinned: &mut Self::Pinned<T>) -> Result<&mut [T]>;
    /// Ordered on `stream`; may return before the copy is done (the
    /// pinned buffer's host access waits for it). Lengths are checked by
    /// the caller.
    fn upload_pinned<T: Element>(
        stream: &Self::Stream,
        src: &Self::Pinned<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// Ordered on `stream`; as [`PinnedApi::upload_pinned`], the other way.
    fn download_pinned<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Pinned<T>,
    ) -> Result<()>;
    /// `pinned` as a kernel argument that kernels read and write in place,
    /// where the backend's kernels reach host memory (cuda: page-locked
    /// memory on a device with unified addressing); `None` where they do
    /// not. Its launches are ordered like copies.
    fn pinned_arg<T: Element>(_pinned: &mut Self::Pinned<T>) -> Option<Self::Arg<'_>> {
        None
    }
    /// Element 0 of a word that kernels write in place ([`PinnedApi::pinned_arg`]),
    /// swapped for 0 in one step that a kernel's write cannot split;
    /// it waits for nothing (the caller waited for the launches it reads
    /// after). 0 for an empty buffer.
    fn pinned_take_word(pinned: &mut Self::Pinned<u32>) -> Result<u32> {
        Ok(Self::pinned_slice_mut::<u32>(pinned)?
            .first_mut()
            .map(std::mem::take)
            .unwrap_or(0))
    }
}

/// Kernels: compiling or loading code for a device, reading shaders, and
/// launching. Contract: a launch's arguments are already checked against
/// the kernel's declaration; a launch is ordered after the earlier
/// conflicting uses of its buffers, and later uses wait for it; code the
/// backend cannot run is `Unsupported`, naming what to give instead.
pub(crate) trait KernelApi: Handles {
    /// Compiles CUDA C++ `source` (whose kernels are `decls`) for the
    /// device, or returns a `Program` with no code where the backend runs
    /// kernels' host code instead (cpu). A backend that can do neither says
    /// so with `Unsupported`.
    fn compile(
        device: &Self::Device,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program>;

    /// Loads precompiled CUDA code, `bytes` in `format` (already checked
    /// to be a well-formed image of it), on the device; its kernels are
    /// found by their symbols. A bad image is `Error::Image`, naming the
    /// device's architecture. Where the device runs no CUDA code,
    /// `Unsupported` saying what to give the kernel instead.
    fn load_image(device: &Self::Device, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        let _ = (device, bytes);
        Err(crate::error::Error::Unsupported {
            backend: Self::KIND,
            what: format!("loading {format} code: precompiled CUDA code runs on CUDA devices only"),
        })
    }

    /// Reads and checks `source`, the compute shader of kernel `name`
    /// (its `@compute` entry point named so, or its only one), into the
    /// kernel code this backend launches; the bindings at `word_arrays`
    /// hold 16-bit elements two to a word. A bad shader is
    /// `Error::Compile`. Where the backend runs no shaders, `Unsupported`.
    /// Needs no device: the kernel carries the code to whichever context
    /// launches it.
    fn shader_kernel(
        name: &str,
        source: ShaderSource<'_>,
        word_arrays: &[(usize, DType)],
    ) -> Result<KernelCode> {
        let _ = (name, source, word_arrays);
        Err(crate::error::Error::Unsupported {
            backend: Self::KIND,
            what: "compute shaders (WGSL, SPIR-V): they run on the vulkan backend".into(),
        })
    }
    /// `buffer` as an argument the kernel reads.
    fn arg<T: Element>(buffer: &Self::Buffer<T>) -> Self::Arg<'_>;
    /// `buffer` as an argument the kernel writes (and may read).
    fn arg_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Self::Arg<'_>;
    /// Enqueues the code of `kernel` this backend runs (or says it has
    /// none) on `stream`, after the earlier uses of its buffer arguments
    /// that it conflicts with. Arguments are already checked against the
    /// kernel's declaration; an `Err` among them (an array of another
    /// backend) fails the launch before anything is enqueued. An iterator,
    /// so a launch allocates one list, the backend's own.
    fn launch<'a>(
        stream: &Self::Stream,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = Result<LaunchArg<'a, Self>>>,
    ) -> Result<()>;
}

/// Every operation of one backend: what the dispatch calls through. One
/// blanket implementation, so a backend implements the per-handle traits
/// and `BuiltinOps`, nothing more.
pub(crate) trait Api:
    DeviceApi + StreamApi + EventApi + GraphApi + BufferApi + PinnedApi + KernelApi + BuiltinOps
{
}

impl<A> Api for A where
    A: DeviceApi + StreamApi + EventApi + GraphApi + BufferApi + PinnedApi + KernelApi + BuiltinOps
{
}

/// The built-in ops on one backend's buffers. Lengths and devices are
/// checked by the caller; each op is ordered on `stream` like a kernel
/// launch. Apart from the per-handle traits so that each backend's `ops.rs`
/// implements it directly.
pub(crate) trait BuiltinOps: BufferApi {
    fn fill<T: Element>(stream: &Self::Stream, x: &mut Self::Buffer<T>, value: T) -> Result<()>;
    /// `out = a (op) b`, element-wise, computed in `T::Acc`.
    fn binary<T: Float>(
        stream: &Self::Stream,
        op: Binary,
        a: &Self::Buffer<T>,
        b: &Self::Buffer<T>,
        out: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `out = op(x)`, element-wise; relu keeps NaN.
    fn unary<T: Float>(
        stream: &Self::Stream,
        op: Unary,
        x: &Self::Buffer<T>,
        out: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `y = alpha * x + y`.
    fn axpy<T: Float>(
        stream: &Self::Stream,
        alpha: T,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `x = alpha * x`.
    fn scale<T: Float>(stream: &Self::Stream, alpha: T, x: &mut Self::Buffer<T>) -> Result<()>;
    /// Sum, max (NaN-ignoring; the caller rejects empty input) or dot,
    /// accumulated in at least `T::Acc`. Waits for the result.
    fn reduce<T: Float>(
        stream: &Self::Stream,
        op: Reduce,
        x: &Self::Buffer<T>,
        y: Option<&Self::Buffer<T>>,
    ) -> Result<T>;
    /// `c[z] = a[z] · b[z]` for each of `shape.batch` products, `a[z]`
    /// m×k and `b[z]` k×n where `shape` places them in their buffers
    /// (offsets, leading dimensions, batch strides, transposed storage:
    /// read in place, never copied), `c` the whole buffer of dense
    /// row-major m×n results; f16/bf16 accumulate in f32. The facade has
    /// checked `shape` against the buffers (`GemmShape::check`).
    fn matmul<T: Float>(
        stream: &Self::Stream,
        a: &Self::Buffer<T>,
        b: &Self::Buffer<T>,
        c: &mut Self::Buffer<T>,
        shape: &GemmShape,
    ) -> Result<()>;
}

/// One argument of a launch on backend `A`.
pub(crate) enum LaunchArg<'a, A: Handles> {
    Scalar(Scalar),
    Buffer(A::Arg<'a>),
}
