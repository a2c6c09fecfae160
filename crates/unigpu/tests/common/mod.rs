//! Shared test harness: random data per element type, and a macro that
//! runs one test body on the CPU backend (always), on CUDA, on Vulkan and,
//! with the `torch` feature, on torch (all ignored unless asked for; they
//! fail, not skip, when no GPU or Vulkan adapter is found).

#![allow(dead_code)] // each test binary uses a different part of this module

use rand::Rng;
use unigpu::{Backend, Context, CpuArgs, Element, Kernel, bf16, f16};

pub fn cpu_ctx() -> Context {
    Context::new(Backend::Cpu, 0).expect("the CPU backend is always available")
}

pub fn cuda_ctx() -> Context {
    match Context::new(Backend::Cuda, 0) {
        Ok(ctx) => ctx,
        Err(e) => panic!("this test needs a CUDA GPU and found none: {e}"),
    }
}

/// A context on Vulkan adapter 0 (in CI, Mesa's lavapipe), which the test
/// then names on stderr so a run shows which driver it checked.
#[cfg(feature = "vulkan")]
pub fn vulkan_ctx() -> Context {
    match Context::new(Backend::Vulkan, 0) {
        Ok(ctx) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                let info = ctx.device_info().expect("the adapter's info");
                eprintln!("vulkan adapter 0: {} {:?}", info.name, info.details);
            });
            ctx
        }
        Err(e) => panic!("this test needs a Vulkan adapter and found none: {e}"),
    }
}

#[cfg(feature = "torch")]
pub fn torch_ctx() -> Context {
    match Context::new(Backend::Torch, 0) {
        Ok(ctx) => ctx,
        Err(e) => panic!("this test needs a CUDA GPU usable through torch and found none: {e}"),
    }
}

/// Held by tests that park a stream behind a host function waiting for the
/// test thread. CUDA runs all host functions of a process on one driver
/// thread, and c10's pool hands the same few streams to every caller, so
/// two such tests running at once in one process can wait on each other
/// until their timeouts (seen with the torch variants; never with one
/// parked test at a time).
pub fn park_lock() -> std::sync::MutexGuard<'static, ()> {
    static PARKED: std::sync::Mutex<()> = std::sync::Mutex::new(());
    PARKED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Element types that can be drawn at random for tests.
pub trait Random: Element {
    fn random(rng: &mut impl Rng) -> Self;
}

macro_rules! random_int {
    ($($t:ty),*) => {$(
        impl Random for $t {
            fn random(rng: &mut impl Rng) -> Self {
                rng.random()
            }
        }
    )*};
}
random_int!(i32, u32, i64, u64, u8);

impl Random for f32 {
    fn random(rng: &mut impl Rng) -> Self {
        rng.random_range(-1e3..1e3)
    }
}
impl Random for f64 {
    fn random(rng: &mut impl Rng) -> Self {
        rng.random_range(-1e6..1e6)
    }
}
impl Random for f16 {
    fn random(rng: &mut impl Rng) -> Self {
        f16::from_f32(rng.random_range(-1e3..1e3))
    }
}
impl Random for bf16 {
    fn random(rng: &mut impl Rng) -> Self {
        bf16::from_f32(rng.random_range(-1e3..1e3))
    }
}

pub fn random_vec<T: Random>(len: usize) -> Vec<T> {
    let mut rng = rand::rng();
    (0..len).map(|_| T::random(&mut rng)).collect()
}

/// A random length in 1..=max, different every run.
pub fn random_len(max: usize) -> usize {
    rand::rng().random_range(1..=max)
}

/// Sizes worth checking: empty, one element, odd sizes around a typical
/// block size, and a random one.
pub fn sizes() -> Vec<usize> {
    // 4100: a multiple of four with an odd count of fours (the vulkan
    // backend's vec4 shaders take two a thread).
    vec![0, 1, 255, 257, 4099, 4100, random_len(1 << 16)]
}

/// Compares element by element, reporting the first difference.
#[track_caller]
pub fn assert_same<T: Element>(expected: &[T], actual: &[T]) {
    assert_eq!(expected.len(), actual.len(), "lengths differ");
    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != actual[i]) {
        panic!(
            "element {i} of {} differs: expected {:?}, got {:?}",
            expected.len(),
            expected[i],
            actual[i]
        );
    }
}

/// `on_every_backend!(name, |ctx: &Context| { ... });` makes `name::cpu`,
/// `name::cuda`, `name::vulkan` (with the `vulkan` feature, on by default)
/// and (with the `torch` feature) `name::torch` tests from one body.
#[macro_export]
macro_rules! on_every_backend {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn cpu() {
                let body: fn(&unigpu::Context) = $body;
                body(&$crate::common::cpu_ctx());
            }

            $crate::gpu_variants!($body);

            #[cfg(feature = "vulkan")]
            #[test]
            #[ignore = "needs a Vulkan adapter"]
            fn vulkan() {
                let body: fn(&unigpu::Context) = $body;
                body(&$crate::common::vulkan_ctx());
            }
        }
    };
}

/// `on_every_gpu_backend!(name, |ctx: &Context| { ... });` makes
/// `name::cuda` and (with the `torch` feature) `name::torch` tests: for
/// what only GPU backends have (NVRTC compiles, launch limits, faults).
#[macro_export]
macro_rules! on_every_gpu_backend {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::gpu_variants!($body);
        }
    };
}

/// The GPU variants of one test body: `cuda` and, with the `torch`
/// feature, `torch`; each ignored without a GPU and failing (not skipping)
/// when asked to run without one.
#[macro_export]
macro_rules! gpu_variants {
    ($body:expr) => {
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn cuda() {
            let body: fn(&unigpu::Context) = $body;
            body(&$crate::common::cuda_ctx());
        }

        #[cfg(feature = "torch")]
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn torch() {
            let body: fn(&unigpu::Context) = $body;
            body(&$crate::common::torch_ctx());
        }
    };
}

/// The context of the GPU backend named `backend` ("cuda", or "torch"
/// with the feature), for tests that re-run themselves in a child process.
pub fn gpu_ctx(backend: &str) -> Context {
    match backend {
        "cuda" => cuda_ctx(),
        #[cfg(feature = "torch")]
        "torch" => torch_ctx(),
        other => panic!("no GPU backend `{other}` in this build"),
    }
}

/// Runs a generic body for every element type.
#[macro_export]
macro_rules! for_every_type {
    ($f:ident, $ctx:expr) => {{
        $f::<f32>($ctx);
        $f::<f64>($ctx);
        $f::<i32>($ctx);
        $f::<u32>($ctx);
        $f::<i64>($ctx);
        $f::<u64>($ctx);
        $f::<u8>($ctx);
        $f::<unigpu::f16>($ctx);
        $f::<unigpu::bf16>($ctx);
    }};
}

/// `y = a * x + y` over `n` f32s: CUDA source, and the CPU version.
pub const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

pub fn saxpy_cpu(args: &CpuArgs) -> unigpu::Result<()> {
    let a: f32 = args.scalar(0)?;
    let n: u32 = args.scalar(3)?;
    let x = args.input::<f32>(1)?;
    let mut y = args.output::<f32>(2)?;
    for i in 0..n as usize {
        y[i] = a.mul_add(x[i], y[i]);
    }
    Ok(())
}

/// The same kernel in WGSL: argument i at binding i.
pub const SAXPY_WGSL: &str = r#"
@group(0) @binding(0) var<uniform> a: f32;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[g.x] = fma(a, x[g.x], y[g.x]); }
}
"#;

/// A fact of `ctx`'s device from `DeviceInfo::details` (Vulkan adapters
/// list some; other backends none).
pub fn detail(ctx: &Context, name: &str) -> Option<String> {
    ctx.device_info()
        .ok()?
        .details
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// `a * x + y` as WGSL's `fma` computes it on `ctx`'s device: rounded
/// once, or where the adapter's `fma` rounds twice (lavapipe; `unigpu info`
/// says "fma f32: rounds twice"), as a product and a sum each rounded.
/// Either is exact, so kernels are checked bit for bit.
pub fn device_fma(ctx: &Context, a: f32, x: f32, y: f32) -> f32 {
    match detail(ctx, "fma f32") {
        Some(v) if v != "fused" => a * x + y,
        _ => a.mul_add(x, y),
    }
}

/// Whether the built-in axpy rounds `alpha * x + y` once for `dtype` on
/// `ctx` (every backend but vulkan where its adapter's f64 `fma` rounds
/// twice; `unigpu info` lists the types as "axpy in one rounding").
pub fn axpy_rounds_once(ctx: &Context, dtype: unigpu::DType) -> bool {
    detail(ctx, "axpy in one rounding")
        .is_none_or(|types| types.split(", ").any(|t| t == dtype.name()))
}

pub fn saxpy(ctx: &Context) -> Kernel {
    ctx.compile(SAXPY)
        .unwrap()
        .kernel("saxpy")
        .unwrap()
        .with_cpu(saxpy_cpu)
        .with_wgsl(SAXPY_WGSL)
        .unwrap()
}
