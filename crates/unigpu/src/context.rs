//! `Context`: the entry point. Picks a backend, owns the device and its
//! default stream, and hands out arrays, streams and events.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use unigpu_cuda_safe::{CudaDevice, CudaStreamHandle};

use crate::backend::cpu::CpuStream;
use crate::backend::{BackendAttempt, Outcome};
use crate::config::{BackendChoice, Config};
use crate::device::{DeviceInfo, MemoryInfo, cpu_device_info, cuda_device_info};
use crate::event::Event;
use crate::stream::{Stream, StreamImpl};
use crate::{Backend, DType, Element, Error, GpuArray, Result};

#[cfg(not(feature = "torch"))]
pub(crate) const TORCH_UNAVAILABLE: &str =
    "unigpu was built without the `torch` feature (the torch tier is not in this build)";

/// A device plus its default stream, shared by everything made from it.
///
/// `Clone` is cheap (an `Arc`), and `Context` is Send + Sync: clone it into
/// as many threads as you like. The device is released when the last
/// context, array, stream and event from it are gone.
#[derive(Debug, Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    device: DeviceImpl,
    ordinal: usize,
    default_stream: Stream,
    chain: Vec<BackendAttempt>,
    config: Config,
    /// CPU streams made from this context, so `sync` can wait for them all
    /// as `cuCtxSynchronize` does on CUDA.
    cpu_streams: Mutex<Vec<Weak<CpuStream>>>,
    /// Modules compiled in this context, by cache key.
    modules: Mutex<HashMap<crate::kernel::cache::Key, crate::kernel::Module>>,
    /// The device's compute capability, read once.
    arch: OnceLock<(i32, i32)>,
    /// Kernels of the built-in ops, looked up once each.
    builtin: Mutex<HashMap<String, crate::kernel::Kernel>>,
    /// The cuBLAS handle, created on the first matmul.
    blas: Mutex<Option<Arc<unigpu_cuda_safe::BlasHandle>>>,
}

#[derive(Debug)]
pub(crate) enum DeviceImpl {
    Cpu,
    Cuda(CudaDevice),
    #[cfg(feature = "torch")]
    Torch(crate::backend::torch::TorchDevice),
}

impl Context {
    /// The context a program gets when it does not choose: the config file
    /// and `UNIGPU_*` variables first, then torch → cuda → cpu, recording
    /// why each skipped backend was skipped ([`Context::fallback_chain`]).
    #[allow(clippy::should_implement_trait)] // fallible, so it cannot be `Default`
    pub fn default() -> Result<Context> {
        Context::from_config(Config::load()?)
    }

    /// Reads `path` as a `unigpu.toml` (environment overrides still apply).
    pub fn from_config_file(path: impl AsRef<Path>) -> Result<Context> {
        let mut config = Config::from_file(path.as_ref())?;
        config.apply_env_overrides(
            std::env::var(crate::config::BACKEND_ENV).ok().as_deref(),
            std::env::var(crate::config::DEVICE_ENV).ok().as_deref(),
        )?;
        Context::from_config(config)
    }

    /// Exactly `backend`, device `device_id`; no fallback.
    pub fn new(backend: Backend, device_id: usize) -> Result<Context> {
        let device = match backend {
            Backend::Cpu if device_id != 0 => {
                return Err(Error::InvalidDevice {
                    backend,
                    asked: device_id,
                    available: 1,
                });
            }
            Backend::Cpu => None,
            Backend::Cuda | Backend::Torch => Some(crate::config::DeviceSpec {
                kind: Backend::Cuda,
                ordinal: device_id,
            }),
        };
        Context::from_config(Config {
            backend: BackendChoice::Only(backend),
            device,
            ..Config::default()
        })
    }

    /// The CPU backend, which is always available.
    pub fn cpu() -> Result<Context> {
        Context::new(Backend::Cpu, 0)
    }

    /// A context from resolved settings.
    pub fn from_config(config: Config) -> Result<Context> {
        let ordinal = config.device.map_or(0, |d| d.ordinal);
        let mut chain = Vec::new();
        let mut chosen = None;
        for backend in Backend::ALL {
            if chosen.is_some() {
                chain.push(BackendAttempt {
                    backend,
                    outcome: Outcome::NotTried,
                });
                continue;
            }
            if let Some(reason) = excluded_by_config(&config, backend) {
                chain.push(BackendAttempt {
                    backend,
                    outcome: Outcome::Skipped(reason),
                });
                continue;
            }
            match open(backend, ordinal) {
                Ok(device) => {
                    chain.push(BackendAttempt {
                        backend,
                        outcome: Outcome::Chosen,
                    });
                    chosen = Some((backend, device));
                }
                // Asked for by name: the user wants this backend or an error.
                Err(e) if required_by_config(&config, backend) => return Err(e),
                Err(e) => chain.push(BackendAttempt {
                    backend,
                    outcome: Outcome::Skipped(e.to_string()),
                }),
            }
        }
        let (_, device) = chosen.ok_or_else(|| Error::BackendUnavailable {
            backend: Backend::Cpu,
            reason: "no backend could be opened".into(),
        })?;
        let default_stream = default_stream(&device)?;
        let ctx = Context {
            inner: Arc::new(Inner {
                device,
                ordinal,
                default_stream: default_stream.clone(),
                chain,
                config,
                cpu_streams: Mutex::new(Vec::new()),
                modules: Mutex::default(),
                arch: OnceLock::new(),
                builtin: Mutex::default(),
                blas: Mutex::default(),
            }),
        };
        ctx.track(&default_stream);
        Ok(ctx)
    }

    /// The backend this context runs on.
    pub fn backend(&self) -> Backend {
        match self.inner.device {
            DeviceImpl::Cpu => Backend::Cpu,
            DeviceImpl::Cuda(_) => Backend::Cuda,
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(_) => Backend::Torch,
        }
    }

    /// `"cpu"`, `"cuda"` or `"torch"`.
    pub fn backend_name(&self) -> &'static str {
        self.backend().name()
    }

    /// The device's ordinal within its backend.
    pub fn device_id(&self) -> usize {
        self.inner.ordinal
    }

    /// Every backend considered while this context was created, in order,
    /// with the reason each skipped one was skipped.
    pub fn fallback_chain(&self) -> &[BackendAttempt] {
        &self.inner.chain
    }

    /// The settings this context was created from.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The default element type from the config (`dtype`), `f32` if unset.
    pub fn dtype(&self) -> DType {
        self.inner.config.dtype
    }

    /// Name, capability and memory of this context's device.
    pub fn device_info(&self) -> Result<DeviceInfo> {
        match &self.inner.device {
            DeviceImpl::Cpu => Ok(cpu_device_info()),
            DeviceImpl::Cuda(d) => cuda_device_info(d),
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(d) => Ok(DeviceInfo {
                backend: Backend::Torch,
                ..cuda_device_info(&d.cuda).map_err(|e| e.on_backend(Backend::Torch))?
            }),
        }
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn device_name(&self) -> Result<String> {
        Ok(self.device_info()?.name)
    }

    /// Free and total device memory now.
    pub fn memory_info(&self) -> Result<MemoryInfo> {
        match &self.inner.device {
            DeviceImpl::Cpu => Ok(cpu_device_info().memory),
            DeviceImpl::Cuda(d) => {
                let (free, total) = d.memory_info()?;
                Ok(MemoryInfo { free, total })
            }
            // The driver's figure: memory torch's caching allocator holds
            // counts as used.
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(d) => {
                let (free, total) = d
                    .cuda
                    .memory_info()
                    .map_err(|e| Error::from(e).on_backend(Backend::Torch))?;
                Ok(MemoryInfo { free, total })
            }
        }
    }

    /// An array of `len` elements whose contents are unspecified (zeroes on
    /// the CPU backend, whatever the memory held on CUDA).
    pub fn alloc<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        GpuArray::uninit(self, len)
    }

    /// An array of `len` zeroes.
    pub fn alloc_zeros<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        GpuArray::zeros(self, len)
    }

    /// Same as [`Context::alloc_zeros`].
    pub fn zeros<T: Element>(&self, len: usize) -> Result<GpuArray<T>> {
        self.alloc_zeros(len)
    }

    /// An array holding a copy of `host`.
    pub fn alloc_upload<T: Element>(&self, host: &[T]) -> Result<GpuArray<T>> {
        GpuArray::from_host(self, host)
    }

    /// Same as [`Context::alloc_upload`].
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<GpuArray<T>> {
        self.alloc_upload(host)
    }

    /// A new stream, independent of the default one.
    pub fn create_stream(&self) -> Result<Stream> {
        let stream = new_stream(&self.inner.device)?;
        self.track(&stream);
        Ok(stream)
    }

    /// Same as [`Context::create_stream`].
    pub fn stream(&self) -> Result<Stream> {
        self.create_stream()
    }

    /// The stream that array operations use.
    pub fn default_stream(&self) -> &Stream {
        &self.inner.default_stream
    }

    /// A new, unrecorded event (`query` is true until it is recorded).
    pub fn create_event(&self) -> Result<Event> {
        self.inner.default_stream.new_event()
    }

    /// Waits for all work on every stream of this context, then returns the
    /// first error any of it raised, including errors kept from drops.
    pub fn sync(&self) -> Result<()> {
        match &self.inner.device {
            DeviceImpl::Cuda(d) => {
                d.synchronize()
                    .map_err(|e| self.inner.default_stream.blame_last_kernel(e.into()))?;
                self.inner.default_stream.sync()
            }
            // torch's work and ours share the primary context, so one
            // context-wide sync waits for every stream.
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(d) => {
                d.cuda.synchronize().map_err(|e| {
                    let e = Error::from(e).on_backend(Backend::Torch);
                    self.inner.default_stream.blame_last_kernel(e)
                })?;
                self.inner.default_stream.sync()
            }
            DeviceImpl::Cpu => {
                let streams: Vec<Arc<CpuStream>> = {
                    let mut list = crate::backend::cpu::lock(&self.inner.cpu_streams);
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
        }
    }

    /// Same as [`Context::sync`].
    pub fn synchronize(&self) -> Result<()> {
        self.sync()
    }

    pub(crate) fn module_cache(
        &self,
    ) -> &Mutex<HashMap<crate::kernel::cache::Key, crate::kernel::Module>> {
        &self.inner.modules
    }

    /// A kernel of the built-in ops (compiled on first use).
    pub(crate) fn builtin_kernel(&self, name: &str) -> Result<crate::kernel::Kernel> {
        if let Some(k) = crate::backend::cpu::lock(&self.inner.builtin).get(name) {
            return Ok(k.clone());
        }
        let kernel = self
            .compile(crate::backend::cuda::ops_src::SOURCE)?
            .kernel(name)?;
        crate::backend::cpu::lock(&self.inner.builtin).insert(name.to_string(), kernel.clone());
        Ok(kernel)
    }

    /// The context's cuBLAS handle, created on first use.
    pub(crate) fn blas(&self) -> Result<Arc<unigpu_cuda_safe::BlasHandle>> {
        let mut slot = crate::backend::cpu::lock(&self.inner.blas);
        if let Some(b) = slot.as_ref() {
            return Ok(b.clone());
        }
        let StreamImpl::Cuda(s) = &self.inner.default_stream.imp else {
            return Err(Error::Unsupported {
                backend: self.backend(),
                what: "cuBLAS".into(),
            });
        };
        let handle = Arc::new(unigpu_cuda_safe::BlasHandle::new(s)?);
        *slot = Some(handle.clone());
        Ok(handle)
    }

    /// The compute capability kernels are compiled for by default.
    pub(crate) fn device_arch(&self) -> Result<(i32, i32)> {
        if let Some(a) = self.inner.arch.get() {
            return Ok(*a);
        }
        let arch = match &self.inner.device {
            DeviceImpl::Cuda(d) => d.properties()?.compute_capability,
            #[cfg(feature = "torch")]
            DeviceImpl::Torch(d) => {
                d.cuda
                    .properties()
                    .map_err(|e| Error::from(e).on_backend(Backend::Torch))?
                    .compute_capability
            }
            DeviceImpl::Cpu => (0, 0),
        };
        Ok(*self.inner.arch.get_or_init(|| arch))
    }

    pub(crate) fn device(&self) -> &DeviceImpl {
        &self.inner.device
    }

    pub(crate) fn same_device(&self, other: &Context) -> bool {
        match (&self.inner.device, &other.inner.device) {
            (DeviceImpl::Cpu, DeviceImpl::Cpu) => true,
            (DeviceImpl::Cuda(a), DeviceImpl::Cuda(b)) => a == b,
            #[cfg(feature = "torch")]
            (DeviceImpl::Torch(a), DeviceImpl::Torch(b)) => a.ordinal == b.ordinal,
            _ => false,
        }
    }

    fn track(&self, stream: &Stream) {
        if let StreamImpl::Cpu(s) = &stream.imp {
            crate::backend::cpu::lock(&self.inner.cpu_streams).push(Arc::downgrade(s));
        }
    }
}

/// Why the config rules `backend` out before it is tried, if it does.
fn excluded_by_config(config: &Config, backend: Backend) -> Option<String> {
    match (config.backend, config.device) {
        (BackendChoice::Only(b), _) if b != backend => {
            Some(format!("backend = \"{b}\" was requested"))
        }
        (BackendChoice::Auto, Some(d)) if d.kind == Backend::Cpu && backend != Backend::Cpu => {
            Some("device = \"cpu\" was requested".into())
        }
        (BackendChoice::Auto, Some(d)) if d.kind == Backend::Cuda && backend == Backend::Cpu => {
            Some(format!("device = \"{d}\" was requested"))
        }
        _ => None,
    }
}

/// True when the config names `backend` (or a device only it serves), so
/// failing to open it is an error rather than a reason to fall back.
fn required_by_config(config: &Config, backend: Backend) -> bool {
    match config.backend {
        BackendChoice::Only(b) => b == backend,
        BackendChoice::Auto => {
            backend == Backend::Cuda && config.device.is_some_and(|d| d.kind == Backend::Cuda)
        }
    }
}

fn open(backend: Backend, ordinal: usize) -> Result<DeviceImpl> {
    match backend {
        Backend::Cpu if ordinal == 0 => Ok(DeviceImpl::Cpu),
        Backend::Cpu => Err(Error::InvalidDevice {
            backend,
            asked: ordinal,
            available: 1,
        }),
        Backend::Cuda => Ok(DeviceImpl::Cuda(CudaDevice::open(ordinal)?)),
        #[cfg(feature = "torch")]
        Backend::Torch => Ok(DeviceImpl::Torch(crate::backend::torch::open(ordinal)?)),
        #[cfg(not(feature = "torch"))]
        Backend::Torch => Err(Error::BackendUnavailable {
            backend,
            reason: TORCH_UNAVAILABLE.into(),
        }),
    }
}

fn new_stream(device: &DeviceImpl) -> Result<Stream> {
    let imp = match device {
        DeviceImpl::Cpu => StreamImpl::Cpu(Arc::new(CpuStream::new()?)),
        DeviceImpl::Cuda(d) => StreamImpl::Cuda(CudaStreamHandle::new(d)?),
        #[cfg(feature = "torch")]
        DeviceImpl::Torch(d) => StreamImpl::Torch(Arc::new(
            crate::backend::torch::TorchStream::from_pool(&d.cuda)?,
        )),
    };
    Ok(Stream::from_impl(imp))
}

/// The stream a new context's array operations use: a fresh stream on
/// CUDA, and on torch the stream torch code would use now (usually c10's
/// default stream), so unigpu's work is ordered with the caller's torch work.
fn default_stream(device: &DeviceImpl) -> Result<Stream> {
    match device {
        #[cfg(feature = "torch")]
        DeviceImpl::Torch(d) => Ok(Stream::from_impl(StreamImpl::Torch(Arc::new(
            crate::backend::torch::TorchStream::current(&d.cuda)?,
        )))),
        _ => new_stream(device),
    }
}
