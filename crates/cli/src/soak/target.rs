//! A backend under soak: its context, what its device says about its own
//! rounding, and the user kernels the kernel steps launch.

use unigpu::{Backend, Context, CpuArgs, Kernel};

/// `y = a * x + (y ^ i)` over u32s, wrapping: exact on every backend, so
/// it is checked bit for bit. And saxpy over f32s as one fused
/// multiply-add.
const KERNELS_CUDA: &str = r#"
extern "C" __global__ void soak_mix(unsigned int a, const unsigned int* x, unsigned int* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + (y[i] ^ i);
}
extern "C" __global__ void soak_saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
"#;

const MIX_WGSL: &str = r#"
@group(0) @binding(0) var<uniform> a: u32;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(256)
fn soak_mix(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[g.x] = a * x[g.x] + (y[g.x] ^ g.x); }
}
"#;

const SAXPY_WGSL: &str = r#"
@group(0) @binding(0) var<uniform> a: f32;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(256)
fn soak_saxpy(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[g.x] = fma(a, x[g.x], y[g.x]); }
}
"#;

/// The WGSL kernels' `@workgroup_size`: a vulkan launch's block must be it.
pub const WGSL_BLOCK: u32 = 256;

fn mix_cpu(args: &CpuArgs) -> unigpu::Result<()> {
    let a: u32 = args.scalar(0)?;
    let n: u32 = args.scalar(3)?;
    let x = args.input::<u32>(1)?;
    let mut y = args.output::<u32>(2)?;
    for (i, (y, x)) in y.iter_mut().zip(x.iter()).take(n as usize).enumerate() {
        *y = a.wrapping_mul(*x).wrapping_add(*y ^ i as u32);
    }
    Ok(())
}

fn saxpy_cpu(args: &CpuArgs) -> unigpu::Result<()> {
    let a: f32 = args.scalar(0)?;
    let n: u32 = args.scalar(3)?;
    let x = args.input::<f32>(1)?;
    let mut y = args.output::<f32>(2)?;
    for (y, x) in y.iter_mut().zip(x.iter()).take(n as usize) {
        *y = a.mul_add(*x, *y);
    }
    Ok(())
}

/// The user kernels, in the backend's kernel language.
#[derive(Debug, Clone)]
pub struct Kernels {
    pub mix: Kernel,
    pub saxpy: Kernel,
}

impl Kernels {
    /// CUDA C through NVRTC on cuda and torch, the Rust versions on cpu,
    /// the WGSL on vulkan: one `Kernel` each carries all three.
    fn build(ctx: &Context) -> unigpu::Result<Kernels> {
        let module = ctx.compile(KERNELS_CUDA)?;
        Ok(Kernels {
            mix: module
                .kernel("soak_mix")?
                .with_cpu(mix_cpu)
                .with_wgsl(MIX_WGSL)?,
            saxpy: module
                .kernel("soak_saxpy")?
                .with_cpu(saxpy_cpu)
                .with_wgsl(SAXPY_WGSL)?,
        })
    }
}

/// What a device says about its rounding (`DeviceInfo::details`; only
/// Vulkan adapters say anything), which sets the exact results of axpy
/// and of WGSL's `fma`.
#[derive(Debug, Clone)]
pub struct Rounding {
    /// The element types whose built-in axpy rounds once; `None`: all.
    axpy_once: Option<Vec<String>>,
    /// Whether the kernels' f32 `fma` rounds once.
    pub fused_fma_f32: bool,
}

impl Rounding {
    fn of(ctx: &Context) -> unigpu::Result<Rounding> {
        let details = ctx.device_info()?.details;
        let detail = |name: &str| {
            details
                .iter()
                .find_map(|(k, v)| (k == name).then(|| v.clone()))
        };
        Ok(Rounding {
            axpy_once: detail("axpy in one rounding")
                .map(|types| types.split(", ").map(str::to_owned).collect()),
            fused_fma_f32: detail("fma f32").is_none_or(|v| v == "fused"),
        })
    }

    /// Whether the built-in axpy rounds `alpha * x + y` once for `dtype`.
    pub fn axpy_rounds_once(&self, dtype: unigpu::DType) -> bool {
        self.axpy_once
            .as_ref()
            .is_none_or(|types| types.iter().any(|t| t == dtype.name()))
    }
}

/// One backend's context and what its steps need.
#[derive(Debug)]
pub struct Target {
    pub ctx: Context,
    pub backend: Backend,
    pub rounding: Rounding,
    /// The kernels, or why they could not be built (each kernel step then
    /// fails with it: compiling a valid kernel is something that should
    /// work).
    pub kernels: Result<Kernels, unigpu::Error>,
}

impl Target {
    /// Device 0 of `backend`, asked for by name (a software Vulkan
    /// adapter is used, as `backend = "vulkan"` does).
    pub fn open(backend: Backend) -> unigpu::Result<Target> {
        let ctx = Context::new(backend, 0)?;
        let rounding = Rounding::of(&ctx)?;
        let kernels = Kernels::build(&ctx);
        Ok(Target {
            ctx,
            backend,
            rounding,
            kernels,
        })
    }

    /// Whether f64 ops may be refused here: a Vulkan adapter without
    /// shader-f64 refuses them with `Unsupported` (docs/vulkan.md).
    pub fn may_refuse_f64(&self) -> bool {
        self.backend == Backend::Vulkan
    }
}
