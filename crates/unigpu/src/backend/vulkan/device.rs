//! An opened adapter: the wgpu device and queue, what the adapter can do,
//! its poller and its compiled pipelines. One per adapter per process,
//! shared by every context on it (as CUDA shares a primary context), so
//! arrays of two contexts on the same adapter are on one device. What a
//! context keeps of its own (its streams, for `Context::sync`) is in
//! `open.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::adapters::{adapters, kind_name};
use super::block_on::block_on;
use super::catch::{self, Catch};
use super::errors::unavailable;
use super::poller::Poller;
use super::shaders::{FmaKind, Num};
use super::staging::Staging;
use super::uniforms::Uniforms;
use crate::backend::Backend;
use crate::device::{DeviceInfo, MemoryInfo};
use crate::error::{Error, Result};
use crate::lock::lock;

/// Bytes of immediate data (push constants) the built-in ops use (defined
/// beside the shaders' `struct P`s).
pub(crate) use super::shaders::IMMEDIATE_BYTES;

/// A compute pipeline with the layout of its one bind group.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) layout: wgpu::BindGroupLayout,
}

pub(crate) struct VkDevice {
    pub(crate) ordinal: usize,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    pub(crate) features: wgpu::Features,
    /// Whether `fma` rounds once in f32 and in f64 (fma_probe.rs).
    pub(crate) fused_fma: (bool, bool),
    /// The adapter's downlevel flags (wgpu's validator for a WGSL module
    /// depends on them, as on the features).
    downlevel: wgpu::DownlevelFlags,
    /// Whether WGSL is built with contraction forbidden (SPIR-V's
    /// `NoContraction` through wgpu's passthrough; unigpu-vulkan-sys's
    /// pipeline.rs): where the adapter offers passthrough.
    pub(crate) no_contraction: bool,
    pub(crate) poller: Arc<Poller>,
    /// The first error wgpu reported outside any catch (catch.rs; or the
    /// device's loss); returned, once, by the next sync.
    errors: Arc<Mutex<Option<String>>>,
    /// Built-in ops' pipelines, by shader name; user kernels' by code key.
    pipelines: Mutex<HashMap<String, Arc<Pipeline>>>,
    /// Bytes of the buffers alive on this device.
    pub(crate) allocated: AtomicU64,
    /// Host-visible buffers that uploads and downloads reuse.
    pub(crate) staging: Arc<Staging>,
    /// Kernel launches' scalar arguments, kept by their bytes (uniforms.rs).
    pub(crate) uniforms: Uniforms,
}

// Unwind safety (issue 25): wgpu's handles hold `Arc<dyn ...>` trait
// objects and cells without the unwind-safe markers, which made every
// `Context` and `GpuArray` lose `RefUnwindSafe`, so `catch_unwind(||
// ctx.alloc(..))` stopped compiling. A panic cannot leave wgpu's state
// half-updated for our callers: wgpu keeps its tables behind its own locks
// and runs no user code while it holds them, and what this crate keeps
// beside them is behind poison-tolerant locks (`crate::lock`). So these
// types are unwind safe as the CPU and CUDA backends' are.
impl std::panic::UnwindSafe for VkDevice {}
impl std::panic::RefUnwindSafe for VkDevice {}

impl std::fmt::Debug for VkDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VkDevice")
            .field("ordinal", &self.ordinal)
            .field("adapter", &self.info.name)
            .finish()
    }
}

fn fused(yes: bool) -> &'static str {
    if yes {
        "fused"
    } else {
        "rounds twice (WGSL allows it)"
    }
}

/// The features the backend uses where the adapter has them: 16-, 64-bit
/// types in shaders, timestamps for events, subgroup operations (the
/// kernel language's `subgroup_add`, ...), and SPIR-V passthrough (so
/// WGSL is built with float contraction forbidden, see `build_pipeline`).
/// Push constants (immediates) are required: every Vulkan device has 128
/// bytes of them.
fn wanted(adapter: &wgpu::Adapter) -> wgpu::Features {
    adapter.features()
        & (wgpu::Features::IMMEDIATES
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SHADER_F64
            | wgpu::Features::SHADER_INT64
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::SUBGROUP
            | wgpu::Features::PASSTHROUGH_SHADERS)
}

impl VkDevice {
    /// Adapter `ordinal`'s device, opened on first use.
    pub(crate) fn open(ordinal: usize) -> Result<Arc<VkDevice>> {
        static OPEN: OnceLock<Mutex<HashMap<usize, Arc<VkDevice>>>> = OnceLock::new();
        let list = adapters()?;
        let adapter = list.get(ordinal).ok_or(Error::InvalidDevice {
            backend: Backend::Vulkan,
            asked: ordinal,
            available: list.len(),
        })?;
        let mut open = lock(OPEN.get_or_init(Mutex::default));
        if let Some(d) = open.get(&ordinal) {
            return Ok(d.clone());
        }
        let device = Arc::new(VkDevice::create(ordinal, adapter)?);
        open.insert(ordinal, device.clone());
        Ok(device)
    }

    fn create(ordinal: usize, adapter: &wgpu::Adapter) -> Result<VkDevice> {
        let info = adapter.get_info();
        let features = wanted(adapter);
        if !features.contains(wgpu::Features::IMMEDIATES) {
            return Err(unavailable(format!(
                "adapter {} ({}) offers no push constants (wgpu's IMMEDIATES), which the built-in ops use",
                info.name, info.driver
            )));
        }
        let limits = adapter.limits();
        let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("unigpu"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| unavailable(format!("adapter {} could not be opened: {e}", info.name)))?;
        let errors: Arc<Mutex<Option<String>>> = Arc::default();
        let sink = errors.clone();
        // Every error wgpu reports comes here, on the thread whose call
        // caused it: an open catch of that thread takes it (catch.rs).
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Some(e) = catch::deliver(ordinal, e) {
                lock(&sink).get_or_insert_with(|| e.to_string());
            }
        }));
        let lost = errors.clone();
        device.set_device_lost_callback(move |reason, message| {
            lock(&lost)
                .get_or_insert_with(|| format!("the device was lost ({reason:?}): {message}"));
        });
        let fused_fma = super::fma_probe::fused(
            ordinal,
            &device,
            &queue,
            features.contains(wgpu::Features::SHADER_F64),
        )?;
        let no_contraction = unigpu_vulkan_sys::pipeline::available(&device, &info);
        let downlevel = adapter.get_downlevel_capabilities().flags;
        let poller = Poller::start(device.clone())
            .map_err(|e| unavailable(format!("cannot start the device's poll thread: {e}")))?;
        Ok(VkDevice {
            ordinal,
            info,
            device,
            queue,
            limits,
            features,
            fused_fma,
            downlevel,
            no_contraction,
            poller,
            errors,
            pipelines: Mutex::default(),
            allocated: AtomicU64::new(0),
            staging: Arc::default(),
            uniforms: Uniforms::default(),
        })
    }

    pub(crate) fn has(&self, feature: wgpu::Features) -> bool {
        self.features.contains(feature)
    }

    /// How axpy computes `a * x + y` in `num`'s accumulator here.
    pub(crate) fn fma_kind(&self, num: Num) -> FmaKind {
        match (num.acc_num(), self.fused_fma) {
            (Num::F64, (_, true)) | (Num::F32, (true, _)) => FmaKind::Fused,
            (Num::F32, _) if self.has(wgpu::Features::SHADER_F64) => FmaKind::ThroughF64,
            _ => FmaKind::TwoRoundings,
        }
    }

    /// The error wgpu reported outside any work's scope, once.
    pub(crate) fn take_error(&self) -> Option<Error> {
        lock(&self.errors).take().map(|message| Error::StreamWork {
            message: format!("the vulkan device reported: {message}"),
        })
    }

    pub(crate) fn memory_info(&self) -> Result<MemoryInfo> {
        let devices = unigpu_vulkan_sys::physical_devices().map_err(unavailable)?;
        let me = devices
            .iter()
            .find(|d| {
                d.vendor_id == self.info.vendor
                    && d.device_id == self.info.device
                    && d.name == self.info.name
            })
            .ok_or_else(|| Error::Unsupported {
                backend: Backend::Vulkan,
                what: format!(
                    "memory_info: the Vulkan loader does not list adapter {}",
                    self.info.name
                ),
            })?;
        let total = usize::try_from(me.total).unwrap_or(usize::MAX);
        // Without VK_EXT_memory_budget, what this process has not taken.
        let free = me.free.unwrap_or_else(|| {
            me.total
                .saturating_sub(self.allocated.load(Ordering::Relaxed))
        });
        Ok(MemoryInfo {
            free: usize::try_from(free).unwrap_or(usize::MAX).min(total),
            total,
        })
    }

    /// The types whose built-in axpy rounds once here (the others round
    /// the product and the sum: see [`FmaKind`]).
    fn axpy_once(&self) -> String {
        [Num::F32, Num::F16, Num::Bf16, Num::F64]
            .into_iter()
            .filter(|&n| n != Num::F64 || self.has(wgpu::Features::SHADER_F64))
            .filter(|&n| self.fma_kind(n) != FmaKind::TwoRoundings)
            .map(Num::name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What a kernel's module asks the driver to keep (signed zeros,
    /// infinities and NaN; subnormals), by width: unigpu-vulkan-sys's
    /// float_controls.rs. Without them a driver may drop a NaN through a
    /// clamp, `-0` through `minimum`, and flush subnormals.
    fn float_controls(&self) -> String {
        if !self.no_contraction {
            return "none asked (no SPIR-V passthrough)".into();
        }
        let c = unigpu_vulkan_sys::float_controls::query(&self.device);
        let widths = |f32: bool, f64: bool| match (f32, f64) {
            (true, true) => "f32, f64",
            (true, false) => "f32",
            (false, true) => "f64",
            (false, false) => "none",
        };
        format!(
            "kernels keep signed zeros, inf and NaN in {}; subnormals in {}",
            widths(c.signed_zero_inf_nan_f32, c.signed_zero_inf_nan_f64),
            widths(c.denorm_f32, c.denorm_f64)
        )
    }

    pub(crate) fn info(&self) -> Result<DeviceInfo> {
        let i = &self.info;
        let l = &self.limits;
        let yes = |f: wgpu::Features| if self.has(f) { "yes" } else { "no" };
        let details = vec![
            ("type".into(), kind_name(i.device_type).into()),
            ("driver".into(), format!("{} {}", i.driver, i.driver_info)),
            (
                "ids".into(),
                format!("vendor {:#06x}, device {:#06x}", i.vendor, i.device),
            ),
            ("shader-f16".into(), yes(wgpu::Features::SHADER_F16).into()),
            ("shader-f64".into(), yes(wgpu::Features::SHADER_F64).into()),
            (
                "shader-int64".into(),
                yes(wgpu::Features::SHADER_INT64).into(),
            ),
            (
                "timestamps".into(),
                yes(wgpu::Features::TIMESTAMP_QUERY).into(),
            ),
            ("subgroups".into(), yes(wgpu::Features::SUBGROUP).into()),
            ("fma f32".into(), fused(self.fused_fma.0).into()),
            (
                "fma f64".into(),
                if self.has(wgpu::Features::SHADER_F64) {
                    fused(self.fused_fma.1)
                } else {
                    "n/a"
                }
                .into(),
            ),
            (
                "float contraction".into(),
                if self.no_contraction {
                    "forbidden in kernels (SPIR-V NoContraction; built-in ops keep fma)"
                } else {
                    "possible (no SPIR-V passthrough)"
                }
                .into(),
            ),
            ("float controls".into(), self.float_controls()),
            ("axpy in one rounding".into(), self.axpy_once()),
            ("max buffer".into(), format!("{} bytes", l.max_buffer_size)),
            (
                "max storage binding".into(),
                format!("{} bytes", l.max_storage_buffer_binding_size),
            ),
            (
                "max workgroup".into(),
                format!(
                    "{} invocations, {} bytes of workgroup memory",
                    l.max_compute_invocations_per_workgroup, l.max_compute_workgroup_storage_size
                ),
            ),
            (
                "max workgroups per dimension".into(),
                l.max_compute_workgroups_per_dimension.to_string(),
            ),
        ];
        Ok(DeviceInfo {
            backend: Backend::Vulkan,
            ordinal: self.ordinal,
            name: i.name.clone(),
            compute_capability: None,
            memory: self.memory_info()?,
            details,
        })
    }

    /// The pipeline cached under `key`, or the one `build` makes (then
    /// cached). Two threads may build the same one at once; one is kept.
    pub(crate) fn pipeline(
        &self,
        key: &str,
        build: impl FnOnce() -> Result<Pipeline>,
    ) -> Result<Arc<Pipeline>> {
        if let Some(p) = lock(&self.pipelines).get(key) {
            return Ok(p.clone());
        }
        let p = Arc::new(build()?);
        Ok(lock(&self.pipelines)
            .entry(key.to_string())
            .or_insert(p)
            .clone())
    }

    /// Compiles `source` and makes a pipeline of entry point `entry`, whose
    /// one bind group holds `bindings`; a shader the device refuses is a
    /// compile error with wgpu's message. A kernel's WGSL (`one_rounding`)
    /// is built with float contraction forbidden where the device can
    /// (`no_contraction`): each `+`, `-` and `*` then rounds once, as on
    /// the other backends, where a driver would otherwise fuse `a * b + c`
    /// into one fma. The built-in ops' shaders promise results within a
    /// bound, not bits, so they keep the driver's fma (matmul's inner loop
    /// would otherwise take two instructions for one).
    pub(crate) fn build_pipeline(
        &self,
        label: &str,
        source: wgpu::ShaderSource<'_>,
        entry: &str,
        bindings: &[wgpu::BindingType],
        immediate_size: u32,
        one_rounding: bool,
    ) -> Result<Pipeline> {
        let catch = Catch::open(self.ordinal, wgpu::ErrorFilter::Validation);
        if let (true, wgpu::ShaderSource::Wgsl(wgsl)) =
            (self.no_contraction && one_rounding, &source)
        {
            let shader = unigpu_vulkan_sys::pipeline::ComputeShader {
                label,
                wgsl,
                entry,
                bindings,
                immediate_size,
            };
            let built = unigpu_vulkan_sys::pipeline::compute_pipeline(
                &self.device,
                self.downlevel,
                &shader,
            );
            let refused = catch.close();
            return match (built, refused) {
                (Ok(b), None) => Ok(Pipeline {
                    pipeline: b.pipeline,
                    layout: b.layout,
                }),
                (Err(e), _) => Err(Error::Compile {
                    log: format!("{label}: {e}"),
                }),
                (_, Some(e)) => Err(Error::Compile {
                    log: format!("{label}: {e}"),
                }),
            };
        }
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source,
            });
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(i, ty)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: *ty,
                count: None,
            })
            .collect();
        let layout = self
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: &entries,
            });
        let pipeline_layout = self
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size,
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
        match catch.close() {
            None => Ok(Pipeline { pipeline, layout }),
            Some(e) => Err(Error::Compile {
                log: format!("{label}: {e}"),
            }),
        }
    }

    /// `make`'s result, or wgpu's validation error for it as a
    /// `StreamWork` error saying `what` failed.
    pub(crate) fn checked<R>(&self, what: &str, make: impl FnOnce() -> R) -> Result<R> {
        match catch::caught(self.ordinal, wgpu::ErrorFilter::Validation, make) {
            (made, None) => Ok(made),
            (_, Some(e)) => Err(Error::StreamWork {
                message: format!("{what}: wgpu refused it: {e}"),
            }),
        }
    }

    pub(crate) fn storage(read_only: bool) -> wgpu::BindingType {
        wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        }
    }

    pub(crate) fn uniform() -> wgpu::BindingType {
        wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        }
    }
}
