//! `Context`: the entry point. Picks a backend, owns the device and its
//! default stream, and hands out arrays, streams and events.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::backend::Device;
use crate::config::{BackendChoice, Config};
use crate::device::{DeviceInfo, MemoryInfo, MemoryStats};
use crate::fault_word::FaultWords;
use crate::kernel::{CompileOptions, Kernel, Module};
use crate::stream::Stream;
use crate::{Backend, BackendAttempt, DType, Result};

/// Modules compiled in a context, by source and options.
pub(crate) type ModuleCache = HashMap<(String, CompileOptions), Module>;

/// `#[unigpu::kernel]` kernels built in a context (kernel/generated.rs),
/// by their spec's address, const parameters and shared arrays.
pub(crate) type GeneratedCache = HashMap<GeneratedKey, Kernel>;
pub(crate) type GeneratedKey = (usize, Vec<(String, usize)>, Vec<(u64, u64)>);

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
    device: Device,
    ordinal: usize,
    default_stream: Stream,
    chain: Vec<BackendAttempt>,
    config: Config,
    /// Modules compiled in this context, by source and options.
    modules: Mutex<ModuleCache>,
    /// Generated kernels built in this context: a built-in op finds its
    /// kernel here on every call, without hashing its source again.
    generated: Mutex<GeneratedCache>,
    /// Its streams' fault words, which `sync` reads.
    faults: FaultWords,
}

impl Context {
    /// The context a program gets when it does not choose: the config file
    /// and `UNIGPU_*` variables first, then each backend in the order of
    /// [`Backend::ALL`], recording why each skipped backend was skipped
    /// ([`Context::fallback_chain`]).
    #[allow(clippy::should_implement_trait)] // fallible, so it cannot be `Default`
    pub fn default() -> Result<Context> {
        Context::from_config(Config::load()?)
    }

    /// Reads `path` as a `unigpu.toml` (environment overrides still apply).
    pub fn from_config_file(path: impl AsRef<Path>) -> Result<Context> {
        let mut config = Config::from_file(path.as_ref())?;
        config.apply_env(crate::config::process_env())?;
        Context::from_config(config)
    }

    /// Exactly `backend`, device `device_id`; no fallback.
    pub fn new(backend: Backend, device_id: usize) -> Result<Context> {
        Device::check_ordinal(backend, device_id)?;
        let kind = backend.device_kind();
        let device = (!kind.is_host()).then_some(crate::config::DeviceSpec {
            kind,
            ordinal: device_id,
        });
        Context::from_config(Config {
            backend: BackendChoice::Only(backend),
            device,
            ..Config::default()
        })
    }

    /// The host backend ([`Backend::HOST`]), which is always available
    /// (named for what it is, not for the backend that is the host today:
    /// this file names no backend).
    pub fn host() -> Result<Context> {
        Context::new(Backend::HOST, 0)
    }

    /// A context from resolved settings.
    pub fn from_config(config: Config) -> Result<Context> {
        let ordinal = config.device.map_or(0, |d| d.ordinal);
        let (device, chain) = Device::open_first(ordinal, |backend| config.plan_for(backend))?;
        let default_stream = Stream::from_impl(device.default_stream()?);
        // The default stream's fault word (fault_word.rs) is made with the
        // context, not by its first generated kernel: memory the context
        // holds from its start to its end, not a rise in the allocator's
        // figures halfway through a program (which a leak check would
        // count). Created streams make theirs at their first such launch
        // and free it with the stream.
        default_stream.faults.prepare()?;
        let faults = FaultWords::default();
        faults.add(&default_stream.faults);
        let ctx = Context {
            inner: Arc::new(Inner {
                device,
                ordinal,
                default_stream: default_stream.clone(),
                chain,
                config,
                modules: Mutex::default(),
                generated: Mutex::default(),
                faults,
            }),
        };
        Ok(ctx)
    }

    /// The backend this context runs on.
    pub fn backend(&self) -> Backend {
        self.inner.device.backend()
    }

    /// The backend's name in config files and `unigpu info`
    /// ([`Backend::name`]).
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
        self.inner.device.info()
    }

    /// The device's name, as its backend reports it.
    pub fn device_name(&self) -> Result<String> {
        Ok(self.device_info()?.name)
    }

    /// Free and total device memory now.
    pub fn memory_info(&self) -> Result<MemoryInfo> {
        self.inner.device.memory_info()
    }

    /// The device's caching allocator's counters: bytes reserved, in
    /// use and cached, the peak, and cache hits and misses.
    /// `Unsupported` on backends without an allocator of their own.
    pub fn memory_stats(&self) -> Result<MemoryStats> {
        self.inner.device.memory_stats()
    }

    /// Gives cached device memory that no array uses back to the driver,
    /// after the work that last used it; returns the bytes released. An
    /// allocation that runs out of memory does this itself before failing.
    pub fn empty_cache(&self) -> Result<usize> {
        self.inner.device.empty_cache()
    }

    /// A new stream, independent of the default one.
    pub fn create_stream(&self) -> Result<Stream> {
        let stream = Stream::from_impl(self.inner.device.new_stream()?);
        self.inner.faults.add(&stream.faults);
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

    /// Waits for all work on every stream of this context, then returns the
    /// first error any of it raised, including errors kept from drops,
    /// then the first out-of-bounds access recorded on any of its streams
    /// by a kernel made by `#[unigpu::kernel]` (each reported once).
    pub fn sync(&self) -> Result<()> {
        let stream = &self.inner.default_stream;
        let streams = self.inner.faults.streams();
        self.inner
            .device
            .synchronize_beside_captures(&streams)
            .map_err(|e| stream.blame_last_kernel(e))?;
        if !stream.is_capturing() {
            stream.sync()?;
        }
        self.inner.faults.check_all()
    }

    /// Same as [`Context::sync`].
    pub fn synchronize(&self) -> Result<()> {
        self.sync()
    }

    pub(crate) fn module_cache(&self) -> &Mutex<ModuleCache> {
        &self.inner.modules
    }

    pub(crate) fn generated_cache(&self) -> &Mutex<GeneratedCache> {
        &self.inner.generated
    }

    pub(crate) fn device(&self) -> &Device {
        &self.inner.device
    }

    pub(crate) fn same_device(&self, other: &Context) -> bool {
        self.inner.device.same(&other.inner.device)
    }
}
