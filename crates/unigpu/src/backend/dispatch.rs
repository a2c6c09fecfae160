//! The one place that names every backend: the enums the public types
//! hold, and the dispatch from them to each backend's [`Api`].

use std::ops::{Deref, DerefMut};

use super::Backend;
use super::code::{KernelCode, KernelRef, Program, ShaderSource};
use super::contract::{BuiltinOps, LaunchArg};
use super::cpu::Cpu;
use super::cuda::Cuda;
use super::torch::Torch;
use super::vulkan::Vulkan;
use super::{
    Api, BufferApi, DeviceApi, EventApi, GraphApi, Handles, KernelApi, PinnedApi, StreamApi,
};
use crate::device::{DeviceInfo, Location, MemoryInfo, MemoryStats};
use crate::dlpack::sync::DlpackSync;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat};
use crate::kernel::signature::KernelDecl;
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::GemmShape;
use unigpu_core::Grid;
use unigpu_core::Scalar;
use unigpu_core::dlpack::ManagedTensor;

/// A stream of any backend.
#[derive(Debug, Clone)]
pub(crate) enum StreamImpl {
    Cpu(<Cpu as Handles>::Stream),
    Cuda(<Cuda as Handles>::Stream),
    Torch(<Torch as Handles>::Stream),
    Vulkan(<Vulkan as Handles>::Stream),
}

/// An event of any backend.
#[derive(Debug)]
pub(crate) enum EventImpl {
    Cpu(<Cpu as Handles>::Event),
    Cuda(<Cuda as Handles>::Event),
    Torch(<Torch as Handles>::Event),
    Vulkan(<Vulkan as Handles>::Event),
}

/// Every variant of the dispatch enum `$enum`, as one pattern: the arm
/// that turns handles of different backends into `ContextMismatch` (or
/// passes over the backends without a feature) matches with it instead of
/// `_`, so that a new backend's variant is a compile error there too.
macro_rules! any_variant {
    ($enum:ident) => {
        $enum::Cpu(_) | $enum::Cuda(_) | $enum::Torch(_) | $enum::Vulkan(_)
    };
}
pub(crate) use any_variant;

/// Runs `$body` with `$A` the backend of `$value` (a dispatch enum) and
/// `$x` its handle.
macro_rules! on_backend {
    ($enum:ident, $value:expr, $A:ident, $x:ident => $body:expr) => {
        match $value {
            $enum::Cpu($x) => {
                type $A = Cpu;
                $body
            }
            $enum::Cuda($x) => {
                type $A = Cuda;
                $body
            }
            $enum::Torch($x) => {
                type $A = Torch;
                $body
            }
            $enum::Vulkan($x) => {
                type $A = Vulkan;
                $body
            }
        }
    };
}

/// Runs `$body` with `$A` the backend of two handles, or returns
/// `ContextMismatch` naming `$what` when they are of different backends.
macro_rules! on_backend2 {
    ($e1:ident, $v1:expr, $e2:ident, $v2:expr, $what:expr, $A:ident, ($x:ident, $y:ident) => $body:expr) => {
        match ($v1, $v2) {
            ($e1::Cpu($x), $e2::Cpu($y)) => {
                type $A = Cpu;
                $body
            }
            ($e1::Cuda($x), $e2::Cuda($y)) => {
                type $A = Cuda;
                $body
            }
            ($e1::Torch($x), $e2::Torch($y)) => {
                type $A = Torch;
                $body
            }
            ($e1::Vulkan($x), $e2::Vulkan($y)) => {
                type $A = Vulkan;
                $body
            }
            (any_variant!($e1), _) => Err(Error::ContextMismatch { what: $what }),
        }
    };
}

impl StreamImpl {
    pub(crate) fn sync(&self) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::stream_sync(s))
    }

    pub(crate) fn is_idle(&self) -> Result<bool> {
        on_backend!(StreamImpl, self, A, s => A::stream_is_idle(s))
    }

    pub(crate) fn wait(&self, event: &EventImpl) -> Result<()> {
        on_backend2!(StreamImpl, self, EventImpl, event, "Stream::wait", A, (s, e) => A::stream_wait(s, e))
    }

    pub(crate) fn host_fn(&self, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::host_fn(s, f))
    }

    pub(crate) fn native(&self) -> Option<u64> {
        on_backend!(StreamImpl, self, A, s => A::native_stream(s))
    }

    pub(crate) fn new_event(&self, timed: bool) -> Result<EventImpl> {
        Ok(match self {
            StreamImpl::Cpu(s) => EventImpl::Cpu(Cpu::new_event(s, timed)?),
            StreamImpl::Cuda(s) => EventImpl::Cuda(Cuda::new_event(s, timed)?),
            StreamImpl::Torch(s) => EventImpl::Torch(Torch::new_event(s, timed)?),
            StreamImpl::Vulkan(s) => EventImpl::Vulkan(Vulkan::new_event(s, timed)?),
        })
    }
}

impl EventImpl {
    pub(crate) fn backend(&self) -> Backend {
        fn kind<A: Api>(_: &A::Event) -> Backend {
            A::KIND
        }
        on_backend!(EventImpl, self, A, e => kind::<A>(e))
    }

    pub(crate) fn record(&self, stream: &StreamImpl) -> Result<()> {
        on_backend2!(EventImpl, self, StreamImpl, stream, "Event::record", A, (e, s) => A::record(e, s))
    }

    pub(crate) fn sync(&self) -> Result<()> {
        on_backend!(EventImpl, self, A, e => A::event_sync(e))
    }

    pub(crate) fn query(&self) -> Result<bool> {
        on_backend!(EventImpl, self, A, e => A::event_query(e))
    }

    pub(crate) fn elapsed_ms(&self, end: &EventImpl) -> Result<f32> {
        on_backend2!(EventImpl, self, EventImpl, end, "Event::elapsed_ms", A, (a, b) => A::elapsed_ms(a, b))
    }
}

/// An opened device of any backend.
#[derive(Debug)]
pub(crate) enum DeviceImpl {
    Cpu(<Cpu as Handles>::Device),
    Cuda(<Cuda as Handles>::Device),
    Torch(<Torch as Handles>::Device),
    Vulkan(<Vulkan as Handles>::Device),
}

impl DeviceImpl {
    pub(crate) fn open(backend: Backend, ordinal: usize) -> Result<DeviceImpl> {
        Ok(match backend {
            Backend::Cpu => DeviceImpl::Cpu(Cpu::open(ordinal)?),
            Backend::Cuda => DeviceImpl::Cuda(Cuda::open(ordinal)?),
            Backend::Torch => DeviceImpl::Torch(Torch::open(ordinal)?),
            Backend::Vulkan => DeviceImpl::Vulkan(Vulkan::open(ordinal)?),
        })
    }

    /// Opens `backend`'s device `ordinal` as one link of the fallback
    /// chain. Unless the config asked for the backend by name
    /// (`required`), a device its backend would rather not be chosen by
    /// default ([`Api::fallback_refusal`]) is passed over unopened, as
    /// unavailable, with the backend's reason.
    pub(crate) fn open_in_chain(
        backend: Backend,
        ordinal: usize,
        required: bool,
    ) -> Result<DeviceImpl> {
        if !required {
            if let Some(reason) = Self::fallback_refusal(backend, ordinal) {
                return Err(Error::BackendUnavailable { backend, reason });
            }
        }
        Self::open(backend, ordinal)
    }

    /// [`Api::hardware`] of `backend`.
    pub(crate) fn hardware(backend: Backend) -> Option<String> {
        match backend {
            Backend::Cpu => Cpu::hardware(),
            Backend::Cuda => Cuda::hardware(),
            Backend::Torch => Torch::hardware(),
            Backend::Vulkan => Vulkan::hardware(),
        }
    }

    fn fallback_refusal(backend: Backend, ordinal: usize) -> Option<String> {
        match backend {
            Backend::Cpu => Cpu::fallback_refusal(ordinal),
            Backend::Cuda => Cuda::fallback_refusal(ordinal),
            Backend::Torch => Torch::fallback_refusal(ordinal),
            Backend::Vulkan => Vulkan::fallback_refusal(ordinal),
        }
    }

    /// Every device `backend` can use here, or why none.
    pub(crate) fn list(backend: Backend) -> Result<Vec<DeviceInfo>> {
        fn all<A: Api>() -> Result<Vec<DeviceInfo>> {
            (0..A::device_count()?)
                .map(|i| A::info(&A::open(i)?))
                .collect()
        }
        match backend {
            Backend::Cpu => all::<Cpu>(),
            Backend::Cuda => all::<Cuda>(),
            Backend::Torch => all::<Torch>(),
            Backend::Vulkan => all::<Vulkan>(),
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        fn kind<A: Api>(_: &A::Device) -> Backend {
            A::KIND
        }
        on_backend!(DeviceImpl, self, A, d => kind::<A>(d))
    }

    pub(crate) fn info(&self) -> Result<DeviceInfo> {
        on_backend!(DeviceImpl, self, A, d => A::info(d))
    }

    pub(crate) fn memory_info(&self) -> Result<MemoryInfo> {
        on_backend!(DeviceImpl, self, A, d => A::memory_info(d))
    }

    pub(crate) fn memory_stats(&self) -> Result<MemoryStats> {
        on_backend!(DeviceImpl, self, A, d => A::memory_stats(d))
    }

    pub(crate) fn empty_cache(&self) -> Result<usize> {
        on_backend!(DeviceImpl, self, A, d => A::empty_cache(d))
    }

    pub(crate) fn same(&self, other: &DeviceImpl) -> bool {
        let same: Result<bool> = on_backend2!(DeviceImpl, self, DeviceImpl, other, "same device", A, (a, b) => Ok(A::same_device(a, b)));
        same.unwrap_or(false)
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        on_backend!(DeviceImpl, self, A, d => A::synchronize(d))
    }

    pub(crate) fn default_stream(&self) -> Result<StreamImpl> {
        Ok(match self {
            DeviceImpl::Cpu(d) => StreamImpl::Cpu(Cpu::default_stream(d)?),
            DeviceImpl::Cuda(d) => StreamImpl::Cuda(Cuda::default_stream(d)?),
            DeviceImpl::Torch(d) => StreamImpl::Torch(Torch::default_stream(d)?),
            DeviceImpl::Vulkan(d) => StreamImpl::Vulkan(Vulkan::default_stream(d)?),
        })
    }

    pub(crate) fn new_stream(&self) -> Result<StreamImpl> {
        Ok(match self {
            DeviceImpl::Cpu(d) => StreamImpl::Cpu(Cpu::new_stream(d)?),
            DeviceImpl::Cuda(d) => StreamImpl::Cuda(Cuda::new_stream(d)?),
            DeviceImpl::Torch(d) => StreamImpl::Torch(Torch::new_stream(d)?),
            DeviceImpl::Vulkan(d) => StreamImpl::Vulkan(Vulkan::new_stream(d)?),
        })
    }
}

/// The memory of a `GpuArray<T>`, on any backend.
pub(crate) enum Storage<T: Element> {
    Cpu(<Cpu as Handles>::Buffer<T>),
    Cuda(<Cuda as Handles>::Buffer<T>),
    Torch(<Torch as Handles>::Buffer<T>),
    Vulkan(<Vulkan as Handles>::Buffer<T>),
}

macro_rules! new_storage {
    ($stream:expr, $s:ident, $A:ident => $body:expr) => {
        Ok(match $stream {
            StreamImpl::Cpu($s) => {
                type $A = Cpu;
                Storage::Cpu($body?)
            }
            StreamImpl::Cuda($s) => {
                type $A = Cuda;
                Storage::Cuda($body?)
            }
            StreamImpl::Torch($s) => {
                type $A = Torch;
                Storage::Torch($body?)
            }
            StreamImpl::Vulkan($s) => {
                type $A = Vulkan;
                Storage::Vulkan($body?)
            }
        })
    };
}

impl<T: Element> Storage<T> {
    /// `len` elements with unspecified contents, for `stream`'s device.
    pub(crate) fn alloc(stream: &StreamImpl, len: usize) -> Result<Storage<T>> {
        new_storage!(stream, s, A => A::alloc::<T>(s, len))
    }

    pub(crate) fn zeros(stream: &StreamImpl, len: usize) -> Result<Storage<T>> {
        new_storage!(stream, s, A => A::zeros::<T>(s, len))
    }

    pub(crate) fn from_host(stream: &StreamImpl, host: &[T]) -> Result<Storage<T>> {
        new_storage!(stream, s, A => A::from_host::<T>(s, host))
    }

    pub(crate) fn len(&self) -> usize {
        on_backend!(Storage, self, A, b => A::len::<T>(b))
    }

    pub(crate) fn read(&self, stream: &StreamImpl, host: &mut [T]) -> Result<()> {
        on_backend2!(Storage, self, StreamImpl, stream, "GpuArray::download", A, (b, s) => A::read(s, b, host))
    }

    pub(crate) fn read_vec(&self, stream: &StreamImpl) -> Result<Vec<T>> {
        on_backend2!(Storage, self, StreamImpl, stream, "GpuArray::download", A, (b, s) => A::read_vec(s, b))
    }

    pub(crate) fn write(&mut self, stream: &StreamImpl, host: &[T]) -> Result<()> {
        on_backend2!(Storage, self, StreamImpl, stream, "GpuArray::upload_from", A, (b, s) => A::write(s, b, host))
    }
}

impl StreamImpl {
    pub(crate) fn upload<T: Element>(&self, host: &[T], dst: &mut Storage<T>) -> Result<()> {
        on_backend2!(StreamImpl, self, Storage, dst, "Stream::upload", A, (s, d) => A::upload(s, host, d))
    }

    pub(crate) fn download_into<T: Element>(&self, src: &Storage<T>, host: &mut [T]) -> Result<()> {
        on_backend2!(StreamImpl, self, Storage, src, "Stream::download", A, (s, b) => A::download_into(s, b, host))
    }

    pub(crate) fn copy<T: Element>(&self, src: &Storage<T>, dst: &mut Storage<T>) -> Result<()> {
        match (self, src, dst) {
            (StreamImpl::Cpu(s), Storage::Cpu(a), Storage::Cpu(b)) => Cpu::copy(s, a, b),
            (StreamImpl::Cuda(s), Storage::Cuda(a), Storage::Cuda(b)) => Cuda::copy::<T>(s, a, b),
            (StreamImpl::Torch(s), Storage::Torch(a), Storage::Torch(b)) => {
                Torch::copy::<T>(s, a, b)
            }
            (StreamImpl::Vulkan(s), Storage::Vulkan(a), Storage::Vulkan(b)) => {
                Vulkan::copy::<T>(s, a, b)
            }
            (any_variant!(StreamImpl), _, _) => Err(Error::ContextMismatch {
                what: "Stream::copy",
            }),
        }
    }
}

/// Where a backend's handles sit in the dispatch enums: each backend's
/// buffer taken back out of a `Storage`, or `ContextMismatch` when it is
/// another backend's.
trait Variant: Api {
    fn buffer<T: Element>(s: &Storage<T>) -> Option<&Self::Buffer<T>>;
    fn buffer_mut<T: Element>(s: &mut Storage<T>) -> Option<&mut Self::Buffer<T>>;
    fn launch_arg(a: ArgImpl<'_>) -> Option<LaunchArg<'_, Self>>;
}

macro_rules! variant {
    ($A:ident) => {
        impl Variant for $A {
            fn buffer<T: Element>(s: &Storage<T>) -> Option<&Self::Buffer<T>> {
                match s {
                    Storage::$A(b) => Some(b),
                    #[allow(unreachable_patterns)]
                    any_variant!(Storage) => None,
                }
            }
            fn buffer_mut<T: Element>(s: &mut Storage<T>) -> Option<&mut Self::Buffer<T>> {
                match s {
                    Storage::$A(b) => Some(b),
                    #[allow(unreachable_patterns)]
                    any_variant!(Storage) => None,
                }
            }
            fn launch_arg(a: ArgImpl<'_>) -> Option<LaunchArg<'_, Self>> {
                match a {
                    ArgImpl::Scalar(s) => Some(LaunchArg::Scalar(s)),
                    ArgImpl::$A(b) => Some(LaunchArg::Buffer(b)),
                    #[allow(unreachable_patterns)]
                    any_variant!(ArgImpl) => None,
                }
            }
        }
    };
}
variant!(Cpu);
variant!(Cuda);
variant!(Torch);
variant!(Vulkan);

fn mine<'a, A: Variant, T: Element>(
    s: &'a Storage<T>,
    what: &'static str,
) -> Result<&'a A::Buffer<T>> {
    A::buffer(s).ok_or(Error::ContextMismatch { what })
}

fn mine_mut<'a, A: Variant, T: Element>(
    s: &'a mut Storage<T>,
    what: &'static str,
) -> Result<&'a mut A::Buffer<T>> {
    A::buffer_mut(s).ok_or(Error::ContextMismatch { what })
}

/// The built-in ops, on the stream's backend.
impl StreamImpl {
    pub(crate) fn fill<T: Element>(&self, x: &mut Storage<T>, value: T) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::fill::<T>(s, mine_mut::<A, T>(x, "fill")?, value))
    }

    pub(crate) fn binary<T: Float>(
        &self,
        op: Binary,
        a: &Storage<T>,
        b: &Storage<T>,
        out: &mut Storage<T>,
    ) -> Result<()> {
        const WHAT: &str = "element-wise op";
        on_backend!(StreamImpl, self, A, s => A::binary::<T>(
            s,
            op,
            mine::<A, T>(a, WHAT)?,
            mine::<A, T>(b, WHAT)?,
            mine_mut::<A, T>(out, WHAT)?,
        ))
    }

    pub(crate) fn unary<T: Float>(
        &self,
        op: Unary,
        x: &Storage<T>,
        out: &mut Storage<T>,
    ) -> Result<()> {
        const WHAT: &str = "element-wise op";
        on_backend!(StreamImpl, self, A, s => A::unary::<T>(s, op, mine::<A, T>(x, WHAT)?, mine_mut::<A, T>(out, WHAT)?))
    }

    pub(crate) fn axpy<T: Float>(
        &self,
        alpha: T,
        x: &Storage<T>,
        y: &mut Storage<T>,
    ) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::axpy::<T>(s, alpha, mine::<A, T>(x, "axpy")?, mine_mut::<A, T>(y, "axpy")?))
    }

    pub(crate) fn scale<T: Float>(&self, alpha: T, x: &mut Storage<T>) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::scale::<T>(s, alpha, mine_mut::<A, T>(x, "scale")?))
    }

    pub(crate) fn reduce<T: Float>(
        &self,
        op: Reduce,
        x: &Storage<T>,
        y: Option<&Storage<T>>,
    ) -> Result<T> {
        const WHAT: &str = "reduction";
        on_backend!(StreamImpl, self, A, s => {
            let y = match y {
                Some(y) => Some(mine::<A, T>(y, WHAT)?),
                None => None,
            };
            A::reduce::<T>(s, op, mine::<A, T>(x, WHAT)?, y)
        })
    }

    pub(crate) fn matmul<T: Float>(
        &self,
        a: &Storage<T>,
        b: &Storage<T>,
        c: &mut Storage<T>,
        shape: &GemmShape,
    ) -> Result<()> {
        const WHAT: &str = "matmul";
        on_backend!(StreamImpl, self, A, s => A::matmul::<T>(
            s,
            mine::<A, T>(a, WHAT)?,
            mine::<A, T>(b, WHAT)?,
            mine_mut::<A, T>(c, WHAT)?,
            shape,
        ))
    }
}

/// One launch argument, on any backend.
pub(crate) enum ArgImpl<'a> {
    Scalar(Scalar),
    Cpu(<Cpu as Handles>::Arg<'a>),
    Cuda(<Cuda as Handles>::Arg<'a>),
    Torch(<Torch as Handles>::Arg<'a>),
    Vulkan(<Vulkan as Handles>::Arg<'a>),
}

impl<T: Element> Storage<T> {
    // Without the torch feature the torch arms take an empty enum.
    #[allow(unreachable_code)]
    pub(crate) fn arg(&self) -> ArgImpl<'_> {
        match self {
            Storage::Cpu(b) => ArgImpl::Cpu(Cpu::arg::<T>(b)),
            Storage::Cuda(b) => ArgImpl::Cuda(Cuda::arg::<T>(b)),
            Storage::Torch(b) => ArgImpl::Torch(Torch::arg::<T>(b)),
            Storage::Vulkan(b) => ArgImpl::Vulkan(Vulkan::arg::<T>(b)),
        }
    }

    #[allow(unreachable_code)]
    pub(crate) fn arg_mut(&mut self) -> ArgImpl<'_> {
        match self {
            Storage::Cpu(b) => ArgImpl::Cpu(Cpu::arg_mut::<T>(b)),
            Storage::Cuda(b) => ArgImpl::Cuda(Cuda::arg_mut::<T>(b)),
            Storage::Torch(b) => ArgImpl::Torch(Torch::arg_mut::<T>(b)),
            Storage::Vulkan(b) => ArgImpl::Vulkan(Vulkan::arg_mut::<T>(b)),
        }
    }
}

impl StreamImpl {
    pub(crate) fn launch<'a>(
        &self,
        kernel: KernelRef<'_>,
        grid: Grid,
        args: impl ExactSizeIterator<Item = ArgImpl<'a>>,
    ) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::launch(
            s,
            kernel,
            grid,
            args.map(|a| A::launch_arg(a).ok_or(Error::ContextMismatch { what: "launch" })),
        ))
    }
}

impl DeviceImpl {
    pub(crate) fn compile(
        &self,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program> {
        on_backend!(DeviceImpl, self, A, d => A::compile(d, source, options, decls))
    }

    pub(crate) fn load_image(&self, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        on_backend!(DeviceImpl, self, A, d => A::load_image(d, format, bytes))
    }
}

/// DLPack, on the array's backend.
impl<T: Element> Storage<T> {
    pub(crate) fn export_dlpack(
        &mut self,
        stream: &StreamImpl,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        on_backend2!(Storage, self, StreamImpl, stream, "GpuArray::to_dlpack", A, (b, s) => A::to_dlpack::<T>(s, b, sync))
    }

    pub(crate) fn from_dlpack(stream: &StreamImpl, tensor: ManagedTensor) -> Result<Storage<T>> {
        new_storage!(stream, s, A => A::from_dlpack::<T>(s, tensor))
    }

    /// A copy in another backend's memory on the same GPU, made without the
    /// host, where the two backends have such a path (`None` where not).
    pub(crate) fn move_to(&self, from: &StreamImpl, to: &StreamImpl) -> Option<Result<Storage<T>>> {
        match (self, from, to) {
            #[cfg(feature = "torch")]
            (Storage::Cuda(b), StreamImpl::Cuda(c), StreamImpl::Torch(t)) => {
                Some(super::interop::cuda_to_torch(b, c, t).map(Storage::Torch))
            }
            #[cfg(feature = "torch")]
            (Storage::Torch(b), StreamImpl::Torch(t), StreamImpl::Cuda(c)) => {
                Some(super::interop::torch_to_cuda(b, t, c).map(Storage::Cuda))
            }
            (any_variant!(Storage), _, _) => {
                let _ = (from, to);
                None
            }
        }
    }
}

/// Several devices of one backend.
impl<T: Element> Storage<T> {
    /// Copies into `dst`, on another device of the same backend, without
    /// the host where the backend can (`Api::copy_between_devices`; vulkan
    /// stages through host memory).
    pub(crate) fn copy_between_devices(
        &self,
        from: &StreamImpl,
        dst: &mut Storage<T>,
        to: &StreamImpl,
    ) -> Result<()> {
        match (self, from, dst, to) {
            (Storage::Cpu(a), StreamImpl::Cpu(s), Storage::Cpu(b), StreamImpl::Cpu(t)) => {
                Cpu::copy_between_devices(s, a, t, b)
            }
            (Storage::Cuda(a), StreamImpl::Cuda(s), Storage::Cuda(b), StreamImpl::Cuda(t)) => {
                Cuda::copy_between_devices::<T>(s, a, t, b)
            }
            (Storage::Torch(a), StreamImpl::Torch(s), Storage::Torch(b), StreamImpl::Torch(t)) => {
                Torch::copy_between_devices::<T>(s, a, t, b)
            }
            (
                Storage::Vulkan(a),
                StreamImpl::Vulkan(s),
                Storage::Vulkan(b),
                StreamImpl::Vulkan(t),
            ) => Vulkan::copy_between_devices::<T>(s, a, t, b),
            (any_variant!(Storage), _, _, _) => Err(Error::ContextMismatch {
                what: "copy between devices",
            }),
        }
    }
}

/// A kernel's compute shader, made by the backend that runs shaders
/// ([`Api::shader_kernel`] of vulkan; in a build without it, its stand-in
/// keeps the shader unread).
pub(crate) fn shader_kernel(
    name: &str,
    source: ShaderSource<'_>,
    word_arrays: &[(usize, DType)],
) -> Result<KernelCode> {
    Vulkan::shader_kernel(name, source, word_arrays)
}

/// [`Api::DLPACK_DEVICE_TYPE`] of `backend`.
pub(crate) fn dlpack_device_type(backend: Backend) -> i32 {
    match backend {
        Backend::Cpu => Cpu::DLPACK_DEVICE_TYPE,
        Backend::Cuda => Cuda::DLPACK_DEVICE_TYPE,
        Backend::Torch => Torch::DLPACK_DEVICE_TYPE,
        Backend::Vulkan => Vulkan::DLPACK_DEVICE_TYPE,
    }
}

/// Whether `backend`'s device `from` reaches device `to`'s memory.
pub(crate) fn can_access_peer(backend: Backend, from: usize, to: usize) -> Result<bool> {
    match backend {
        Backend::Cpu => Cpu::can_access_peer(from, to),
        Backend::Cuda => Cuda::can_access_peer(from, to),
        Backend::Torch => Torch::can_access_peer(from, to),
        Backend::Vulkan => Vulkan::can_access_peer(from, to),
    }
}

/// A graph of one backend.
#[derive(Debug)]
pub(crate) enum GraphImpl {
    Cpu(<Cpu as Handles>::Graph),
    Cuda(<Cuda as Handles>::Graph),
    Torch(<Torch as Handles>::Graph),
    Vulkan(<Vulkan as Handles>::Graph),
}

impl StreamImpl {
    pub(crate) fn begin_capture(&self) -> Result<()> {
        on_backend!(StreamImpl, self, A, s => A::begin_capture(s))
    }

    pub(crate) fn end_capture(&self) -> Result<GraphImpl> {
        Ok(match self {
            StreamImpl::Cpu(s) => GraphImpl::Cpu(Cpu::end_capture(s)?),
            StreamImpl::Cuda(s) => GraphImpl::Cuda(Cuda::end_capture(s)?),
            StreamImpl::Torch(s) => GraphImpl::Torch(Torch::end_capture(s)?),
            StreamImpl::Vulkan(s) => GraphImpl::Vulkan(Vulkan::end_capture(s)?),
        })
    }

    pub(crate) fn is_capturing(&self) -> bool {
        on_backend!(StreamImpl, self, A, s => A::is_capturing(s))
    }

    pub(crate) fn backend(&self) -> Backend {
        fn kind<A: Api>(_: &A::Stream) -> Backend {
            A::KIND
        }
        on_backend!(StreamImpl, self, A, s => kind::<A>(s))
    }
}

impl GraphImpl {
    pub(crate) fn launch(&self, stream: &StreamImpl) -> Result<()> {
        on_backend2!(GraphImpl, self, StreamImpl, stream, "Graph::launch", A, (g, s) => A::graph_launch(g, s))
    }

    pub(crate) fn len(&self) -> usize {
        on_backend!(GraphImpl, self, A, g => A::graph_len(g))
    }
}

/// A pinned host buffer of any backend.
#[derive(Debug)]
pub(crate) enum PinnedImpl<T: Element> {
    Cpu(<Cpu as PinnedApi>::Pinned<T>),
    Cuda(<Cuda as PinnedApi>::Pinned<T>),
    Torch(<Torch as PinnedApi>::Pinned<T>),
    Vulkan(<Vulkan as PinnedApi>::Pinned<T>),
}

impl<T: Element> PinnedImpl<T> {
    pub(crate) fn new(stream: &StreamImpl, len: usize) -> Result<PinnedImpl<T>> {
        Ok(match stream {
            StreamImpl::Cpu(s) => PinnedImpl::Cpu(Cpu::pinned::<T>(s, len)?),
            StreamImpl::Cuda(s) => PinnedImpl::Cuda(Cuda::pinned::<T>(s, len)?),
            StreamImpl::Torch(s) => PinnedImpl::Torch(Torch::pinned::<T>(s, len)?),
            StreamImpl::Vulkan(s) => PinnedImpl::Vulkan(Vulkan::pinned::<T>(s, len)?),
        })
    }

    pub(crate) fn len(&self) -> usize {
        on_backend!(PinnedImpl, self, A, p => A::pinned_len::<T>(p))
    }

    pub(crate) fn slice(&self) -> Result<&[T]> {
        on_backend!(PinnedImpl, self, A, p => A::pinned_slice::<T>(p))
    }

    pub(crate) fn slice_mut(&mut self) -> Result<&mut [T]> {
        on_backend!(PinnedImpl, self, A, p => A::pinned_slice_mut::<T>(p))
    }

    /// The buffer as a kernel argument written in place, where the
    /// backend's kernels reach host memory.
    // Without the torch feature the torch arm takes an empty enum.
    #[allow(unreachable_code)]
    pub(crate) fn arg_mut(&mut self) -> Option<ArgImpl<'_>> {
        match self {
            PinnedImpl::Cpu(p) => Cpu::pinned_arg::<T>(p).map(ArgImpl::Cpu),
            PinnedImpl::Cuda(p) => Cuda::pinned_arg::<T>(p).map(ArgImpl::Cuda),
            PinnedImpl::Torch(p) => Torch::pinned_arg::<T>(p).map(ArgImpl::Torch),
            PinnedImpl::Vulkan(p) => Vulkan::pinned_arg::<T>(p).map(ArgImpl::Vulkan),
        }
    }
}

impl PinnedImpl<u32> {
    /// Element 0 swapped for 0 ([`PinnedApi::pinned_take_word`]).
    pub(crate) fn take_word(&mut self) -> Result<u32> {
        on_backend!(PinnedImpl, self, A, p => A::pinned_take_word(p))
    }
}

impl StreamImpl {
    pub(crate) fn upload_pinned<T: Element>(
        &self,
        src: &PinnedImpl<T>,
        dst: &mut Storage<T>,
    ) -> Result<()> {
        match (self, src, dst) {
            (StreamImpl::Cpu(s), PinnedImpl::Cpu(p), Storage::Cpu(b)) => {
                Cpu::upload_pinned::<T>(s, p, b)
            }
            (StreamImpl::Cuda(s), PinnedImpl::Cuda(p), Storage::Cuda(b)) => {
                Cuda::upload_pinned::<T>(s, p, b)
            }
            (StreamImpl::Torch(s), PinnedImpl::Torch(p), Storage::Torch(b)) => {
                Torch::upload_pinned::<T>(s, p, b)
            }
            (StreamImpl::Vulkan(s), PinnedImpl::Vulkan(p), Storage::Vulkan(b)) => {
                Vulkan::upload_pinned::<T>(s, p, b)
            }
            (any_variant!(StreamImpl), _, _) => Err(Error::ContextMismatch {
                what: "Stream::upload_pinned",
            }),
        }
    }

    pub(crate) fn download_pinned<T: Element>(
        &self,
        src: &Storage<T>,
        dst: &mut PinnedImpl<T>,
    ) -> Result<()> {
        match (self, src, dst) {
            (StreamImpl::Cpu(s), Storage::Cpu(b), PinnedImpl::Cpu(p)) => {
                Cpu::download_pinned::<T>(s, b, p)
            }
            (StreamImpl::Cuda(s), Storage::Cuda(b), PinnedImpl::Cuda(p)) => {
                Cuda::download_pinned::<T>(s, b, p)
            }
            (StreamImpl::Torch(s), Storage::Torch(b), PinnedImpl::Torch(p)) => {
                Torch::download_pinned::<T>(s, b, p)
            }
            (StreamImpl::Vulkan(s), Storage::Vulkan(b), PinnedImpl::Vulkan(p)) => {
                Vulkan::download_pinned::<T>(s, b, p)
            }
            (any_variant!(StreamImpl), _, _) => Err(Error::ContextMismatch {
                what: "Stream::download_pinned",
            }),
        }
    }
}

/// A unified array's elements seen from the host, on any backend.
pub(crate) enum HostViewImpl<'a, T: Element> {
    Cpu(<Cpu as Handles>::HostView<'a, T>),
    Cuda(<Cuda as Handles>::HostView<'a, T>),
    Torch(<Torch as Handles>::HostView<'a, T>),
    Vulkan(<Vulkan as Handles>::HostView<'a, T>),
}

/// As [`HostViewImpl`], writable.
pub(crate) enum HostViewMutImpl<'a, T: Element> {
    Cpu(<Cpu as Handles>::HostViewMut<'a, T>),
    Cuda(<Cuda as Handles>::HostViewMut<'a, T>),
    Torch(<Torch as Handles>::HostViewMut<'a, T>),
    Vulkan(<Vulkan as Handles>::HostViewMut<'a, T>),
}

impl<T: Element> Deref for HostViewImpl<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            HostViewImpl::Cpu(v) => v,
            HostViewImpl::Cuda(v) => v,
            HostViewImpl::Torch(v) => v,
            HostViewImpl::Vulkan(v) => v,
        }
    }
}

impl<T: Element> Deref for HostViewMutImpl<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            HostViewMutImpl::Cpu(v) => v,
            HostViewMutImpl::Cuda(v) => v,
            HostViewMutImpl::Torch(v) => v,
            HostViewMutImpl::Vulkan(v) => v,
        }
    }
}

impl<T: Element> DerefMut for HostViewMutImpl<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            HostViewMutImpl::Cpu(v) => v,
            HostViewMutImpl::Cuda(v) => v,
            HostViewMutImpl::Torch(v) => v,
            HostViewMutImpl::Vulkan(v) => v,
        }
    }
}

/// Unified memory, on the array's backend.
impl<T: Element> Storage<T> {
    pub(crate) fn alloc_unified(stream: &StreamImpl, len: usize) -> Result<Storage<T>> {
        new_storage!(stream, s, A => A::alloc_unified::<T>(s, len))
    }

    pub(crate) fn is_unified(&self) -> bool {
        on_backend!(Storage, self, A, b => A::is_unified::<T>(b))
    }

    pub(crate) fn host_view(&self) -> Result<HostViewImpl<'_, T>> {
        Ok(match self {
            Storage::Cpu(b) => HostViewImpl::Cpu(Cpu::host_view::<T>(b)?),
            Storage::Cuda(b) => HostViewImpl::Cuda(Cuda::host_view::<T>(b)?),
            Storage::Torch(b) => HostViewImpl::Torch(Torch::host_view::<T>(b)?),
            Storage::Vulkan(b) => HostViewImpl::Vulkan(Vulkan::host_view::<T>(b)?),
        })
    }

    pub(crate) fn host_view_mut(&mut self) -> Result<HostViewMutImpl<'_, T>> {
        Ok(match self {
            Storage::Cpu(b) => HostViewMutImpl::Cpu(Cpu::host_view_mut::<T>(b)?),
            Storage::Cuda(b) => HostViewMutImpl::Cuda(Cuda::host_view_mut::<T>(b)?),
            Storage::Torch(b) => HostViewMutImpl::Torch(Torch::host_view_mut::<T>(b)?),
            Storage::Vulkan(b) => HostViewMutImpl::Vulkan(Vulkan::host_view_mut::<T>(b)?),
        })
    }
}

impl StreamImpl {
    pub(crate) fn prefetch<T: Element>(&self, array: &Storage<T>, to: Location) -> Result<()> {
        on_backend2!(StreamImpl, self, Storage, array, "Stream::prefetch", A, (s, b) => A::prefetch::<T>(s, b, to))
    }
}

/// The vulkan arm of `Storage::copy_between_devices` (issue 25: there was
/// none, and two adapters gave `ContextMismatch`). Two streams of one
/// adapter stand in for two adapters here, since CI has one (lavapipe);
/// the test lives beside the dispatch, which may name every backend;
/// `tests/multi_gpu.rs` copies between two real ones through `copy_to`.
#[cfg(test)]
mod vulkan_copy_between_devices {
    use std::sync::mpsc;
    use std::time::Duration;

    use rand::Rng;

    use crate::backend::{Backend, DeviceImpl, Storage};

    #[test]
    #[ignore = "needs a Vulkan adapter"]
    fn vulkan() {
        let device = DeviceImpl::open(Backend::Vulkan, 0)
            .unwrap_or_else(|e| panic!("this test needs a Vulkan adapter: {e}"));
        let (s, t) = (
            device.default_stream().unwrap(),
            device.new_stream().unwrap(),
        );
        let mut rng = rand::rng();
        let n = rng.random_range(1..100_000);
        let first: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let second: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let mut src = Storage::from_host(&s, &first).unwrap();
        let mut dst = Storage::<u32>::zeros(&t, n).unwrap();
        src.copy_between_devices(&s, &mut dst, &t).unwrap();
        assert!(dst.read_vec(&t).unwrap() == first, "the copy differs");

        // The copy waits for `src`'s pending write: `s` is held back by a
        // gate until after the copy has been asked for.
        let (open, gate) = mpsc::channel::<()>();
        s.host_fn(Box::new(move || {
            let _ = gate.recv();
        }))
        .unwrap();
        s.upload(&second, &mut src).unwrap();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let _ = open.send(());
        });
        src.copy_between_devices(&s, &mut dst, &t).unwrap();
        opener.join().unwrap();
        assert!(
            dst.read_vec(&t).unwrap() == second,
            "the copy read `src` before its pending write"
        );
    }
}

/// Every backend's variant is handled where the compiler cannot see it:
/// each `Backend` opens its own backend's type (or its stand-in, in a
/// build without the feature) and reports that type's DLPack device type,
/// the one of the kind of device it drives. `Backend::ALL` lists every
/// variant by construction (`listed_enum!`), so a new backend runs here.
#[cfg(test)]
mod every_backend {
    use unigpu_core::dlpack::ffi;

    use super::{Cpu, Cuda, Handles, Torch, Vulkan, dlpack_device_type};
    use crate::backend::{Backend, DeviceKind};

    /// The `Api::KIND` of the type the dispatch runs for `backend`.
    fn kind_of_its_type(backend: Backend) -> Backend {
        match backend {
            Backend::Cpu => Cpu::KIND,
            Backend::Cuda => Cuda::KIND,
            Backend::Torch => Torch::KIND,
            Backend::Vulkan => Vulkan::KIND,
        }
    }

    fn dlpack_type_of(kind: DeviceKind) -> i32 {
        match kind {
            DeviceKind::Cpu => ffi::kDLCPU,
            DeviceKind::Cuda => ffi::kDLCUDA,
            DeviceKind::Vulkan => ffi::kDLVulkan,
        }
    }

    #[test]
    fn each_backend_dispatches_to_its_own_type() {
        for b in Backend::ALL {
            assert_eq!(kind_of_its_type(b), b);
            assert_eq!(
                dlpack_device_type(b),
                dlpack_type_of(b.device_kind()),
                "{b}"
            );
        }
    }
}
