//! What the code `#[unigpu::kernel]` generates calls: building the
//! [`Kernel`] from its three forms, and the CPU form's run-time support
//! (bounds-checked array views, the workgroup loop, the arithmetic whose
//! result the kernel language defines). Not meant to be called by hand;
//! its items may change with the macro.
//!
//! The small functions the generated code calls per element are
//! `#[inline]`: the generated code lives in the user's crate, and without
//! it every array access was a call across crates (on the 2-core CPU
//! backend saxpy went from 0.17× to 0.53× the built-in axpy, the tree sum
//! from 368 to 30 ms).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64};

use rayon::prelude::*;

use super::module::KernelInner;
use super::names::register;
use super::{CompileOptions, CpuArgs, Grid, Kernel, KernelDecl, ParamKind};
use crate::backend::{Backend, KernelCode, ShaderSource, shader_kernel};
use crate::lock::lock;
use crate::{Context, DType, Error, Result};

/// What the macro knows about one kernel.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    /// Per parameter: `Some((dtype, writable))` for an array, `None` with
    /// `scalar` for a value.
    pub params: &'static [Param],
    pub cuda: &'static str,
    pub wgsl: &'static str,
    /// The WGSL with f32 `fma` emulated (one rounding through f64), for
    /// an adapter whose `fma` rounds twice; empty without f32 `fma`.
    pub wgsl_fma: &'static str,
    /// Whether the kernel calls `fma` in f32, in f64.
    pub fma: [bool; 2],
    /// Whether it uses f64, and i64/u64 (which vulkan adapters may lack).
    pub wide: [bool; 2],
    /// The first f64 math function it calls that Vulkan has in f32 only
    /// (exp, ln, sin, …); "" for none.
    pub f64_math: &'static str,
    /// Whether it uses subgroup operations or built-ins (which vulkan
    /// adapters may lack).
    pub subgroups: bool,
    pub cpu: fn(&CpuArgs) -> Result<()>,
    /// Every place the kernel indexes an array, by the number its code
    /// records in the fault word when the index is out of bounds.
    pub sites: &'static [Site],
    /// The declared workgroup size: every launch's block must be it (the
    /// CUDA form takes it as a constant and proves indices with it).
    pub workgroup: (u32, u32, u32),
}

pub use super::bounds::Site;
pub use crate::error::ArrayAccess as Access;

/// Where the CPU form records its first out-of-bounds access: the
/// stream's fault word (the argument after the declared ones) and the
/// kernel's code (its id << 20, the one after), as the GPU forms do.
/// `Copy`, as the array views are: each workgroup task takes its own.
#[derive(Debug, Clone, Copy)]
pub struct Fault<'a> {
    word: &'a AtomicU32,
    code: u32,
}

impl<'a> Fault<'a> {
    pub fn new(status: &'a Rw<'a, u32>, code: u32) -> Result<Self> {
        let word = status.0.first().ok_or_else(|| Error::KernelArgs {
            kernel: "(CPU implementation)".into(),
            message: "no fault word after the arguments (launch it with ctx.launch)".into(),
        })?;
        Ok(Fault { word, code })
    }

    /// Records an out-of-bounds access at `site`, unless one is recorded
    /// already (the first wins). Called on the out-of-bounds path only.
    #[cold]
    pub fn record(&self, site: u32) {
        let _ = self
            .word
            .compare_exchange(0, self.code | site, Relaxed, Relaxed);
    }
}

/// One parameter as the macro declares it.
#[derive(Debug, Clone, Copy)]
pub enum Param {
    Array { dtype: DType, writable: bool },
    Scalar(DType),
}

/// The kernel for `ctx`'s backend: the CUDA form compiled by NVRTC (with
/// `--fmad=false`: the language promises no contraction) on cuda and
/// torch, the WGSL form on vulkan, and the CPU form everywhere.
pub fn build(ctx: &Context, spec: &'static Spec) -> Result<Kernel> {
    build_with(ctx, spec, &[], &[])
}

/// At most this many bytes of shared arrays per kernel (WebGPU's default
/// `maxComputeWorkgroupStorageSize`); the macro checks literal lengths.
const SHARED_BYTES: u64 = 16384;

/// The checks and preambles of an instantiation of a kernel generic over
/// `const` sizes: `consts` are the emitted names and values of its const
/// parameters, `shared` its shared arrays as (bytes an element, length).
struct Consts {
    cuda: String,
    wgsl: String,
}

fn consts(spec: &Spec, consts: &[(&str, usize)], shared: &[(u64, u64)]) -> Result<Consts> {
    let refuse = |message: String| Error::KernelArgs {
        kernel: spec.name.to_string(),
        message,
    };
    for &(name, v) in consts {
        // `usize` is 32-bit in kernels.
        u32::try_from(v).map_err(|_| {
            refuse(format!(
                "const parameter {} = {v}: kernels compute sizes in 32 bits (at most {})",
                name.trim_start_matches("c_"),
                u32::MAX
            ))
        })?;
    }
    if shared.iter().any(|&(_, len)| len == 0) {
        return Err(refuse(
            "a shared array of length 0 (from a const parameter): shared arrays cannot be empty"
                .into(),
        ));
    }
    let bytes = shared
        .iter()
        .fold(0u64, |a, &(b, len)| a.saturating_add(b.saturating_mul(len)));
    if bytes > SHARED_BYTES {
        return Err(refuse(format!(
            "{bytes} bytes of shared arrays with these const parameters: at most {SHARED_BYTES} run on every backend"
        )));
    }
    Ok(Consts {
        cuda: instance_cuda("", consts),
        wgsl: instance_wgsl("", consts),
    })
}

/// The CUDA C++ of one instantiation of a kernel generic over `const`
/// sizes: `src` after `#define`s of their values.
pub fn instance_cuda(src: &str, consts: &[(&str, usize)]) -> String {
    let mut out: String = consts
        .iter()
        .map(|(n, v)| format!("#define {n} {v}u\n"))
        .collect();
    out.push_str(src);
    out
}

/// The WGSL of one instantiation: `src` after `const` declarations of
/// the values (module-scope constants, usable in array sizes).
pub fn instance_wgsl(src: &str, consts: &[(&str, usize)]) -> String {
    let mut out: String = consts
        .iter()
        .map(|(n, v)| format!("const {n}: u32 = {v}u;\n"))
        .collect();
    out.push_str(src);
    out
}

/// [`build`] for one instantiation of a kernel generic over `const`
/// sizes: their values are checked (32 bits; the shared arrays they size
/// non-empty and within the limit) and given to the CUDA and WGSL forms
/// as a preamble, so NVRTC's caches, keyed by the source, hold each
/// instantiation apart. (The CPU form, `spec.cpu`, is already the Rust
/// function instantiated with them; the macro makes each instance's
/// `Spec` a `'static` constant, as out-of-bounds reports keep its sites.)
pub fn build_with(
    ctx: &Context,
    spec: &'static Spec,
    const_values: &[(&str, usize)],
    shared: &[(u64, u64)],
) -> Result<Kernel> {
    // The built-in ops call this on every call: building again would copy
    // and hash the whole source to find the module (tens of µs, which left
    // an H100 idle between the element-wise ops), so a context keeps what
    // it built, by the spec's address and the instance's constants.
    let key = (
        spec as *const Spec as usize,
        const_values
            .iter()
            .map(|&(name, value)| (name.to_string(), value))
            .collect(),
        shared.to_vec(),
    );
    if let Some(kernel) = lock(ctx.generated_cache()).get(&key) {
        return Ok(kernel.clone());
    }
    let kernel = build_uncached(ctx, spec, const_values, shared)?;
    lock(ctx.generated_cache()).insert(key, kernel.clone());
    Ok(kernel)
}

fn build_uncached(
    ctx: &Context,
    spec: &'static Spec,
    const_values: &[(&str, usize)],
    shared: &[(u64, u64)],
) -> Result<Kernel> {
    let pre = consts(spec, const_values, shared)?;
    let params: Vec<ParamKind> = spec
        .params
        .iter()
        .map(|p| match *p {
            Param::Array { dtype, writable } => ParamKind::Pointer {
                dtype: Some(dtype),
                writable,
            },
            Param::Scalar(d) => ParamKind::Scalar(d),
        })
        .collect();
    let fault_code = super::bounds::register(spec.name, spec.sites)?;
    let mut code = vec![KernelCode::Cpu(Arc::new(spec.cpu))];
    let mut id = None;
    match ctx.backend() {
        Backend::Cuda | Backend::Torch => {
            let options = CompileOptions::default().option("--fmad=false");
            let src = if pre.cuda.is_empty() {
                spec.cuda.to_string()
            } else {
                pre.cuda + spec.cuda
            };
            // The kernel's name is all the build needs of its declaration:
            // `params` above are the arguments a launch passes, which the
            // generated signature extends with lengths and the fault word.
            let decl = || {
                vec![KernelDecl {
                    name: spec.name.to_string(),
                    params: None,
                    extern_c: true,
                    template: false,
                }]
            };
            let k = ctx
                .compile_declared(&src, &options, decl)?
                .kernel(spec.name)?;
            id = Some(k.inner.id);
            code.extend(
                k.inner
                    .code
                    .iter()
                    .filter(|c| matches!(c, KernelCode::Cuda(_)))
                    .cloned(),
            );
        }
        Backend::Vulkan => {
            let wgsl = pre.wgsl + vulkan_wgsl(ctx, spec)?;
            // f16/bf16 and u8 arrays are bound as u32 words (two or four
            // to a word): the launch checks them against the declared
            // element type.
            let halves: Vec<(usize, DType)> = spec
                .params
                .iter()
                .enumerate()
                .filter_map(|(i, p)| match *p {
                    Param::Array { dtype, .. }
                        if matches!(dtype, DType::F16 | DType::BF16 | DType::U8) =>
                    {
                        Some((i, dtype))
                    }
                    _ => None,
                })
                .collect();
            code.push(shader_kernel(
                spec.name,
                ShaderSource::Wgsl(&wgsl),
                &halves,
            )?)
        }
        Backend::Cpu => {}
    }
    Ok(Kernel {
        inner: Arc::new(KernelInner {
            id: id.unwrap_or_else(|| register(spec.name)),
            name: spec.name.to_string(),
            params: Some(params),
            code,
            hidden_lengths: true,
            fault_code: Some(fault_code),
            workgroup: Some(spec.workgroup),
        }),
    })
}

/// The WGSL form this vulkan adapter can run: subgroup operations need
/// its subgroups, f64 and i64/u64 its shader-f64 / shader-int64, and `fma` must round once (the language's
/// promise): WGSL's `fma` where the adapter's is fused (its probe, `unigpu
/// info`: "fma f32: fused"), else for f32 an emulation through f64. What
/// the adapter cannot do is an error naming the kernel and the adapter.
fn vulkan_wgsl(ctx: &Context, spec: &Spec) -> Result<&'static str> {
    if !(spec.wide[0] || spec.wide[1] || spec.fma[0] || spec.fma[1] || spec.subgroups) {
        return Ok(spec.wgsl);
    }
    let info = ctx.device_info()?;
    let detail = |k: &str| {
        info.details
            .iter()
            .find_map(|(n, v)| (n == k).then_some(v.as_str()))
    };
    let has = |k: &str| detail(k) == Some("yes");
    let refuse = |what: String| Error::Unsupported {
        backend: Backend::Vulkan,
        what: format!("kernel `{}`: {what} on adapter {}", spec.name, info.name),
    };
    if spec.subgroups && !has("subgroups") {
        return Err(refuse(
            "uses subgroup operations, which need wgpu's SUBGROUP feature (Vulkan 1.1 subgroup arithmetic and shuffles in compute), absent".into(),
        ));
    }
    if spec.wide[0] && !has("shader-f64") {
        return Err(refuse("uses f64, which needs shader-f64, absent".into()));
    }
    if !spec.f64_math.is_empty() {
        return Err(refuse(format!(
            "calls {} on f64, which Vulkan's SPIR-V (GLSL.std.450) has for f32 only \
             (compute it in f32, or run the kernel on another backend)",
            spec.f64_math
        )));
    }
    if spec.wide[1] && !has("shader-int64") {
        return Err(refuse(
            "uses i64/u64, which need shader-int64, absent".into(),
        ));
    }
    if spec.fma[1] && detail("fma f64") != Some("fused") {
        return Err(refuse(
            "calls fma on f64, which must round once, but the adapter's f64 fma rounds twice and there is no wider type to emulate it with".into(),
        ));
    }
    if spec.fma[0] && detail("fma f32") != Some("fused") {
        if has("shader-f64") && has("shader-int64") {
            return Ok(spec.wgsl_fma);
        }
        return Err(refuse(
            "calls fma on f32, which must round once, but the adapter's fma rounds twice and it lacks shader-f64/shader-int64 for the emulation".into(),
        ));
    }
    Ok(spec.wgsl)
}

/// A `usize` argument of a generated kernel, which indexes with 32 bits.
pub fn usize_arg(name: &str, i: usize, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::KernelArgs {
        kernel: name.to_string(),
        message: format!(
            "parameter {i} is a usize, 32-bit in kernels: {v} does not fit (at most {})",
            u32::MAX
        ),
    })
}

/// The error a generated launcher gives for a block that is not the
/// kernel's declared workgroup size.
pub fn check_block(name: &str, grid: &Grid, size: (u32, u32, u32)) -> Result<()> {
    if grid.block == size {
        return Ok(());
    }
    Err(Error::KernelArgs {
        kernel: name.to_string(),
        message: format!(
            "launched with blocks of {:?}, but the kernel's workgroup_size is {:?} (#[unigpu::kernel(workgroup_size = ...)])",
            grid.block, size
        ),
    })
}

fn too_long(len: usize) -> Error {
    Error::KernelArgs {
        kernel: "(CPU implementation)".into(),
        message: format!("an array of {len} elements; kernels index arrays with 32-bit indices"),
    }
}

/// An array the kernel only reads; out of bounds reads give zero.
#[derive(Debug, Clone, Copy)]
pub struct Ro<'a, T>(&'a [T]);

impl<'a, T: Copy + Default> Ro<'a, T> {
    pub fn new(s: &'a [T]) -> Result<Self> {
        u32::try_from(s.len()).map_err(|_| too_long(s.len()))?;
        Ok(Ro(s))
    }
    #[inline]
    pub fn len(&self) -> u32 {
        self.0.len() as u32
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The whole array, for a row of a grid-stride loop that reads it at
    /// its index (the macro's CPU form checks the row is in it).
    #[inline]
    pub fn slice(&self) -> &'a [T] {
        self.0
    }
    /// Element `i` where it is in bounds, with no fault recorded: the
    /// grid-stride fast path reads a read-only array's constant indices
    /// once a chunk with it, and runs its plain loop where one is not.
    #[inline]
    pub fn peek(&self, i: u32) -> Option<T> {
        self.0.get(i as usize).copied()
    }
    #[inline]
    pub fn get(&self, i: u32, fault: &Fault<'_>, site: u32) -> T {
        match self.0.get(i as usize) {
            Some(v) => *v,
            None => {
                fault.record(site);
                T::default()
            }
        }
    }
}

/// An element type a kernel may write: stored as relaxed atomic cells of
/// its width, so parallel workgroups never share a `&mut`.
pub trait Word: Copy + Default + Send + Sync + bytemuck::Pod {
    type Cell: Send + Sync;
    fn cells(s: &mut [Self]) -> Option<&[Self::Cell]>;
    fn load(c: &Self::Cell) -> Self;
    fn store(c: &Self::Cell, v: Self);
}

macro_rules! word {
    ($cell:ty, $view:ident, $($t:ty),*) => {$(
        impl Word for $t {
            type Cell = $cell;
            fn cells(s: &mut [Self]) -> Option<&[$cell]> {
                unigpu_core::cells::$view(s)
            }
            #[inline]
            fn load(c: &$cell) -> Self {
                bytemuck::cast(c.load(Relaxed))
            }
            #[inline]
            fn store(c: &$cell, v: Self) {
                c.store(bytemuck::cast(v), Relaxed)
            }
        }
    )*};
}
word!(AtomicU8, as_atomic_u8, u8);
word!(AtomicU16, as_atomic_u16, half::f16, half::bf16);
word!(AtomicU32, as_atomic_u32, f32, i32, u32);
word!(AtomicU64, as_atomic_u64, f64, i64, u64);

/// An array the kernel writes (and may read); out of bounds reads give
/// zero and out of bounds writes do nothing. `Copy` (a shared view of
/// atomic cells), so the CPU form's closure is too: [`run`] copies it into
/// each task, where the views' pointers stay in registers.
#[derive(Debug)]
pub struct Rw<'a, T: Word>(&'a [T::Cell]);

// By hand: a derive would ask for `T::Cell: Clone`, which atomics are not.
impl<T: Word> Clone for Rw<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Word> Copy for Rw<'_, T> {}

impl<'a, T: Word> Rw<'a, T> {
    pub fn new(s: &'a mut [T]) -> Result<Self> {
        let len = s.len();
        u32::try_from(len).map_err(|_| too_long(len))?;
        T::cells(s).map(Rw).ok_or_else(|| Error::KernelArgs {
            kernel: "(CPU implementation)".into(),
            message: "an array not aligned for its element type's atomic cells".into(),
        })
    }
    #[inline]
    pub fn len(&self) -> u32 {
        self.0.len() as u32
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    #[inline]
    pub fn get(&self, i: u32, fault: &Fault<'_>, site: u32) -> T {
        match self.0.get(i as usize) {
            Some(c) => T::load(c),
            None => {
                fault.record(site);
                T::default()
            }
        }
    }
    #[inline]
    pub fn set(&self, i: u32, v: T, fault: &Fault<'_>, site: u32) {
        match self.0.get(i as usize) {
            Some(c) => T::store(c, v),
            None => fault.record(site),
        }
    }
}

/// The language's integer atomics (`array.atomic_add(i, v)` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Sub,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exchange,
    CompareExchange,
}

/// An element type atomics work on (u32 and i32, in 32-bit cells).
pub trait AtomicInt: Word<Cell = AtomicU32> {
    /// The new value of an element that held `old`.
    fn apply(op: AtomicOp, old: Self, v: Self, current: Self) -> Self;
}

macro_rules! atomic_int {
    ($($t:ty),*) => {$(
        impl AtomicInt for $t {
            #[inline]
            fn apply(op: AtomicOp, old: Self, v: Self, current: Self) -> Self {
                match op {
                    AtomicOp::Add => old.wrapping_add(v),
                    AtomicOp::Sub => old.wrapping_sub(v),
                    AtomicOp::Min => old.min(v),
                    AtomicOp::Max => old.max(v),
                    AtomicOp::And => old & v,
                    AtomicOp::Or => old | v,
                    AtomicOp::Xor => old ^ v,
                    AtomicOp::Exchange => v,
                    AtomicOp::CompareExchange => if old == current { v } else { old },
                }
            }
        }
    )*};
}
atomic_int!(u32, i32);

impl<T: AtomicInt> Rw<'_, T> {
    /// One atomic read-modify-write of element `i` (relaxed, as CUDA's and
    /// WGSL's are); the old value, or 0 and nothing done out of bounds.
    #[inline]
    pub fn atomic(
        &self,
        op: AtomicOp,
        i: u32,
        v: T,
        current: T,
        fault: &Fault<'_>,
        site: u32,
    ) -> T {
        let Some(c) = self.0.get(i as usize) else {
            fault.record(site);
            return T::default();
        };
        let old = c.fetch_update(Relaxed, Relaxed, |x| {
            Some(bytemuck::cast(T::apply(op, bytemuck::cast(x), v, current)))
        });
        bytemuck::cast(old.unwrap_or_else(|x| x))
    }
}

/// One invocation's indices, as the GPU backends number them.
#[derive(Debug, Clone, Copy)]
pub struct Ids {
    pub global: [u32; 3],
    pub local: [u32; 3],
    pub group: [u32; 3],
    pub size: [u32; 3],
    pub groups: [u32; 3],
}

/// Workgroups a task runs at least: small workgroups are batched so a task
/// is worth waking a core for (4096 invocations), but never into fewer
/// than four tasks a thread of the pool, since an invocation's work is
/// not known here (a grid-stride loop's may be thousands of elements).
/// Before the cap, a tree sum over 4 Mi f32 in 2 to 16 workgroups of 256
/// ran as one task, on one of the 2 cores.
fn batch(groups: u64, per_group: u64) -> usize {
    let tasks = rayon::current_num_threads() as u64 * 4;
    (4096 / per_group).min(groups / tasks).max(1) as usize
}

/// Runs `body` once per invocation of `grid`: each workgroup is one task
/// on rayon's pool and its invocations run as a loop, x fastest (no
/// thread per invocation, so any workgroup size runs on any core count).
///
/// `body` is cloned into each task (the generated one is a `move` closure
/// of array views and scalars, a few words): called through a shared
/// reference, its captured pointers were loaded again after every store,
/// since an atomic store may alias them; a local copy whose address never
/// escapes keeps them in registers (saxpy on the 2-core CPU backend:
/// 0.53× → 0.63× the built-in axpy).
pub fn run(grid: Grid, body: impl Fn(&Ids) + Sync + Clone) {
    let g = [grid.grid.0, grid.grid.1, grid.grid.2];
    let b = [grid.block.0, grid.block.1, grid.block.2];
    let groups = g.iter().map(|&d| d as u64).product::<u64>();
    let per_group = b.iter().map(|&d| d as u64).product::<u64>().max(1);
    let min_len = batch(groups, per_group);
    let one = |w: usize| {
        let body = body.clone();
        let w = w as u64;
        let group = [
            (w % g[0] as u64) as u32,
            (w / g[0] as u64 % g[1] as u64) as u32,
            (w / (g[0] as u64 * g[1] as u64)) as u32,
        ];
        for z in 0..b[2] {
            for y in 0..b[1] {
                for x in 0..b[0] {
                    let local = [x, y, z];
                    let global =
                        [0, 1, 2].map(|d| group[d].wrapping_mul(b[d]).wrapping_add(local[d]));
                    body(&Ids {
                        global,
                        local,
                        group,
                        size: b,
                        groups: g,
                    });
                }
            }
        }
    };
    // One task runs here, on the stream's thread (see `run_groups`).
    if groups as usize <= min_len {
        (0..groups as usize).for_each(one);
        return;
    }
    (0..groups as usize)
        .into_par_iter()
        .with_min_len(min_len)
        .for_each(one);
}

impl Ids {
    /// The indices every invocation of `grid` shares (its sizes; the
    /// others 0): what the uniform values of a grid-stride kernel read.
    pub fn of_grid(grid: &Grid) -> Ids {
        Ids {
            global: [0; 3],
            local: [0; 3],
            group: [0; 3],
            size: [grid.block.0, grid.block.1, grid.block.2],
            groups: [grid.grid.0, grid.grid.1, grid.grid.2],
        }
    }
}

/// Whether the grid-stride fast path runs a launch of `grid` whose loop
/// ends at `end`: a 1-D grid (every global x id once), of
/// `S = num_workgroups().x * workgroup_size().x` invocations with `S` in
/// 32 bits (the kernel computes it so) and `end + S` within 2^32, so the
/// loop's `i += S` never wraps. Then the launch runs the iteration for
/// each of `0..end` exactly once (docs/kernels.md, "Speed").
pub fn grid_stride_fits(grid: &Grid, end: u32) -> bool {
    let ((gx, gy, gz), (bx, by, bz)) = (grid.grid, grid.block);
    let s = gx as u64 * bx as u64;
    gy == 1 && gz == 1 && by == 1 && bz == 1 && s > 0 && end as u64 + s <= 1 << 32
}

/// The chunk the grid-stride fast path gives a task: about 8 a thread,
/// at least 4096 iterations.
pub fn chunk_len(end: u32) -> usize {
    let tasks = rayon::current_num_threads().max(1) * 8;
    (end as usize).div_ceil(tasks).max(4096)
}

/// `s` cut into parts of `chunk` elements (the last shorter), each a
/// `&mut` of its own: what makes plain writes from parallel tasks safe.
pub fn chunks_mut<T>(s: &mut [T], chunk: usize) -> Vec<&mut [T]> {
    s.chunks_mut(chunk.max(1)).collect()
}

/// As [`chunks_mut`], for an array the kernel only reads.
pub fn chunks<T>(s: &[T], chunk: usize) -> Vec<&[T]> {
    s.chunks(chunk.max(1)).collect()
}

/// The grid-stride fast path runs each chunk's loop inside it (see there).
pub use crate::simd::{math, simd};

/// Runs `body(first index, parts)` for every chunk on rayon's pool;
/// chunk `c` starts at index `c * chunk`.
pub fn run_chunks<P: Send>(parts: Vec<P>, chunk: usize, body: impl Fn(u32, P) + Sync + Send) {
    parts
        .into_par_iter()
        .enumerate()
        .for_each(|(c, p)| body((c * chunk) as u32, p));
}

/// The workgroups a task of a phased kernel (one with barriers or shared
/// arrays) runs: one, or `count` consecutive ones along x run together
/// ([`run_groups`]), whose invocations the generated loops number on from
/// one workgroup to the next (`li` in `0..len()`).
#[derive(Debug, Clone, Copy)]
pub struct Group {
    group: [u32; 3],
    size: [u32; 3],
    groups: [u32; 3],
    count: u32,
    /// log2 of `size[0]` where it is a power of two, else `u32::MAX`:
    /// workgroups run together find an invocation's workgroup and local
    /// id with a shift and a mask, not a division (`part` and `ids` are
    /// called per invocation per phase; a tree sum's nine passes over
    /// 2048 invocations spent their time in `div`).
    shift: u32,
}

/// [`Group::shift`] of a workgroup `bx` wide.
fn shift_of(bx: u32) -> u32 {
    if bx.is_power_of_two() {
        bx.trailing_zeros()
    } else {
        u32::MAX
    }
}

impl Group {
    /// The workgroup among those run together, and the local x id, of
    /// invocation `li`.
    #[inline(always)]
    fn split(&self, li: u32) -> (u32, u32) {
        if self.shift != u32::MAX {
            (li >> self.shift, li & ((1 << self.shift) - 1))
        } else {
            let bx = self.size[0].max(1);
            (li / bx, li % bx)
        }
    }

    /// The number of invocations, of every workgroup run together.
    #[inline]
    pub fn len(&self) -> usize {
        self.size.iter().map(|&d| d as usize).product::<usize>() * self.count as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The width of a row of invocations: `size[0]`, the invocations of
    /// one local `y`, `z` of a workgroup, or one workgroup of those run
    /// together (they are 1-D). Invocations are numbered row after row.
    #[inline]
    pub fn width(&self) -> usize {
        self.size[0].max(1) as usize
    }

    /// Which of the workgroups run together invocation `li` belongs to:
    /// the part of each shared array that is its workgroup's.
    #[inline]
    pub fn part(&self, li: usize) -> u32 {
        if self.count == 1 {
            0
        } else {
            self.split(li as u32).0
        }
    }
    /// For a grid-stride loop the CPU form runs row by row (`i` from
    /// `global_id().x` by `S = num_workgroups().x * workgroup_size().x`
    /// while below `end`): the global x id of invocation 0 and `S`, where
    /// the workgroup is 1-D (invocation `li`'s x id is then that plus
    /// `li`), `S` is not 0 and `end + S` is within 2^32 (so `i` never
    /// wraps); else `None`, and the phase runs invocation by invocation.
    pub fn rows(&self, end: u32) -> Option<(u32, u32)> {
        let s = self.groups[0] as u64 * self.size[0] as u64;
        if self.size[1] != 1 || self.size[2] != 1 || s == 0 || end as u64 + s > 1 << 32 {
            return None;
        }
        // group < groups, so group * size < S < 2^32.
        Some((self.group[0] * self.size[0], s as u32))
    }
    /// The indices of invocation `li` (x fastest, as the GPUs number them).
    #[inline]
    pub fn ids(&self, li: usize) -> Ids {
        let b = self.size;
        let li = li as u32;
        // Called once per invocation per phase. A 1-D workgroup needs no
        // division; otherwise `max(1)` (sizes are never 0) drops the
        // division-by-zero panic, so LLVM may skip the divisions whose
        // index the kernel never reads. Workgroups run together are 1-D.
        let (local, group) = if self.count > 1 {
            let (part, lx) = self.split(li);
            ([lx, 0, 0], [self.group[0] + part, 0, 0])
        } else if b[1] == 1 && b[2] == 1 {
            ([li, 0, 0], self.group)
        } else {
            let (bx, by) = (b[0].max(1), b[1].max(1));
            ([li % bx, li / bx % by, li / (bx * by)], self.group)
        };
        Ids {
            global: [0, 1, 2].map(|d| group[d].wrapping_mul(b[d]).wrapping_add(local[d])),
            local,
            group,
            size: b,
            groups: self.groups,
        }
    }
}

/// Runs `body` once per workgroup of `grid`, each a task on rayon's pool;
/// the generated body loops over the invocations itself, phase by phase.
///
/// `together`: the macro found that the kernel's workgroups may run
/// phase by phase side by side (nothing the workgroup decides as one, a
/// condition around a barrier or a per-workgroup value, depends on which
/// workgroup it is, and no loop around a barrier is left by `break` or
/// `continue`). Then, on a 1-D grid of 1-D workgroups, a task runs its
/// consecutive workgroups as one `Group`: a grid-stride loop's row spans
/// them all, so its loads are one contiguous run, not one workgroup's
/// 1 KB from each of many pages (a tree sum over 4 Mi f32 on 2 cores:
/// 0.72x the built-in sum before, with 64 workgroups of 256).
pub fn run_groups(grid: Grid, together: bool, body: impl Fn(&Group) + Sync) {
    let g = [grid.grid.0, grid.grid.1, grid.grid.2];
    let b = [grid.block.0, grid.block.1, grid.block.2];
    let groups = g.iter().map(|&d| d as u64).product::<u64>();
    let per_group = b.iter().map(|&d| d as u64).product::<u64>().max(1);
    let min_len = batch(groups, per_group);
    if together && min_len > 1 && g[1] == 1 && g[2] == 1 && b[1] == 1 && b[2] == 1 {
        let m = min_len as u32;
        (0..g[0].div_ceil(m)).into_par_iter().for_each(|c| {
            let first = c * m;
            body(&Group {
                group: [first, 0, 0],
                size: b,
                groups: g,
                count: m.min(g[0] - first),
                shift: shift_of(b[0]),
            })
        });
        return;
    }
    let one = |w: usize| {
        let w = w as u64;
        body(&Group {
            group: [
                (w % g[0] as u64) as u32,
                (w / g[0] as u64 % g[1] as u64) as u32,
                (w / (g[0] as u64 * g[1] as u64)) as u32,
            ],
            size: b,
            groups: g,
            count: 1,
            shift: shift_of(b[0]),
        })
    };
    // One task runs here, on the stream's thread: handing it to the pool
    // would cost two thread wake-ups (a tree sum's last level, one
    // workgroup over the partials, is such a launch).
    if groups as usize <= min_len {
        (0..groups as usize).for_each(one);
        return;
    }
    (0..groups as usize)
        .into_par_iter()
        .with_min_len(min_len)
        .for_each(one);
}

/// A workgroup-shared array on the CPU: one per workgroup of a [`Group`]
/// (`part`), zeroed, used by one task only; out of bounds reads give zero
/// and writes do nothing.
#[derive(Debug)]
pub struct Shared<T: Copy + Default> {
    cells: Vec<std::cell::Cell<T>>,
    len: u32,
}

impl<T: Copy + Default> Shared<T> {
    pub fn new(len: u32, group: &Group) -> Self {
        Shared {
            cells: (0..len as usize * group.count as usize)
                .map(|_| std::cell::Cell::new(T::default()))
                .collect(),
            len,
        }
    }
    #[inline]
    fn cell(&self, part: u32, i: u32) -> Option<&std::cell::Cell<T>> {
        if i < self.len {
            self.cells
                .get(part as usize * self.len as usize + i as usize)
        } else {
            None
        }
    }
    #[inline]
    pub fn get(&self, part: u32, i: u32, fault: &Fault<'_>, site: u32) -> T {
        match self.cell(part, i) {
            Some(c) => c.get(),
            None => {
                fault.record(site);
                T::default()
            }
        }
    }
    #[inline]
    pub fn set(&self, part: u32, i: u32, v: T, fault: &Fault<'_>, site: u32) {
        match self.cell(part, i) {
            Some(c) => c.set(v),
            None => fault.record(site),
        }
    }
}

impl<T: AtomicInt> Shared<T> {
    /// As [`Rw::atomic`]: the workgroup's invocations run in turn on one
    /// task, so a plain read-modify-write is atomic.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn atomic(
        &self,
        part: u32,
        op: AtomicOp,
        i: u32,
        v: T,
        current: T,
        fault: &Fault<'_>,
        site: u32,
    ) -> T {
        let Some(c) = self.cell(part, i) else {
            fault.record(site);
            return T::default();
        };
        let old = c.get();
        c.set(T::apply(op, old, v, current));
        old
    }
}

/// Integer division as the language defines it: `x / 0` is `x`, and the
/// one signed overflow (`MIN / -1`) wraps to `MIN` (WGSL's rule, which the
/// CUDA and WGSL forms follow too).
pub trait IntDiv: Sized {
    fn div(self, rhs: Self) -> Self;
    /// `x % 0` is 0; `MIN % -1` is 0.
    fn rem(self, rhs: Self) -> Self;
}

macro_rules! int_div {
    ($($t:ty),*) => {$(
        impl IntDiv for $t {
            #[inline]
            fn div(self, rhs: Self) -> Self {
                if rhs == 0 { self } else { self.wrapping_div(rhs) }
            }
            #[inline]
            fn rem(self, rhs: Self) -> Self {
                if rhs == 0 { 0 } else { self.wrapping_rem(rhs) }
            }
        }
    )*};
}
int_div!(i32, u32, i64, u64);

/// `x.powi(n)` as every form computes it: square-and-multiply over `|n|`
/// from the low bit, then one reciprocal for a negative `n` (Rust's own
/// `powi` leaves the order of its products unspecified).
#[inline]
pub fn powi_f32(x: f32, n: i32) -> f32 {
    let (mut r, mut b, mut m) = (1.0f32, x, n.unsigned_abs());
    while m > 0 {
        if m & 1 == 1 {
            r *= b;
        }
        b *= b;
        m >>= 1;
    }
    if n < 0 { 1.0 / r } else { r }
}

/// As [`powi_f32`], in f64.
#[inline]
pub fn powi_f64(x: f64, n: i32) -> f64 {
    let (mut r, mut b, mut m) = (1.0f64, x, n.unsigned_abs());
    while m > 0 {
        if m & 1 == 1 {
            r *= b;
        }
        b *= b;
        m >>= 1;
    }
    if n < 0 { 1.0 / r } else { r }
}
