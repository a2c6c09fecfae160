//! `#[unigpu::kernel]` generic kernels: over element types listed in the
//! attribute, and over `const N: usize` sizes given at the use site, each
//! instance run on every backend and checked element by element against a
//! host reference written without the macro.

mod common;

use common::{Random, random_len, random_vec};
use unigpu::{ArrayAccess, Context, Element, Error, Grid, bf16, f16};

/// Generic over one listed type: `(x - y) * s` (a difference then a
/// product, which no backend may contract into one fma).
#[unigpu::kernel(T = [f32, f64, i32])]
fn diff_scale<T>(x: &[T], y: &mut [T], s: T) {
    let i = global_id().x;
    if i < y.len() {
        y[i] = (x[i] - y[i]) * s;
    }
}

/// Run `diff_scale::<T>` on random data; `host` is the element reference.
fn diff_scale_case<T>(ctx: &Context, s: T, host: impl Fn(T, T) -> T)
where
    T: Random + Copy + std::fmt::Debug,
    (T,): diff_scale::Instance,
    T: for<'x> unigpu::kernel::KernelArg<'x>,
{
    let k = diff_scale::kernel::<T>(ctx).unwrap();
    let n = random_len(1 << 15);
    let (hx, hy) = (random_vec::<T>(n), random_vec::<T>(n));
    let x = ctx.upload(&hx).unwrap();
    let mut y = ctx.upload(&hy).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&x, &mut y, s)).unwrap();
    let got = y.download().unwrap();
    for i in 0..n {
        let want = host(hx[i], hy[i]);
        assert!(
            same(&got[i], &want),
            "{} {i}: ({:?} - {:?}) * {s:?}: {:?} vs {want:?}",
            T::DTYPE,
            hx[i],
            hy[i],
            got[i]
        );
    }
}

/// Equal to the bit but for a NaN's payload: `Debug` prints the shortest
/// text that reads back as the same value (`-0.0` apart from `0.0`).
fn same<T: std::fmt::Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

on_every_backend!(a_kernel_generic_over_types_runs_each_instance, |ctx| {
    let s = random_vec::<f32>(1)[0];
    diff_scale_case::<f32>(ctx, s, |x, y| (x - y) * s);
    let s = random_vec::<f64>(1)[0] / 1e3;
    diff_scale_case::<f64>(ctx, s, |x, y| (x - y) * s);
    // Integers wrap.
    let s = random_vec::<i32>(1)[0];
    diff_scale_case::<i32>(ctx, s, |x, y| x.wrapping_sub(y).wrapping_mul(s));
});

/// Two type parameters: every listed pair is an instance.
#[unigpu::kernel(A = [f32, i32], B = [f64, u32], workgroup_size = 64)]
fn convert<A, B>(x: &[A], y: &mut [B]) {
    let i = global_id().x;
    if i < x.len() {
        y[i] = (x[i] as f32 * 0.5f32) as B;
    }
}

/// `convert::<A, B>`: `to` is the host's conversion of the f32 value.
fn convert_case<A, B>(ctx: &Context, to: impl Fn(f32) -> B, from: impl Fn(A) -> f32)
where
    A: Random + Copy + std::fmt::Debug + for<'x> unigpu::kernel::KernelArg<'x>,
    B: Element + Copy + std::fmt::Debug + for<'x> unigpu::kernel::KernelArg<'x>,
    (A, B): convert::Instance,
{
    let k = convert::kernel::<A, B>(ctx).unwrap();
    let n = random_len(1 << 14);
    let hx = random_vec::<A>(n);
    let x = ctx.upload(&hx).unwrap();
    let mut y = ctx.zeros::<B>(n).unwrap();
    k.launch(ctx, Grid::for_elems_with_block(n, 64), (&x, &mut y))
        .unwrap();
    let got = y.download().unwrap();
    for i in 0..n {
        let want = to(from(hx[i]) * 0.5);
        assert!(
            same(&got[i], &want),
            "{} -> {} {i}: {:?}: {:?} vs {want:?}",
            A::DTYPE,
            B::DTYPE,
            hx[i],
            got[i]
        );
    }
}

on_every_backend!(a_kernel_generic_over_two_types_runs_each_pair, |ctx| {
    // `as` as Rust's: f32 to u32 saturates (negatives give 0).
    convert_case::<f32, f64>(ctx, |v| v as f64, |a| a);
    convert_case::<f32, u32>(ctx, |v| v as u32, |a| a);
    convert_case::<i32, f64>(ctx, |v| v as f64, |a| a as f32);
    convert_case::<i32, u32>(ctx, |v| v as u32, |a| a as f32);
});

/// f16 and bf16 may be listed where the type parameter is only an array
/// element: its elements are read as f32 and written rounded to nearest
/// even (`T` as a value's type would be an f16 value, which is refused
/// for that instance).
#[unigpu::kernel(T = [f32, f16, bf16])]
fn halve<T>(x: &[T], y: &mut [T]) {
    let i = global_id().x;
    if i < x.len() {
        y[i] = x[i] * 0.5f32 - 1.0f32;
    }
}

fn halve_case<T>(ctx: &Context, to: impl Fn(f32) -> T, from: impl Fn(T) -> f32)
where
    T: Random + Copy + std::fmt::Debug + for<'x> unigpu::kernel::KernelArg<'x>,
    (T,): halve::Instance,
{
    let k = halve::kernel::<T>(ctx).unwrap();
    let n = random_len(1 << 14);
    let hx = random_vec::<T>(n);
    let x = ctx.upload(&hx).unwrap();
    let mut y = ctx.zeros::<T>(n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&x, &mut y)).unwrap();
    let got = y.download().unwrap();
    for i in 0..n {
        let want = to(from(hx[i]) * 0.5 - 1.0);
        assert!(
            same(&got[i], &want),
            "{} {i}: {:?}: {:?} vs {want:?}",
            T::DTYPE,
            hx[i],
            got[i]
        );
    }
}

on_every_backend!(a_type_list_may_hold_f16_and_bf16_arrays, |ctx| {
    halve_case::<f32>(ctx, |v| v, |a| a);
    halve_case::<f16>(ctx, f16::from_f32, f16::to_f32);
    halve_case::<bf16>(ctx, bf16::from_f32, bf16::to_f32);
});

/// A shared-memory tree sum of tiles of `N` elements (a power of two,
/// at least 64) by workgroups of 64 invocations: `N` sizes the shared
/// array, bounds the loops and scales the index.
#[unigpu::kernel(T = [f32, f64], workgroup_size = 64)]
fn tile_sum<T, const N: usize>(x: &[T], partial: &mut [T]) {
    let tile = shared::<T, N>();
    let l = local_id().x;
    let base = workgroup_id().x * N;
    let mut j = l;
    while j < N {
        let mut v: T = 0.0;
        if base + j < x.len() {
            v = x[base + j];
        }
        tile[j] = v;
        j += 64;
    }
    barrier();
    let mut stride = tile.len() / 2;
    while stride > 0 {
        let mut j = l;
        while j < stride {
            tile[j] = tile[j] + tile[j + stride];
            j += 64;
        }
        barrier();
        stride = stride / 2;
    }
    if l == 0 {
        partial[workgroup_id().x] = tile[0];
    }
}

/// The same tree, in the same order, on the host: bit for bit.
fn host_tile_sums<T: Copy + Default + std::ops::Add<Output = T>>(x: &[T], tile: usize) -> Vec<T> {
    x.chunks(tile)
        .map(|c| {
            let mut t: Vec<T> = (0..tile)
                .map(|l| c.get(l).copied().unwrap_or_default())
                .collect();
            let mut stride = tile / 2;
            while stride > 0 {
                for l in 0..stride {
                    t[l] = t[l] + t[l + stride];
                }
                stride /= 2;
            }
            t[0]
        })
        .collect()
}

fn tile_sum_case<T, const N: usize>(ctx: &Context)
where
    T: Random + Copy + Default + std::fmt::Debug + std::ops::Add<Output = T>,
    T: for<'x> unigpu::kernel::KernelArg<'x>,
    (T,): tile_sum::Instance,
{
    let k = tile_sum::kernel::<T, N>(ctx).unwrap();
    // Not a multiple of the tile: the last one pads with zeros.
    let n = random_len(1 << 16).max(2) | 1;
    let hx = random_vec::<T>(n);
    let groups = n.div_ceil(N);
    let x = ctx.upload(&hx).unwrap();
    let mut partial = ctx.zeros::<T>(groups).unwrap();
    k.launch(
        ctx,
        Grid::new((groups as u32, 1, 1), (64, 1, 1)),
        (&x, &mut partial),
    )
    .unwrap();
    let got = partial.download().unwrap();
    let want = host_tile_sums(&hx, N);
    for g in 0..groups {
        assert!(
            same(&got[g], &want[g]),
            "{} N = {N}, tile {g} of {groups}: {:?} vs {:?}",
            T::DTYPE,
            got[g],
            want[g]
        );
    }
}

on_every_backend!(a_kernel_generic_over_a_const_size_runs_each_size, |ctx| {
    tile_sum_case::<f32, 64>(ctx);
    tile_sum_case::<f32, 256>(ctx);
    tile_sum_case::<f64, 128>(ctx);
    tile_sum_case::<f64, 2048>(ctx);
});

on_every_backend!(const_sizes_are_checked_when_the_kernel_is_built, |ctx| {
    // 4096 f64s are 32768 bytes of shared memory: over 16384.
    let e = tile_sum::kernel::<f64, 4096>(ctx).unwrap_err();
    assert!(
        matches!(&e, Error::KernelArgs { message, .. } if message.contains("32768 bytes")),
        "{e}"
    );
    let e = tile_sum::kernel::<f32, 0>(ctx).unwrap_err();
    assert!(
        matches!(&e, Error::KernelArgs { message, .. } if message.contains("length 0")),
        "{e}"
    );
});

/// With `which == 0`, the last invocation reads one element past the end
/// of `a`; otherwise invocations 32 to 63 of a workgroup write past the
/// end of the shared `tile` of `N` elements (a length known only when
/// the instance is built).
const GENERIC_READ_LINE: u32 = line!() + 8;
const GENERIC_SHARED_LINE: u32 = line!() + 9;
#[unigpu::kernel(T = [f32, i32], workgroup_size = 64)]
fn past_end<T, const N: usize>(a: &[T], out: &mut [T], which: u32) {
    let tile = shared::<T, N>();
    let i = global_id().x;
    if i < out.len() {
        if which == 0u32 {
            out[i] = a[i + 1];
        } else {
            tile[local_id().x + N - 32] = a[i];
        }
    }
}

/// `r` is `past_end`'s out-of-bounds report of `array` at `line` of this
/// file.
#[track_caller]
fn assert_oob(r: unigpu::Result<()>, array: &str, line: u32, access: ArrayAccess) {
    match r {
        Err(Error::KernelOutOfBounds {
            kernel,
            array: a,
            file,
            line: l,
            access: x,
        }) => assert_eq!(
            (kernel.as_str(), a.as_str(), file.as_str(), l, x),
            ("past_end", array, file!(), line, access)
        ),
        other => panic!("expected past_end's out-of-bounds report, got {other:?}"),
    }
}

fn past_end_case<T, const N: usize>(ctx: &Context)
where
    T: Random + Copy + Default + std::fmt::Debug + for<'x> unigpu::kernel::KernelArg<'x>,
    (T,): past_end::Instance,
{
    let k = past_end::kernel::<T, N>(ctx).unwrap();
    let n = random_len(5000).max(64);
    let ha = random_vec::<T>(n);
    let a = ctx.upload(&ha).unwrap();
    let mut out = ctx.zeros::<T>(n).unwrap();
    let grid = Grid::for_elems_with_block(n, 64);
    k.launch(ctx, grid, (&a, &mut out, 0)).unwrap();
    assert_oob(
        ctx.default_stream().sync(),
        "a",
        GENERIC_READ_LINE,
        ArrayAccess::Read,
    );
    // Reported once; the read gave 0 and every other element is right.
    ctx.sync().unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        let want = if i + 1 < n { ha[i + 1] } else { T::default() };
        assert!(
            same(&got[i], &want),
            "{} N = {N}, element {i} of {n}",
            T::DTYPE
        );
    }
    // The shared array's bound is the instance's N.
    k.launch(ctx, grid, (&a, &mut out, 1)).unwrap();
    let msg = ctx.sync().unwrap_err().to_string();
    let want = format!(
        "kernel `past_end` indexed `tile` out of bounds at {}:{GENERIC_SHARED_LINE} (write); the write was skipped",
        file!()
    );
    assert_eq!(msg, want, "{} N = {N}", T::DTYPE);
    ctx.sync().unwrap();
}

on_every_backend!(a_generic_instance_reports_out_of_bounds_accesses, |ctx| {
    past_end_case::<f32, 64>(ctx);
    past_end_case::<i32, 128>(ctx);
    // Another size of an instance already built: its own kernel, the same
    // sites.
    past_end_case::<f32, 256>(ctx);
});

/// Each instance's sources: the CUDA has its `#define`s, and every
/// instance's WGSL passes naga's validator (the vulkan backend's own
/// check, run here without an adapter).
#[test]
fn each_instance_has_its_own_sources() {
    let cuda = tile_sum::cuda::<f32, 64>();
    assert!(cuda.starts_with("#define c_N 64u\n"), "{cuda}");
    assert!(cuda.contains("float s_tile"), "{cuda}");
    assert!(tile_sum::cuda::<f64, 128>().contains("double s_tile"));
    assert_ne!(
        <(f32,) as diff_scale::Instance>::CUDA,
        <(f64,) as diff_scale::Instance>::CUDA
    );
}

#[cfg(feature = "vulkan")]
#[test]
fn every_instance_wgsl_validates() {
    let wide = naga::valid::Capabilities::FLOAT64 | naga::valid::Capabilities::SHADER_INT64;
    let sources = [
        ("tile_sum<f32, 64>", tile_sum::wgsl::<f32, 64>(false)),
        ("tile_sum<f32, 256>", tile_sum::wgsl::<f32, 256>(false)),
        ("tile_sum<f64, 128>", tile_sum::wgsl::<f64, 128>(false)),
        ("tile_sum<f64, 2048>", tile_sum::wgsl::<f64, 2048>(false)),
        ("diff_scale<f32>", diff_scale::wgsl::<f32>(false)),
        ("diff_scale<f64>", diff_scale::wgsl::<f64>(false)),
        ("diff_scale<i32>", diff_scale::wgsl::<i32>(false)),
        ("convert<f32, f64>", convert::wgsl::<f32, f64>(false)),
        ("convert<f32, u32>", convert::wgsl::<f32, u32>(false)),
        ("convert<i32, f64>", convert::wgsl::<i32, f64>(false)),
        ("convert<i32, u32>", convert::wgsl::<i32, u32>(false)),
        ("halve<f32>", halve::wgsl::<f32>(false)),
        ("halve<f16>", halve::wgsl::<f16>(false)),
        ("halve<bf16>", halve::wgsl::<bf16>(false)),
        ("past_end<f32, 64>", past_end::wgsl::<f32, 64>(false)),
        ("past_end<i32, 128>", past_end::wgsl::<i32, 128>(false)),
    ];
    for (name, src) in sources {
        assert!(!src.is_empty(), "{name}");
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{name}: {}\n{src}", e.emit_to_string(&src)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), wide)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name}: {}\n{src}", e.emit_to_string(&src)));
    }
}

/// A grid-stride loop generic over types: the CPU form's grid-stride fast
/// path (docs/kernels.md, "Speed") in each instance, checked against the
/// host in grids of one workgroup, a few, and more invocations than
/// elements.
#[unigpu::kernel(T = [f32, i32])]
fn gs_twice<T>(x: &[T], y: &mut [T]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < y.len() {
        y[i] = x[i] + x[i];
        i += stride;
    }
}

fn gs_twice_case<T>(ctx: &Context, host: impl Fn(T) -> T)
where
    T: Random + Copy + std::fmt::Debug,
    (T,): gs_twice::Instance,
    T: for<'x> unigpu::kernel::KernelArg<'x>,
{
    let k = gs_twice::kernel::<T>(ctx).unwrap();
    let n = random_len(40_000);
    for groups in [1, 3, (n / 256 + 2) as u32] {
        let hx = random_vec::<T>(n);
        let x = ctx.upload(&hx).unwrap();
        let mut y = ctx.upload(&random_vec::<T>(n)).unwrap();
        k.launch(ctx, Grid::new((groups, 1, 1), (256, 1, 1)), (&x, &mut y))
            .unwrap();
        let got = y.download().unwrap();
        for i in 0..n {
            let want = host(hx[i]);
            assert!(
                same(&got[i], &want),
                "{} {i} of {n}, {groups} workgroups",
                T::DTYPE
            );
        }
    }
}

on_every_backend!(a_generic_grid_stride_kernel_runs_each_instance, |ctx| {
    gs_twice_case::<f32>(ctx, |x| x + x);
    gs_twice_case::<i32>(ctx, |x| x.wrapping_add(x));
});
