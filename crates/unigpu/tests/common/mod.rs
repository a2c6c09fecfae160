//! Shared test harness: random data per element type, and a macro that
//! runs one test body on the CPU backend (always), on CUDA, on Vulkan and,
//! with the `torch` feature, on torch (all ignored unless asked for; they
//! fail, not skip, when no GPU or Vulkan adapter is found).
//!
//! # The leak guard
//!
//! Every variant the macros make runs its body through [`leak_checked`],
//! which fails the test when the body leaves device memory behind:
//!
//! - **Allocator statistics** (`Context::memory_stats().in_use`): read on
//!   the test's own context before the body and again after it, once the
//!   context is synchronized and its cache emptied, and required to be
//!   equal, to the byte. Each variant opens its own `Context` (on CUDA each
//!   open has its own caching allocator), so other tests running at the
//!   same time cannot move these numbers. Backends without an allocator of
//!   their own (cpu, vulkan, torch) answer `Unsupported`, and this part is
//!   skipped for them: the error says why.
//! - **The driver's free memory** (`Context::memory_info().free`), which
//!   is device-wide: any test allocating on the GPU at the same time moves
//!   it. So GPU variants hold [`GPU`] exclusively for their whole run (GPU
//!   variants of one test binary run one at a time), and every other
//!   GPU test (those that call `cuda_ctx()`, `vulkan_ctx()`,
//!   `torch_ctx()` or `cuda_backend_ctx()` outside the macros) holds it shared from
//!   that call until its test thread ends. While one variant holds it, no
//!   other test of the process touches the device. Per backend:
//!   - cuda: read through a *witness*, a context of the same device opened
//!     once per process and kept (it keeps the primary context alive, so
//!     every read sees the same driver context, and makes the one managed
//!     allocation after which the driver keeps ~120 MiB of per-process
//!     state), before the test's context is opened and after it is dropped; everything the context made
//!     (allocator segments, modules, streams, events, the cuBLAS handle)
//!     must be back. Free memory may not drop by more than
//!     [`DRIVER_SLACK`]: `cuMemGetInfo` moves in 2 MiB pages, so one page is
//!     the finest bound it can state (a smaller leak of an array is caught
//!     exactly by the allocator's count above). A first run that loses more
//!     is run again on fresh contexts, and only growth over the reruns fails
//!     it: memory the driver keeps once per process or device (the first
//!     cuBLAS handle, lazily loaded modules) differs between GPU kinds, and
//!     no fixed slack holds on all of them ([`leak_checked`]).
//!   - vulkan: read on the test's own context before and after the body
//!     (each array is a buffer of its own; `empty_cache` releases the
//!     staging buffers), with the same slack. Without VK_EXT_memory_budget
//!     the figure is the adapter's size less what this context holds, so
//!     exact; with it, device-wide, which the lock makes quiet.
//!   - torch: skipped: torch's caching allocator keeps freed blocks
//!     reserved and the bridge cannot empty it (`empty_cache` is
//!     `Unsupported`), so the driver's figure does not come back by design.
//!     torch variants still take the lock, so they cannot move the cuda
//!     variants' readings.
//!   - cpu: skipped: the host's free memory is system-wide (every process
//!     moves it); the CPU variants take no lock and run in parallel.
//!
//! Other processes on the same GPU move the driver's figure too: run GPU
//! test binaries one at a time on a GPU nothing else uses (`cargo test`
//! runs its binaries one after another).
//!
//! Serialising the GPU variants costs their parallelism within a binary:
//! most are short and synchronize often, and the GPU they share was never
//! more than one device. tests/churn.rs adds the loop of the issue: 10,000
//! contexts, streams, events, arrays and modules, with flat descriptors,
//! threads, RSS and device memory.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, mpsc};
use std::time::Duration;

use rand::Rng;
use unigpu::{Backend, Context, CpuArgs, Element, Error, Kernel, Stream, bf16, f16};

/// Whether the CUDA driver loads and counts a device: never in a build
/// without the `cuda` feature, which has no cuda backend.
pub fn cuda_usable() -> bool {
    #[cfg(feature = "cuda")]
    return unigpu::cuda_probe().cuda_usable();
    #[cfg(not(feature = "cuda"))]
    false
}

pub fn cpu_ctx() -> Context {
    Context::new(Backend::Cpu, 0).expect("the CPU backend is always available")
}

pub fn cuda_ctx() -> Context {
    share_gpu();
    match Context::new(Backend::Cuda, 0) {
        Ok(ctx) => ctx,
        Err(e) => panic!("this test needs a CUDA GPU and found none: {e}"),
    }
}

/// A context on Vulkan adapter 0 (in CI, Mesa's lavapipe), which the test
/// then names on stderr so a run shows which driver it checked.
#[cfg(feature = "vulkan")]
pub fn vulkan_ctx() -> Context {
    share_gpu();
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
    share_gpu();
    match Context::new(Backend::Torch, 0) {
        Ok(ctx) => ctx,
        Err(e) => panic!("this test needs a CUDA GPU usable through torch and found none: {e}"),
    }
}

/// Held exclusively by each GPU variant the macros make, for its whole
/// run, and shared by every other GPU test from its first `*_ctx()` call
/// until its thread ends: see the module's docs.
static GPU: RwLock<()> = RwLock::new(());

thread_local! {
    /// This test thread's shared hold on [`GPU`].
    static SHARED: RefCell<Option<RwLockReadGuard<'static, ()>>> = const { RefCell::new(None) };
    /// Whether this thread runs a leak-checked variant (it holds [`GPU`]
    /// exclusively already).
    static EXCLUSIVE: Cell<bool> = const { Cell::new(false) };
}

/// How far the driver's free memory may fall across a leak-checked test:
/// one 2 MiB page, the step in which `cuMemGetInfo` moves.
pub const DRIVER_SLACK: usize = 2 << 20;

/// Takes a shared hold on [`GPU`] for the rest of this thread (a test's
/// thread ends with the test), unless this thread holds it exclusively.
fn share_gpu() {
    if EXCLUSIVE.get() {
        return;
    }
    SHARED.with(|s| {
        let mut s = s.borrow_mut();
        if s.is_none() {
            *s = Some(GPU.read().unwrap_or_else(|e| e.into_inner()));
        }
    });
}

/// This thread's exclusive hold on [`GPU`], and the flag that says so.
struct Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>);

impl Exclusive {
    fn take() -> Exclusive {
        // A thread running tests one after another (`--test-threads=1`)
        // may still hold a shared hold from an earlier test: nothing else
        // runs then, so it goes.
        SHARED.with(|s| s.borrow_mut().take());
        let guard = GPU.write().unwrap_or_else(|e| e.into_inner());
        EXCLUSIVE.set(true);
        Exclusive(guard)
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        EXCLUSIVE.set(false);
    }
}

/// The witness of `backend`'s device 0: a context opened once per process
/// (by `open`) and kept, through which the cuda leak check reads the
/// driver's free memory while no test context is open.
fn witness(backend: Backend, open: fn() -> Context) -> Context {
    static WITNESSES: Mutex<Vec<Context>> = Mutex::new(Vec::new());
    let mut all = WITNESSES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = all.iter().find(|w| w.backend() == backend) {
        return w.clone();
    }
    let ctx = open();
    if backend == Backend::Cuda {
        // The first managed allocation of a process makes the driver set
        // up about 120 MiB of state for it (seen on an H100), kept until
        // the process ends: made here, before any test's first reading.
        drop(ctx.alloc_unified::<u8>(1).expect("cuMemAllocManaged"));
        ctx.sync().expect("the witness synchronizes");
    }
    all.push(ctx.clone());
    ctx
}

/// Waits for `ctx`'s work (an error kept from a drop is returned once, so
/// a second sync must succeed) and empties its cache where it has one.
fn settle(test: &str, ctx: &Context) {
    if ctx.sync().is_err() {
        if let Err(e) = ctx.sync() {
            panic!("leak check of {test}: the context does not synchronize: {e}");
        }
    }
    match ctx.empty_cache() {
        Ok(_) | Err(Error::Unsupported { .. }) => {}
        Err(e) => panic!("leak check of {test}: empty_cache: {e}"),
    }
}

/// Bytes the allocator of `ctx` hands out now, or `None` where the
/// backend has no allocator of its own (`Unsupported` says why).
fn in_use(test: &str, ctx: &Context) -> Option<usize> {
    match ctx.memory_stats() {
        Ok(s) => Some(s.in_use),
        Err(Error::Unsupported { .. }) => None,
        Err(e) => panic!("leak check of {test}: memory_stats: {e}"),
    }
}

fn driver_free(test: &str, ctx: &Context) -> usize {
    match ctx.memory_info() {
        Ok(m) => m.free,
        Err(e) => panic!("leak check of {test}: memory_info: {e}"),
    }
}

/// How many more times [`leak_checked`] runs a body whose first run left
/// the driver with less free memory than [`DRIVER_SLACK`] allows, to tell
/// memory the driver keeps once per process or device from a leak. One by
/// default: a second run that loses no more than the slack is what the
/// guard asked of every run before, with what is kept once left out (and
/// the churn test's body is minutes long on a GPU).
/// `UNIGPU_LEAK_REPEATS=N` sets it, and makes every GPU variant run its
/// body N more times and print its figures (how a suspected leak is
/// judged by hand: docs/gpu-testing.md).
fn leak_repeats() -> (usize, bool) {
    match std::env::var("UNIGPU_LEAK_REPEATS") {
        Ok(v) => match v.parse() {
            Ok(n) => (n, true),
            Err(_) => panic!("UNIGPU_LEAK_REPEATS={v:?}: not a count"),
        },
        Err(_) => (1, false),
    }
}

/// The driver's free memory around one run of a leak-checked body.
struct Run {
    /// Through the witness (cuda), before the context opened and after it
    /// was dropped: device-wide.
    witness: Option<(usize, usize)>,
    /// On the test's own context (vulkan), before and after the body.
    own: Option<(usize, usize)>,
}

impl Run {
    /// Bytes the driver lost over this run, by either figure.
    fn loss(&self) -> usize {
        [self.witness, self.own]
            .into_iter()
            .flatten()
            .map(|(before, after)| before.saturating_sub(after))
            .max()
            .unwrap_or(0)
    }
}

/// One run of `body` on a fresh context, with the allocator's exact check
/// (see the module's docs) and the driver's figures around it.
fn checked_run(
    test: &str,
    backend: Backend,
    open: fn() -> Context,
    body: fn(&Context),
    witness: Option<&Context>,
) -> Run {
    let own_free = backend == Backend::Vulkan;
    let free_before = witness.map(|w| {
        settle(test, w);
        driver_free(test, w)
    });
    let ctx = open();
    assert_eq!(ctx.backend(), backend, "{test}");
    settle(test, &ctx);
    let used_before = in_use(test, &ctx);
    let own_before = own_free.then(|| driver_free(test, &ctx));

    body(&ctx);

    settle(test, &ctx);
    if let (Some(before), Some(after)) = (used_before, in_use(test, &ctx)) {
        assert_eq!(
            after, before,
            "leak in {test}: the allocator hands out {after} bytes after the test, {before} before"
        );
    }
    let own_after = own_free.then(|| driver_free(test, &ctx));
    drop(ctx);
    let free_after = witness.map(|w| {
        settle(test, w);
        driver_free(test, w)
    });
    Run {
        witness: free_before.zip(free_after),
        own: own_before.zip(own_after),
    }
}

const MIB: f64 = (1 << 20) as f64;

/// Runs `body` on a context of `backend` from `open` and fails `test`
/// when it leaves device memory behind (the module's docs say how). GPU
/// variants hold [`GPU`] exclusively throughout.
///
/// The driver's free memory judges growth, not one run's loss: the first
/// use of a feature in a process or on a device (cuBLAS's handle and
/// workspace, lazily loaded kernel modules, a host function's thread)
/// makes the driver keep memory until the process ends, and how much
/// differs between GPU kinds (4-6 MiB on an H100 host where an H200 kept
/// none). So a first run that loses more than [`DRIVER_SLACK`] is run
/// again ([`leak_repeats`] times, each on a fresh context), and the test
/// fails only if the figure keeps falling: by more than the slack across
/// the reruns through the witness (device-wide, cumulative), or in the
/// last rerun on the test's own context (vulkan), in each of
/// [`LEAK_ROUNDS`] rounds of reruns.
pub fn leak_checked(test: &str, backend: Backend, open: fn() -> Context, body: fn(&Context)) {
    let _exclusive = (backend != Backend::Cpu).then(Exclusive::take);
    // Which driver figure to check (see the module's docs).
    let witness = (backend == Backend::Cuda).then(|| witness(backend, open));
    let first = checked_run(test, backend, open, body, witness.as_ref());
    let (repeats, forced) = leak_repeats();
    if first.loss() <= DRIVER_SLACK && !forced {
        return;
    }
    if repeats == 0 {
        panic!(
            "leak in {test}: the driver lost {:.1} MiB over the test ({} MiB allowed; \
             UNIGPU_LEAK_REPEATS=0 leaves no rerun to tell a leak from memory kept once)",
            first.loss() as f64 / MIB,
            DRIVER_SLACK >> 20
        );
    }
    // Rounds of reruns: a leak loses memory in every round, while memory
    // the driver keeps once (a module loaded lazily on a rerun's first use
    // of it) shows in one round only: on an H200 one round of
    // `alloc_inside_catch_unwind` once lost 8.1 MiB that four later runs of
    // the whole test never lost again. So a test fails only when every
    // round grows past the slack.
    let mut from = first;
    let mut growths = Vec::new();
    for round in 1..=LEAK_ROUNDS {
        let mut last = None;
        for _ in 0..repeats {
            last = Some(checked_run(test, backend, open, body, witness.as_ref()));
        }
        let last = last.expect("repeats >= 1");
        let growth = growth(&from, &last);
        eprintln!(
            "leak check of {test}, round {round}: the run before lost {:.1} MiB of driver \
             memory, {repeats} more runs {:.1} MiB more ({} MiB allowed)",
            from.loss() as f64 / MIB,
            growth as f64 / MIB,
            DRIVER_SLACK >> 20
        );
        growths.push(format!("{:.1}", growth as f64 / MIB));
        if growth <= DRIVER_SLACK {
            return;
        }
        from = last;
    }
    panic!(
        "leak in {test}: the driver's free memory kept falling in each of {LEAK_ROUNDS} rounds of \
         {repeats} runs: {} MiB ({} MiB allowed a round)",
        growths.join(", "),
        DRIVER_SLACK >> 20
    );
}

/// Rounds of reruns a suspected leak gets (see [`leak_checked`]).
const LEAK_ROUNDS: usize = 2;

/// What the runs after `from` lost up to the end of `last`: device-wide
/// through the witness (cumulative from after `from` to after `last`), or
/// over `last` on the test's own context (vulkan).
fn growth(from: &Run, last: &Run) -> usize {
    let witness = from
        .witness
        .zip(last.witness)
        .map_or(0, |((_, after_from), (_, after_last))| {
            after_from.saturating_sub(after_last)
        });
    let own = last
        .own
        .map_or(0, |(before, after)| before.saturating_sub(after));
    witness.max(own)
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

/// A random length in 1..=max, different every run (max is cut to
/// `SANITIZED_RANDOM_MAX` under a sanitizer; see [`big`]).
pub fn random_len(max: usize) -> usize {
    let max = if cfg!(unigpu_sanitizer) {
        max.min(SANITIZED_RANDOM_MAX)
    } else {
        max
    };
    rand::rng().random_range(1..=max)
}

/// Under a sanitizer (`--cfg unigpu_sanitizer`, set by .ci/sanitizers.sh)
/// every load and store is checked and a test runs 10 to 50 times slower,
/// so the suites' large sizes are cut there: a random length to 4 Ki
/// elements, and an explicitly large one to [`SANITIZED_MAX`], which is
/// still four of the CPU backend's 32 Ki-element chunks and an odd tail, so
/// its split across threads (what ThreadSanitizer is there to watch) runs.
const SANITIZED_RANDOM_MAX: usize = 1 << 12;
pub const SANITIZED_MAX: usize = (1 << 17) + 7;

/// `n`, or [`SANITIZED_MAX`] if that is smaller and a sanitizer is on.
pub fn big(n: usize) -> usize {
    if cfg!(unigpu_sanitizer) {
        n.min(SANITIZED_MAX)
    } else {
        n
    }
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
                let test = concat!(module_path!(), "::cpu");
                $crate::common::leak_checked(
                    test,
                    unigpu::Backend::Cpu,
                    $crate::common::cpu_ctx,
                    body,
                );
            }

            $crate::cuda_backend_variants!($body);

            #[cfg(feature = "vulkan")]
            #[test]
            #[ignore = "needs a Vulkan adapter"]
            fn vulkan() {
                let body: fn(&unigpu::Context) = $body;
                let test = concat!(module_path!(), "::vulkan");
                $crate::common::leak_checked(
                    test,
                    unigpu::Backend::Vulkan,
                    $crate::common::vulkan_ctx,
                    body,
                );
            }
        }
    };
}

/// `on_every_cuda_backend!(name, |ctx: &Context| { ... });` makes
/// `name::cuda` and (with the `torch` feature) `name::torch` tests: for
/// what only the backends that drive CUDA devices have (NVRTC compiles,
/// C++ and PTX kernels, CUDA launch limits, the caching allocator). Not
/// vulkan, a GPU backend that runs no CUDA code.
#[macro_export]
macro_rules! on_every_cuda_backend {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::cuda_backend_variants!($body);
        }
    };
}

/// The variants of one test body on the backends that drive CUDA devices:
/// `cuda` and, with the `torch` feature, `torch`; each ignored without a GPU and failing (not skipping)
/// when asked to run without one.
#[macro_export]
macro_rules! cuda_backend_variants {
    ($body:expr) => {
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn cuda() {
            let body: fn(&unigpu::Context) = $body;
            let test = concat!(module_path!(), "::cuda");
            $crate::common::leak_checked(
                test,
                unigpu::Backend::Cuda,
                $crate::common::cuda_ctx,
                body,
            );
        }

        #[cfg(feature = "torch")]
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn torch() {
            let body: fn(&unigpu::Context) = $body;
            let test = concat!(module_path!(), "::torch");
            $crate::common::leak_checked(
                test,
                unigpu::Backend::Torch,
                $crate::common::torch_ctx,
                body,
            );
        }
    };
}

/// The context of the CUDA-device backend named `backend` ("cuda", or
/// "torch" with the feature), for tests that re-run themselves in a child process.
pub fn cuda_backend_ctx(backend: &str) -> Context {
    match backend {
        "cuda" => cuda_ctx(),
        #[cfg(feature = "torch")]
        "torch" => torch_ctx(),
        other => panic!("no backend `{other}` that drives CUDA devices in this build"),
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

/// How long a gate waits for the test to open it before giving up (the
/// test then fails: see [`Gate::assert_opened_by_the_test`]).
pub const GATE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a test watches a gated consumer to see that it stays blocked.
/// A consumer that does not wait finishes in microseconds, so this only
/// has to outlast scheduling noise; a waiting one never finishes early.
pub const WATCH: Duration = Duration::from_millis(200);

/// Holds a stream back: a host function that blocks until the test calls
/// [`Gate::open`]. Work enqueued after it on the stream cannot start, so a
/// consumer that forgets to wait for that work runs early and reads stale
/// data, and the test sees it. Take [`park_lock`] while one is closed.
/// (streams.rs and dlpack.rs use it.)
pub struct Gate {
    tx: mpsc::Sender<()>,
    opened: Arc<AtomicBool>,
}

impl Gate {
    pub fn close(s: &Stream) -> Gate {
        let (tx, rx) = mpsc::channel::<()>();
        let opened = Arc::new(AtomicBool::new(false));
        let flag = opened.clone();
        s.host_fn(move || {
            if rx.recv_timeout(GATE_TIMEOUT).is_ok() {
                flag.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        Gate { tx, opened }
    }

    pub fn open(&self) {
        self.tx.send(()).expect("the gate's host function is gone");
    }

    /// Call after the gated stream is synced: fails when the gate gave up
    /// waiting (so the work behind it ran without the test's say-so).
    #[track_caller]
    pub fn assert_opened_by_the_test(&self) {
        assert!(
            self.opened.load(Ordering::SeqCst),
            "the gate timed out after {GATE_TIMEOUT:?} instead of being opened by the test"
        );
    }
}

/// `a` without its first element, as a DLPack import of `a`'s own export
/// moved on one element (a producer's slice): memory that starts
/// `size_of::<T>()` bytes past `a`'s, so on cuda and torch not on 16 bytes.
pub fn offset_by_one<T: Element>(
    ctx: &Context,
    a: &mut unigpu::GpuArray<T>,
) -> unigpu::GpuArray<T> {
    let raw = a
        .to_dlpack(unigpu::DlpackSync::Host)
        .unwrap()
        .into_raw_versioned()
        .unwrap_or_else(|_| panic!("a versioned export"));
    // SAFETY: `raw` is the export's own tensor, valid until its deleter
    // runs (the import below takes it over); the shape it points to has
    // one axis of a.len() >= 1, and moving the start one element on while
    // dropping one from the length keeps the view inside the allocation.
    let tensor = unsafe {
        let t = &mut (*raw).dl_tensor;
        t.byte_offset += std::mem::size_of::<T>() as u64;
        *t.shape -= 1;
        unigpu::DlpackTensor::from_raw_versioned(raw).unwrap()
    };
    unigpu::GpuArray::from_dlpack(ctx, tensor).unwrap()
}
