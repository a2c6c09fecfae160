//! Built-in ops on every backend, against host references computed in f64
//! (or exactly as the device computes, where rounding is deterministic).
//!
//! Tolerances come from how each op is computed (`Float::Acc` is f32 for
//! f32/f16/bf16 and f64 for f64): an element-wise op is one rounding of
//! the `T::Acc` result to `T`; a reduction of n terms errs by at most
//! c(n)·ε_acc·Σ|term| before its one final rounding to `T`; a matmul entry
//! by (k+2)·ε_acc·Σ|a·b|. Exact cases (small integers) are compared bit
//! for bit. The bounds are themselves tested: the `*_bound_rejects_*`
//! tests feed the checkers known-wrong answers.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

use common::{Random, assert_same, random_len, random_vec, sizes};
use rand::Rng;
use unigpu::{Backend, Context, Element, Error, Float, GpuArray, bf16, f16};

/// Precision constants of an element type and of the type it is computed in.
trait Tol: Float + Random {
    /// Machine epsilon of `T`: 2^-(mantissa bits).
    const EPS: f64;
    /// Machine epsilon of `T::Acc`, the type the ops compute in.
    const ACC_EPS: f64;
    /// Half the smallest subnormal of `T`: the absolute error of one
    /// rounding of a result near zero.
    const TINY: f64;
    fn f64(self) -> f64 {
        self.to_acc().into()
    }
    fn from_f64(v: f64) -> Self {
        Self::from_acc(num_traits::cast(v).unwrap())
    }
    /// The relative error of rounding a `T::Acc` result to `T`: half an
    /// ulp, or nothing where `T` is `T::Acc`.
    fn rounding() -> f64 {
        if Self::EPS > Self::ACC_EPS {
            Self::EPS / 2.0
        } else {
            0.0
        }
    }
}
impl Tol for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    const ACC_EPS: f64 = f32::EPSILON as f64;
    const TINY: f64 = 7.006_492_321_624_085e-46; // 2^-150
}
impl Tol for f64 {
    const EPS: f64 = f64::EPSILON;
    const ACC_EPS: f64 = f64::EPSILON;
    const TINY: f64 = 5e-324;
}
impl Tol for f16 {
    const EPS: f64 = 9.765_625e-4; // 2^-10
    const ACC_EPS: f64 = f32::EPSILON as f64;
    const TINY: f64 = 2.980_232_238_769_531_2e-8; // 2^-25
}
impl Tol for bf16 {
    const EPS: f64 = 7.812_5e-3; // 2^-7
    const ACC_EPS: f64 = f32::EPSILON as f64;
    const TINY: f64 = 4.591_774_807_899_561e-41; // 2^-134
}

/// Values in [-4, 4]: products and sums stay inside f16's range.
fn small<T: Tol>(n: usize) -> Vec<T> {
    random_vec::<f64>(n)
        .iter()
        .map(|v| T::from_f64(v / 2.5e5))
        .collect()
}

/// Integers in `lo..=hi` (|v| ≤ 256 is exact in every type, bf16 too);
/// sums and products of them are exact in f32 while they stay below 2^24.
fn ints<T: Tol>(n: usize, lo: i32, hi: i32) -> Vec<T> {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| T::from_f64(rng.random_range(lo..=hi) as f64))
        .collect()
}

/// Σ terms, correctly rounded to f64 but for a few ulps (Neumaier's
/// compensated sum): a reference whose own error is far below the bounds.
fn accurate_sum(terms: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for t in terms {
        let u = s + t;
        c += if s.abs() >= t.abs() {
            (s - u) + t
        } else {
            (t - u) + s
        };
        s = u;
    }
    s + c
}

/// Σ x·y as `accurate_sum` does it, each product split exactly in two (an
/// f64 product of f64 inputs is rounded; its error is `fma(x, y, -p)`).
fn accurate_dot(x: &[f64], y: &[f64]) -> f64 {
    accurate_sum(x.iter().zip(y).flat_map(|(&a, &b)| {
        let p = a * b;
        [p, a.mul_add(b, -p)]
    }))
}

/// Compares against `expected` element by element: |expected − actual| ≤
/// rel·|expected| + `T::TINY`. NaN expected means NaN wanted.
#[track_caller]
fn assert_close<T: Tol>(expected: &[f64], actual: &[T], rel: f64) {
    assert_eq!(expected.len(), actual.len());
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        let a = a.f64();
        let ok = if e.is_nan() {
            a.is_nan()
        } else if e.is_infinite() {
            a == *e
        } else {
            (e - a).abs() <= rel * e.abs() + T::TINY
        };
        assert!(
            ok,
            "element {i}: expected {e}, got {a} ({}, relative tolerance {rel})",
            std::any::type_name::<T>()
        );
    }
}

macro_rules! for_float_types {
    ($f:ident, $ctx:expr) => {{
        $f::<f32>($ctx);
        $f::<f64>($ctx);
        $f::<f16>($ctx);
        $f::<bf16>($ctx);
    }};
}

/// Whether `f` panics (the checkers below report a failed bound by
/// panicking, like `assert!`).
fn panics(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

fn fill_every_type<T: Random>(ctx: &Context) {
    for n in sizes() {
        let mut x = ctx.upload(&random_vec::<T>(n)).unwrap();
        let v = random_vec::<T>(1)[0];
        ctx.ops().fill(&mut x, v).unwrap();
        assert_same(&vec![v; n], &x.download().unwrap());
    }
}
on_every_backend!(fill, |ctx| for_every_type!(fill_every_type, ctx));

fn elementwise<T: Tol>(ctx: &Context) {
    for n in sizes() {
        let (ha, hb) = (small::<T>(n), small::<T>(n));
        let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
        let mut out = ctx.alloc::<T>(n).unwrap();
        let ops = ctx.ops();
        // One rounding of the operation done in T::Acc: exact on every backend.
        let exact = |f: fn(T::Acc, T::Acc) -> T::Acc| -> Vec<T> {
            ha.iter()
                .zip(&hb)
                .map(|(x, y)| T::from_acc(f(x.to_acc(), y.to_acc())))
                .collect()
        };
        ops.add(&a, &b, &mut out).unwrap();
        assert_same(&exact(|x, y| x + y), &out.download().unwrap());
        ops.sub(&a, &b, &mut out).unwrap();
        assert_same(&exact(|x, y| x - y), &out.download().unwrap());
        ops.mul(&a, &b, &mut out).unwrap();
        assert_same(&exact(|x, y| x * y), &out.download().unwrap());
        ops.copy(&a, &mut out).unwrap();
        assert_same(&ha, &out.download().unwrap());

        let alpha = small::<T>(1)[0];
        let mut y = ctx.upload(&hb).unwrap();
        ops.axpy(alpha, &a, &mut y).unwrap();
        // One rounding; two (each exact IEEE) only where the device says
        // its axpy cannot round once (vulkan's f64 on lavapipe).
        let once = common::axpy_rounds_once(ctx, T::DTYPE);
        let want: Vec<T> = ha
            .iter()
            .zip(&hb)
            .map(|(x, y)| {
                let (a, x, y) = (alpha.to_acc(), x.to_acc(), y.to_acc());
                T::from_acc(if once {
                    num_traits::Float::mul_add(a, x, y)
                } else {
                    a * x + y
                })
            })
            .collect();
        assert_same(&want, &y.download().unwrap());

        let mut s = ctx.upload(&ha).unwrap();
        ops.scale(alpha, &mut s).unwrap();
        let want: Vec<T> = ha
            .iter()
            .map(|x| T::from_acc(alpha.to_acc() * x.to_acc()))
            .collect();
        assert_same(&want, &s.download().unwrap());
    }
}
on_every_backend!(add_sub_mul_copy_axpy_scale, |ctx| for_float_types!(
    elementwise,
    ctx
));

/// The relative error of a transcendental activation: the device's
/// `expf`/`tanhf` (CUDA: ≤ 2 ulps) and the host's libm each miss the exact
/// value by a few ulps of `T::Acc` (sigmoid adds two roundings of its
/// own); then the result is rounded to `T` once.
fn transcendental_tol<T: Tol>() -> f64 {
    let acc = 6.0 * T::ACC_EPS;
    acc + T::rounding() * (1.0 + acc)
}

fn activations<T: Tol>(ctx: &Context) {
    for n in sizes() {
        // Inputs around zero, where the activations are interesting.
        let hx: Vec<T> = small::<T>(n);
        let x = ctx.upload(&hx).unwrap();
        let mut out = ctx.alloc::<T>(n).unwrap();
        let xs: Vec<f64> = hx.iter().map(|v| v.f64()).collect();
        ctx.ops().relu(&x, &mut out).unwrap();
        assert_close(
            &xs.iter().map(|v| v.max(0.0)).collect::<Vec<_>>(),
            &out.download().unwrap(),
            0.0,
        );
        ctx.ops().sigmoid(&x, &mut out).unwrap();
        assert_close(
            &xs.iter()
                .map(|v| 1.0 / (1.0 + (-v).exp()))
                .collect::<Vec<_>>(),
            &out.download().unwrap(),
            transcendental_tol::<T>(),
        );
        ctx.ops().tanh(&x, &mut out).unwrap();
        assert_close(
            &xs.iter().map(|v| v.tanh()).collect::<Vec<_>>(),
            &out.download().unwrap(),
            transcendental_tol::<T>(),
        );
    }
}
on_every_backend!(relu_sigmoid_tanh, |ctx| for_float_types!(activations, ctx));

/// c(n) of the reduction bound, counted in ε_acc: the roundings any one
/// term can go through on its way into the result, with room to spare.
/// CUDA (ops/cuda.rs, cuda_src.rs): at most 1,024 blocks of 256 threads;
/// each thread adds its grid-stride share serially (⌈n/threads⌉ adds), a
/// 256-wide tree per block (8 levels), then one block folds the ≤ 1,024
/// partials (≤ 4 serial adds, 8 levels), and dot rounds each product once:
/// ⌈n/threads⌉ + 21 in all. Torch's reduction (a few accumulators per
/// thread, then trees across warps, blocks and a global pass) keeps fewer
/// values per thread than that and its trees within 2·log2(n); 32 more
/// are spare. Each rounding errs by at most ε_acc/2, so counting ε_acc a
/// rounding doubles the margin. `reduction_tol` adds what depends on the
/// backend.
fn reduction_depth(n: usize) -> f64 {
    let threads = n.div_ceil(256).clamp(1, 1024) * 256;
    let serial = n.div_ceil(threads);
    let log2 = (usize::BITS - n.leading_zeros()) as usize; // ⌈log2(n + 1)⌉
    (serial + 2 * log2 + 32) as f64
}

/// The bound on |result − exact| of a reduction of `n` terms whose
/// magnitudes add up to `abs_sum`: c(n)·ε_acc·Σ|x| for the accumulation,
/// then one rounding of the result to `T` (counted as a whole ε_T: the
/// CPU rounds f64 → `T::Acc` → `T`).
fn reduction_tol<T: Tol>(backend: Backend, n: usize, expected: f64, abs_sum: f64) -> f64 {
    let mut acc = reduction_depth(n) * T::ACC_EPS;
    match backend {
        // The CPU adds 16-term lanes in `T::Acc` (inside reduction_depth),
        // then the block sums serially in f64, then rounds to `T::Acc`.
        Backend::Cpu => acc += n as f64 * f64::EPSILON,
        // torch's dot is cuBLAS's, whose grid is not documented: allow
        // each thread a serial share as if it had only 32,768 threads.
        Backend::Torch => acc += n.div_ceil(32 * 1024) as f64 * T::ACC_EPS,
        // The vulkan reductions are shaped like CUDA's (at most 1,024
        // workgroups of 256, a 256-wide tree, one more pass over the
        // partials; shaders/reduce.rs).
        Backend::Cuda | Backend::Vulkan => {}
    }
    acc * abs_sum * (1.0 + T::EPS) + T::EPS * expected.abs() + T::TINY
}

#[track_caller]
fn check_reduction<T: Tol>(
    what: &str,
    backend: Backend,
    n: usize,
    (expected, abs_sum): (f64, f64),
    got: T,
) {
    let got = got.f64();
    let tol = reduction_tol::<T>(backend, n, expected, abs_sum);
    assert!(
        (expected - got).abs() <= tol,
        "{what} of {n} ({}, {backend:?}): expected {expected}, got {got}, tolerance {tol}",
        std::any::type_name::<T>()
    );
}

/// (Σx, Σ|x|), accurately.
fn sum_ref<T: Tol>(x: &[T]) -> (f64, f64) {
    let xs: Vec<f64> = x.iter().map(|v| v.f64()).collect();
    (
        accurate_sum(xs.iter().copied()),
        accurate_sum(xs.iter().map(|v| v.abs())),
    )
}

/// (Σx·y, Σ|x·y|), accurately.
fn dot_ref<T: Tol>(x: &[T], y: &[T]) -> (f64, f64) {
    let xs: Vec<f64> = x.iter().map(|v| v.f64()).collect();
    let ys: Vec<f64> = y.iter().map(|v| v.f64()).collect();
    let abs: Vec<f64> = xs.iter().map(|v| v.abs()).collect();
    let abs_y: Vec<f64> = ys.iter().map(|v| v.abs()).collect();
    (accurate_dot(&xs, &ys), accurate_dot(&abs, &abs_y))
}

fn reductions<T: Tol>(ctx: &Context) {
    let backend = ctx.backend();
    for n in sizes() {
        let (hx, hy) = (small::<T>(n), small::<T>(n));
        let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
        let sum = ctx.ops().sum(&x).unwrap();
        check_reduction("sum", backend, n, sum_ref(&hx), sum);
        let dot = ctx.ops().dot(&x, &y).unwrap();
        check_reduction("dot", backend, n, dot_ref(&hx, &hy), dot);
        if n > 0 {
            let max = hx.iter().map(|v| v.f64()).fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(ctx.ops().max(&x).unwrap().f64(), max);
        }
    }
}
on_every_backend!(sum_dot_max, |ctx| for_float_types!(reductions, ctx));

/// Sums and dots of integers in [-8, 8] over up to 2^16 elements: every
/// partial sum and product is an integer below 2^24, exact in f32 in any
/// order, so each backend must return the exact value rounded once to `T`.
fn exact_reductions<T: Tol>(ctx: &Context) {
    let mut lens = sizes();
    lens.push(1 << 16);
    for n in lens {
        let (hx, hy) = (ints::<T>(n, -8, 8), ints::<T>(n, -8, 8));
        let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
        let want_sum = T::from_f64(sum_ref(&hx).0);
        let want_dot = T::from_f64(dot_ref(&hx, &hy).0);
        assert_eq!(
            ctx.ops().sum(&x).unwrap(),
            want_sum,
            "sum of {n} integers ({})",
            std::any::type_name::<T>()
        );
        assert_eq!(
            ctx.ops().dot(&x, &y).unwrap(),
            want_dot,
            "dot of {n} integers ({})",
            std::any::type_name::<T>()
        );
    }
}
on_every_backend!(sum_and_dot_of_small_integers_are_exact, |ctx| {
    for_float_types!(exact_reductions, ctx)
});

/// Ten million non-negative inputs: Σ|x| = Σx, so the bound is relative to
/// the result and a lost block of 1,024 elements (≈ 1e-4 of it) is far
/// outside it (c(10⁷)·ε_f32 ≈ 1.4e-5).
fn ten_million() -> (Vec<f32>, Vec<f32>) {
    let n = common::big(10_000_000);
    let abs = |v: Vec<f32>| v.into_iter().map(f32::abs).collect::<Vec<_>>();
    (abs(random_vec::<f32>(n)), abs(random_vec::<f32>(n)))
}

on_every_backend!(reductions_over_ten_million_elements, |ctx| {
    let (hx, hy) = ten_million();
    let n = hx.len();
    let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
    let backend = ctx.backend();
    let sum = ctx.ops().sum(&x).unwrap();
    check_reduction("sum", backend, n, sum_ref(&hx), sum);
    let dot = ctx.ops().dot(&x, &y).unwrap();
    check_reduction("dot", backend, n, dot_ref(&hx, &hy), dot);
    // Signed data for max, so its sign handling is exercised too.
    let hs = random_vec::<f32>(n);
    let s = ctx.upload(&hs).unwrap();
    let max = hs.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    assert_eq!(ctx.ops().max(&s).unwrap(), max);
});

/// 2^27 bf16 integers in 1..=4, more than 512 per GPU thread (the CUDA
/// sum runs 1,024 blocks of 256 threads). A running sum kept in bf16 stops
/// growing exactly once it passes 256 (its ulp reaches 2, then 4, ...), so
/// a sum accumulated in bf16 instead of f32 comes out far below the bound;
/// the smaller sizes above leave each thread too few terms to show it.
/// f16 has no such test: a sum this long overflows its range.
fn long_bf16_ints() -> (Vec<bf16>, f64) {
    let n = common::big(1 << 27);
    let mut rng = rand::rng();
    let mut total = 0u64;
    let values = [1.0f32, 2.0, 3.0, 4.0].map(bf16::from_f32);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        // 32 values of two random bits each per draw: fast enough for a
        // debug build.
        let mut bits: u64 = rng.random();
        for _ in 0..32 {
            let v = (bits & 3) as usize;
            bits >>= 2;
            total += v as u64 + 1;
            out.push(values[v]);
        }
    }
    (out, total as f64)
}

on_every_backend!(a_long_bf16_sum_accumulates_in_f32, |ctx| {
    let (hx, total) = long_bf16_ints();
    let n = hx.len();
    let x = ctx.upload(&hx).unwrap();
    drop(hx);
    // Every term is positive, so Σ|x| = Σx = total.
    let sum = ctx.ops().sum(&x).unwrap();
    check_reduction("sum", ctx.backend(), n, (total, total), sum);
});

#[test]
fn reduction_bound_rejects_wrong_answers() {
    fn zero_is_rejected<T: Tol>() {
        for n in [255, 257, 4099] {
            // Retry the (very unlikely) draws whose true sum is near zero.
            let (x, y) = loop {
                let (x, y) = (small::<T>(n), small::<T>(n));
                if sum_ref(&x).0.abs() > 1.0 && dot_ref(&x, &y).0.abs() > 1.0 {
                    break (x, y);
                }
            };
            for backend in Backend::ALL {
                let (s, d) = (sum_ref(&x), dot_ref(&x, &y));
                // The right answers pass...
                check_reduction("sum", backend, n, s, T::from_f64(s.0));
                check_reduction("dot", backend, n, d, T::from_f64(d.0));
                // ...and zero does not.
                for (what, r) in [("sum", s), ("dot", d)] {
                    assert!(
                        panics(|| check_reduction(what, backend, n, r, T::from_f64(0.0))),
                        "a {what} of 0 passed for {n} {} on {backend:?}",
                        std::any::type_name::<T>()
                    );
                }
            }
        }
    }
    zero_is_rejected::<f32>();
    zero_is_rejected::<f64>();
    zero_is_rejected::<f16>();
    zero_is_rejected::<bf16>();

    // A ten-million-element sum or dot that lost one block of 1,024.
    let (x, y) = ten_million();
    let n = x.len();
    let block = rand::rng().random_range(0..n / 1024) * 1024;
    let (s, d) = (sum_ref(&x), dot_ref(&x, &y));
    let (lost_s, lost_d) = (
        sum_ref(&x[block..block + 1024]).0,
        dot_ref(&x[block..block + 1024], &y[block..block + 1024]).0,
    );
    for backend in Backend::ALL {
        check_reduction("sum", backend, n, s, s.0 as f32);
        check_reduction("dot", backend, n, d, d.0 as f32);
        assert!(
            panics(|| check_reduction("sum", backend, n, s, (s.0 - lost_s) as f32)),
            "a 1e7 sum without the block at {block} passed on {backend:?}"
        );
        assert!(
            panics(|| check_reduction("dot", backend, n, d, (d.0 - lost_d) as f32)),
            "a 1e7 dot without the block at {block} passed on {backend:?}"
        );
    }
}

/// The bound on one matmul entry: cuBLAS, torch and the CPU's f32/f64 gemm
/// accumulate the k products in `T::Acc` in some order (k roundings, one
/// more for the products of f32/f64; tensor cores may truncate instead of
/// rounding to nearest, so each counts as a whole ε_acc), then round to `T`
/// once. On a GPU, f16/bf16 gemms may also split k and add the partial
/// results in `T`: torch allows these reduced-precision reductions by
/// default, and so does cuBLAS unless the handle's math mode forbids them
/// (ours does not set it). A split into s parts errs by < (s − ½)·ε_T·Σ|a·b|;
/// 4·ε_T covers up to 4 parts, plenty for k ≤ 128. Only those two split:
/// vulkan's shader keeps each entry's whole sum in f32, and giving it the
/// slack would pass a matmul that accumulates in the element type.
fn matmul_tol<T: Tol>(split_k: bool, k: usize, expected: f64, abs_sum: f64) -> f64 {
    let mut tol = (k as f64 + 2.0) * T::ACC_EPS * abs_sum * (1.0 + T::EPS)
        + T::EPS * expected.abs()
        + T::TINY;
    if split_k && T::EPS > T::ACC_EPS {
        tol += 4.0 * T::EPS * abs_sum;
    }
    tol
}

#[track_caller]
fn check_matmul<T: Tol>(
    split_k: bool,
    a: &[T],
    b: &[T],
    c: &[T],
    (m, k, n): (usize, usize, usize),
) {
    let a: Vec<f64> = a.iter().map(|v| v.f64()).collect();
    let a_abs: Vec<f64> = a.iter().map(|v| v.abs()).collect();
    // b's columns, each contiguous.
    let bt: Vec<f64> = (0..n * k).map(|e| b[(e % k) * n + e / k].f64()).collect();
    let bt_abs: Vec<f64> = bt.iter().map(|v| v.abs()).collect();
    for i in 0..m {
        let (row, row_abs) = (&a[i * k..(i + 1) * k], &a_abs[i * k..(i + 1) * k]);
        for j in 0..n {
            let (col, col_abs) = (&bt[j * k..(j + 1) * k], &bt_abs[j * k..(j + 1) * k]);
            let (want, abs) = (accurate_dot(row, col), accurate_dot(row_abs, col_abs));
            let got = c[i * n + j].f64();
            let tol = matmul_tol::<T>(split_k, k, want, abs);
            assert!(
                (want - got).abs() <= tol,
                "matmul {m}x{k}x{n} [{i},{j}] ({}): expected {want}, got {got}, tolerance {tol}",
                std::any::type_name::<T>()
            );
        }
    }
}

fn matmul<T: Tol>(ctx: &Context) {
    // cuBLAS and torch may split k (see matmul_tol); the CPU and vulkan
    // backends never do.
    let split_k = matches!(ctx.backend(), Backend::Cuda | Backend::Torch);
    for (m, k, n) in [
        (1, 1, 1),
        (33, 65, 17),
        (128, 96, 64),
        // k and n multiples of four (vulkan's vec4 matmul), m and n not of
        // its 128-wide tiles. (The CPU's loops are the same at 128×96×64,
        // and a sanitizer makes this size take minutes.)
        if cfg!(unigpu_sanitizer) {
            (1, 1, 1)
        } else {
            (200, 132, 260)
        },
        (random_len(50), random_len(50), random_len(50)),
        (3, 0, 4),
    ] {
        let (ha, hb) = (small::<T>(m * k), small::<T>(k * n));
        let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
        let mut c = ctx.upload(&random_vec::<T>(m * n)).unwrap();
        ctx.ops().matmul(&a, &b, &mut c, (m, k, n)).unwrap();
        check_matmul(split_k, &ha, &hb, &c.download().unwrap(), (m, k, n));
    }
}
on_every_backend!(matmul_against_a_host_reference, |ctx| for_float_types!(
    matmul, ctx
));

#[test]
fn matmul_bound_rejects_an_all_zero_result() {
    fn check<T: Tol>() {
        let (m, k, n) = (33, 65, 17);
        let (a, b) = (small::<T>(m * k), small::<T>(k * n));
        // The product as the CPU backend computes it passes...
        let want: Vec<T> = (0..m * n)
            .map(|e| {
                let (i, j) = (e / n, e % n);
                let acc = (0..k).fold(0.0f64, |s, p| s + a[i * k + p].f64() * b[p * n + j].f64());
                T::from_f64(acc)
            })
            .collect();
        for split_k in [false, true] {
            check_matmul(split_k, &a, &b, &want, (m, k, n));
            // ...an all-zero one does not, even with the GPU's split-k slack.
            let zero = vec![T::from_f64(0.0); m * n];
            assert!(
                panics(|| check_matmul(split_k, &a, &b, &zero, (m, k, n))),
                "an all-zero {m}x{k}x{n} matmul passed ({}, split_k: {split_k})",
                std::any::type_name::<T>()
            );
        }
    }
    check::<f32>();
    check::<f64>();
    check::<f16>();
    check::<bf16>();
}

on_every_backend!(op_errors_are_typed, |ctx| {
    let n = random_len(100);
    let a = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let b = ctx.upload(&random_vec::<f32>(n + 1)).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    let mut long = ctx.zeros::<f32>(n + 1).unwrap();
    let size = |r: Result<(), Error>| matches!(r, Err(Error::SizeMismatch { .. }));
    let ops = ctx.ops();
    assert!(size(ops.add(&a, &b, &mut out)));
    assert!(matches!(ops.dot(&a, &b), Err(Error::SizeMismatch { .. })));
    assert!(size(ops.axpy(2.0, &a, &mut long)));
    assert!(size(ops.axpy(2.0, &b, &mut out)));
    assert!(size(ops.relu(&a, &mut long)));
    assert!(size(ops.sigmoid(&b, &mut out)));
    assert!(size(ops.tanh(&a, &mut long)));
    let empty = ctx.zeros::<f64>(0).unwrap();
    assert!(matches!(ops.max(&empty), Err(Error::SizeMismatch { .. })));
    assert_eq!(ops.sum(&empty).unwrap(), 0.0);
    // 5 elements can never be a 2×3 matrix (a random length could be);
    // each operand in turn is the wrong one.
    let five = ctx.zeros::<f32>(5).unwrap();
    let (a6, b6) = (ctx.zeros::<f32>(6).unwrap(), ctx.zeros::<f32>(6).unwrap());
    let mut c4 = ctx.zeros::<f32>(4).unwrap();
    let mut c5 = ctx.zeros::<f32>(5).unwrap();
    assert!(size(ops.matmul(&five, &b6, &mut c4, (2, 3, 2))));
    assert!(size(ops.matmul(&a6, &five, &mut c4, (2, 3, 2))));
    assert!(size(ops.matmul(&a6, &b6, &mut c5, (2, 3, 2))));
    // Nothing was written by the refused calls.
    assert_same(&vec![0.0f32; n], &out.download().unwrap());
    assert_same(&vec![0.0f32; n + 1], &long.download().unwrap());
    assert_same(&[0.0f32; 4], &c4.download().unwrap());
    assert_same(&[0.0f32; 5], &c5.download().unwrap());
});

/// Issue 25: the sum of an empty array was -0.0 (Rust's float `sum()`
/// starts from -0.0) where the header says 0. Sum and dot of empty arrays
/// are +0.0, sign bit clear, for every float type; a Vulkan adapter may
/// refuse a type it has no shader support for, as docs/vulkan.md says.
fn empty_sum_is_positive_zero<T: Float + Into<f64>>(ctx: &Context) {
    let ops = ctx.ops();
    let empty = ctx.zeros::<T>(0).unwrap();
    let other = ctx.zeros::<T>(0).unwrap();
    for (what, r) in [("sum", ops.sum(&empty)), ("dot", ops.dot(&empty, &other))] {
        match r {
            Ok(v) => {
                let v: f64 = v.into();
                assert_eq!(
                    v.to_bits(),
                    0.0f64.to_bits(),
                    "{what} of an empty {}: {v:?}",
                    T::DTYPE
                );
            }
            Err(Error::Unsupported { .. }) if ctx.backend() == Backend::Vulkan => {}
            Err(e) => panic!("{what} of an empty {}: {e}", T::DTYPE),
        }
    }
}

on_every_backend!(empty_sum_and_dot_are_positive_zero, |ctx| {
    empty_sum_is_positive_zero::<f32>(ctx);
    empty_sum_is_positive_zero::<f64>(ctx);
    empty_sum_is_positive_zero::<f16>(ctx);
    empty_sum_is_positive_zero::<bf16>(ctx);
});

// Every op with operands from a second context. Two CPU contexts are one
// device (`Context::same_device`), so on the CPU mixing them is allowed
// and must work; a GPU context's ops refuse CPU arrays, and the CPU
// context's ops refuse GPU arrays and streams, with `ContextMismatch`.
on_every_backend!(ops_refuse_operands_of_another_context, |ctx| {
    let other = common::cpu_ctx();
    let n = random_len(1000);
    let (hx, hy) = (ints::<f32>(n, -8, 8), ints::<f32>(n, -8, 8));
    let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
    let ox = other.upload(&hx).unwrap();
    let zeros = vec![0.0f32; n];
    let mut out = ctx.zeros::<f32>(n).unwrap();
    let mut oout = other.zeros::<f32>(n).unwrap();
    if ctx.backend() == Backend::Cpu {
        // One device: mixing is fine and computes the right thing.
        ctx.ops().add(&x, &ox, &mut oout).unwrap();
        let want: Vec<f32> = hx.iter().map(|v| 2.0 * v).collect();
        assert_same(&want, &oout.download().unwrap());
        assert_eq!(
            other.ops().dot(&ox, &y).unwrap(),
            dot_ref(&hx, &hy).0 as f32
        );
        return;
    }
    let mismatch = |r: Result<(), Error>| matches!(r, Err(Error::ContextMismatch { .. }));
    let mismatch_v = |r: Result<f32, Error>| matches!(r, Err(Error::ContextMismatch { .. }));
    // This context's ops, one foreign operand at a time.
    let ops = ctx.ops();
    assert!(mismatch(ops.fill(&mut oout, 1.0)));
    assert!(mismatch(ops.copy(&ox, &mut out)));
    assert!(mismatch(ops.copy(&x, &mut oout)));
    assert!(mismatch(ops.add(&ox, &y, &mut out)));
    assert!(mismatch(ops.sub(&x, &ox, &mut out)));
    assert!(mismatch(ops.mul(&x, &y, &mut oout)));
    assert!(mismatch(ops.axpy(2.0, &ox, &mut out)));
    assert!(mismatch(ops.axpy(2.0, &x, &mut oout)));
    assert!(mismatch(ops.scale(2.0, &mut oout)));
    assert!(mismatch(ops.relu(&ox, &mut out)));
    assert!(mismatch(ops.sigmoid(&x, &mut oout)));
    assert!(mismatch(ops.tanh(&ox, &mut out)));
    assert!(mismatch_v(ops.sum(&ox)));
    assert!(mismatch_v(ops.max(&ox)));
    assert!(mismatch_v(ops.dot(&x, &ox)));
    assert!(mismatch_v(ops.dot(&ox, &y)));
    let (sq, osq) = (
        ctx.upload(&hx[..1]).unwrap(),
        other.upload(&hx[..1]).unwrap(),
    );
    let (mut c, mut oc) = (ctx.zeros::<f32>(1).unwrap(), other.zeros::<f32>(1).unwrap());
    assert!(mismatch(ops.matmul(&osq, &sq, &mut c, (1, 1, 1))));
    assert!(mismatch(ops.matmul(&sq, &osq, &mut c, (1, 1, 1))));
    assert!(mismatch(ops.matmul(&sq, &sq, &mut oc, (1, 1, 1))));
    // The CPU context's ops on this context's arrays, and on its stream.
    let oops = other.ops();
    assert!(mismatch(oops.add(&x, &ox, &mut oout)));
    assert!(mismatch_v(oops.sum(&x)));
    assert!(mismatch(oops.matmul(&osq, &osq, &mut c, (1, 1, 1))));
    let s = ctx.create_stream().unwrap();
    let on_gpu_stream = other.ops_on(&s);
    assert!(mismatch(on_gpu_stream.add(&ox, &ox, &mut oout)));
    assert!(mismatch_v(on_gpu_stream.sum(&ox)));
    assert!(mismatch(on_gpu_stream.matmul(
        &osq,
        &osq,
        &mut oc,
        (1, 1, 1)
    )));
    // Nothing was written by the refused calls.
    assert_same(&zeros, &out.download().unwrap());
    assert_same(&zeros, &oout.download().unwrap());
    assert_same(&[0.0f32], &c.download().unwrap());
    assert_same(&[0.0f32], &oc.download().unwrap());
});

/// `n` random values of [-4, 4] with `specials` written at random places.
fn with_specials<T: Tol>(n: usize, specials: &[f64]) -> Vec<T> {
    let mut v = small::<T>(n);
    let mut rng = rand::rng();
    for &s in specials {
        v[rng.random_range(0..n)] = T::from_f64(s);
    }
    v
}

fn nan_and_inf<T: Tol>(ctx: &Context) {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let ops = ctx.ops();
    let t = |v: f64| T::from_f64(v);
    let is_nan = |v: T| v.f64().is_nan();
    for n in [2, 257, 4099, random_len(1 << 16).max(2)] {
        // Sums: an infinity wins, opposite infinities and NaNs give NaN.
        let sum = |h: Vec<T>| ops.sum(&ctx.upload(&h).unwrap()).unwrap();
        let one_inf = with_specials::<T>(n, &[inf]);
        assert_eq!(sum(one_inf).f64(), inf, "sum with +inf, n = {n}");
        assert_eq!(sum(with_specials::<T>(n, &[-inf])).f64(), -inf);
        let mut both = small::<T>(n);
        both[0] = t(inf);
        both[n - 1] = t(-inf);
        assert!(is_nan(sum(both)), "sum with +inf and -inf, n = {n}");
        assert!(is_nan(sum(with_specials::<T>(n, &[nan]))), "sum with NaN");
        // Dot: inf·x is ±inf, inf·0 is NaN.
        let (mut hx, mut hy) = (ints::<T>(n, 1, 8), ints::<T>(n, 1, 8));
        hx[n / 2] = t(inf);
        let dot = |hx: &[T], hy: &[T]| {
            ops.dot(&ctx.upload(hx).unwrap(), &ctx.upload(hy).unwrap())
                .unwrap()
        };
        assert_eq!(dot(&hx, &hy).f64(), inf, "dot with +inf, n = {n}");
        hy[n / 2] = t(0.0);
        assert!(is_nan(dot(&hx, &hy)), "dot with inf·0, n = {n}");
        // Max ignores NaNs while there is a number, and sees infinities.
        let max = |h: &[T]| ops.max(&ctx.upload(h).unwrap()).unwrap().f64();
        let mut h = small::<T>(n);
        let want = h.iter().map(|v| v.f64()).fold(f64::NEG_INFINITY, f64::max);
        let mut rng = rand::rng();
        for _ in 0..n.div_ceil(3) {
            let i = rng.random_range(0..n);
            if h[i].f64() != want {
                h[i] = t(nan);
            }
        }
        assert_eq!(max(&h), want, "max with NaNs, n = {n}");
        let mut all_nan_but_one = vec![t(nan); n];
        all_nan_but_one[n / 2] = t(-1.5);
        assert_eq!(max(&all_nan_but_one), -1.5, "max of NaNs and one number");
        let mut neg = vec![t(-inf); n];
        assert_eq!(max(&neg), -inf, "max of -infs");
        neg[n - 1] = t(nan);
        assert_eq!(max(&neg), -inf, "max of -infs and a NaN");
        assert_eq!(max(&with_specials::<T>(n, &[nan, inf])), inf);
    }

    // Element-wise: IEEE arithmetic in T::Acc, rounded to T.
    let specials = [inf, -inf, nan, 0.0, 1.0, -2.0];
    let hx: Vec<T> = specials.iter().map(|&v| t(v)).collect();
    let x = ctx.upload(&hx).unwrap();
    let ys = [2.0, inf, -inf, inf, nan, -inf];
    let y = ctx.upload(&ys.map(t)).unwrap();
    let mut out = ctx.zeros::<T>(hx.len()).unwrap();
    let add: Vec<f64> = specials.iter().zip(&ys).map(|(a, b)| a + b).collect();
    ops.add(&x, &y, &mut out).unwrap();
    assert_close(&add, &out.download().unwrap(), 0.0);
    let mul: Vec<f64> = specials.iter().zip(&ys).map(|(a, b)| a * b).collect();
    ops.mul(&x, &y, &mut out).unwrap();
    assert_close(&mul, &out.download().unwrap(), 0.0);
    let mut yy = ctx.upload(&ys.map(t)).unwrap();
    ops.axpy(t(2.0), &x, &mut yy).unwrap();
    let axpy: Vec<f64> = specials.iter().zip(&ys).map(|(a, b)| 2.0 * a + b).collect();
    assert_close(&axpy, &yy.download().unwrap(), 0.0);

    ops.sigmoid(&x, &mut out).unwrap();
    let sigmoid: Vec<f64> = specials.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
    assert_eq!((sigmoid[0], sigmoid[1]), (1.0, 0.0));
    assert_close(
        &sigmoid,
        &out.download().unwrap(),
        transcendental_tol::<T>(),
    );
    ops.tanh(&x, &mut out).unwrap();
    let tanh: Vec<f64> = specials.iter().map(|v| v.tanh()).collect();
    assert_close(&tanh, &out.download().unwrap(), transcendental_tol::<T>());
    ops.relu(&x, &mut out).unwrap();
    let got = out.download().unwrap();
    // relu keeps NaN on every backend (Ops::relu's docs).
    assert_close(&[inf, 0.0, nan, 0.0, 1.0, 0.0], &got, 0.0);
}
on_every_backend!(nan_and_inf_inputs, |ctx| for_float_types!(nan_and_inf, ctx));

/// The documented rule of `Ops::max`: "NaNs are ignored unless every
/// element is NaN" (then the result is NaN).
fn max_of_nans<T: Tol>(ctx: &Context) {
    for n in [1, 257, random_len(1 << 16)] {
        let h = vec![T::from_f64(f64::NAN); n];
        let got = ctx.ops().max(&ctx.upload(&h).unwrap()).unwrap().f64();
        assert!(
            got.is_nan(),
            "max of {n} NaNs ({}) is {got}, not NaN",
            std::any::type_name::<T>()
        );
    }
}
on_every_backend!(max_of_only_nans_is_nan, |ctx| for_float_types!(
    max_of_nans,
    ctx
));

on_every_backend!(ops_on_a_side_stream_are_ordered, |ctx| {
    let _parked = common::park_lock();
    let s = ctx.create_stream().unwrap();
    let n = random_len(1 << 16);
    // Integers: the sum is exact, and positive, so 0 (y unwritten) is wrong.
    let hx = ints::<f32>(n, 1, 8);
    let x = ctx.upload(&hx).unwrap();
    let mut y = ctx.zeros::<f32>(n).unwrap();
    // Compile and warm up the consumer's kernels now, so that while the
    // gate is closed it has nothing to wait for but the producer's write.
    assert_eq!(ctx.ops().sum(&y).unwrap(), 0.0);
    // Warm up the producer too: CUDA loads a kernel's module on its first launch (lazy loading), and
    // loading waits for the device's streams, a gated one too:
    // a first launch behind a closed gate would block the test itself.
    ctx.ops_on(&s).axpy(2.0, &x, &mut y).unwrap();
    ctx.ops_on(&s).fill(&mut y, 0.0).unwrap();
    ctx.sync().unwrap();
    // Hold the side stream at a gate, then queue the producer behind it.
    let (release, gate) = mpsc::channel::<()>();
    let (opened_tx, opened) = mpsc::channel::<bool>();
    s.host_fn(move || {
        let ok = gate.recv_timeout(Duration::from_secs(30)).is_ok();
        let _ = opened_tx.send(ok);
    })
    .unwrap();
    ctx.ops_on(&s).axpy(2.0, &x, &mut y).unwrap();
    let want = 2.0 * sum_ref(&hx).0 as f32;
    std::thread::scope(|scope| {
        // The default stream's read must wait for the side stream's write,
        // which waits for the gate.
        let consumer = scope.spawn(|| ctx.ops().sum(&y).unwrap());
        std::thread::sleep(Duration::from_millis(300));
        let early = consumer.is_finished();
        release.send(()).unwrap();
        let sum = consumer.join().expect("the consumer's sum panicked");
        assert!(
            opened.recv_timeout(Duration::from_secs(30)).unwrap(),
            "the gate timed out before the test released it"
        );
        assert!(
            !early,
            "the sum on the default stream returned ({sum}) while the side stream's write was held back"
        );
        assert_eq!(sum, want, "the sum did not see the side stream's write");
    });
    s.sync().unwrap();
});

/// The CPU backend splits arrays of 64 Ki elements and more across its
/// threads (backend/cpu/ops.rs, `PAR_MIN`); 2^20 + 7 elements is past
/// that and no power-of-two chunk divides it, so the last, short chunk
/// and the reduction blocks' remainders are exercised too. Every element
/// of the element-wise results is checked.
fn split_across_threads<T: Tol>(ctx: &Context) {
    let n = common::big((1 << 20) + 7);
    let backend = ctx.backend();
    let (ha, hb) = (small::<T>(n), small::<T>(n));
    let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
    let mut out = ctx.alloc::<T>(n).unwrap();
    let ops = ctx.ops();
    let exact2 = |f: fn(T::Acc, T::Acc) -> T::Acc| -> Vec<T> {
        ha.iter()
            .zip(&hb)
            .map(|(x, y)| T::from_acc(f(x.to_acc(), y.to_acc())))
            .collect()
    };
    ops.add(&a, &b, &mut out).unwrap();
    assert_same(&exact2(|x, y| x + y), &out.download().unwrap());
    ops.mul(&a, &a, &mut out).unwrap();
    let squares: Vec<T> = ha
        .iter()
        .map(|x| T::from_acc(x.to_acc() * x.to_acc()))
        .collect();
    assert_same(&squares, &out.download().unwrap());
    ops.relu(&a, &mut out).unwrap();
    let xs: Vec<f64> = ha.iter().map(|v| v.f64()).collect();
    assert_close(
        &xs.iter().map(|v| v.max(0.0)).collect::<Vec<_>>(),
        &out.download().unwrap(),
        0.0,
    );
    ops.sigmoid(&a, &mut out).unwrap();
    assert_close(
        &xs.iter()
            .map(|v| 1.0 / (1.0 + (-v).exp()))
            .collect::<Vec<_>>(),
        &out.download().unwrap(),
        transcendental_tol::<T>(),
    );
    check_reduction("sum", backend, n, sum_ref(&ha), ops.sum(&a).unwrap());
    check_reduction(
        "dot",
        backend,
        n,
        dot_ref(&ha, &hb),
        ops.dot(&a, &b).unwrap(),
    );
    let host_max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(ops.max(&a).unwrap().f64(), host_max);
    // A NaN in the middle chunk is ignored, wherever the maximum is.
    let mut with_nan = ha.clone();
    with_nan[n / 2] = T::from_f64(f64::NAN);
    let want = with_nan
        .iter()
        .map(|v| v.f64())
        .fold(f64::NEG_INFINITY, f64::max);
    let got = ops.max(&ctx.upload(&with_nan).unwrap()).unwrap();
    assert_eq!(got.f64(), want, "max of {n} with a NaN at {}", n / 2);
    // A single number among NaNs in a late chunk wins over every chunk of
    // NaNs; with no number at all, the result is NaN.
    let mut nans = vec![T::from_f64(f64::NAN); n];
    nans[n - 3] = T::from_f64(-2.5);
    assert_eq!(ops.max(&ctx.upload(&nans).unwrap()).unwrap().f64(), -2.5);
    nans[n - 3] = T::from_f64(f64::NAN);
    assert!(ops.max(&ctx.upload(&nans).unwrap()).unwrap().f64().is_nan());
}
#[test]
fn cpu_ops_split_across_threads_match_the_host() {
    let ctx = common::cpu_ctx();
    for_float_types!(split_across_threads, &ctx);
}

/// Where a matmul operand's matrices lie in the array it views: dense,
/// one matrix (a 2-D operand: one row) sliced off the front (an offset of
/// a whole matrix or row), or that and a column, out of rows three
/// elements longer than the matrix's (an odd offset and a leading
/// dimension past the row).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lie {
    Dense,
    Sliced,
    Wide,
}

/// A random matmul operand: `batch` (None: a 2-D array) `r`×`c`
/// matrices, stored transposed (the view swaps the last two axes of an
/// array of `c`×`r` matrices) when `t`, placed as `lie` says.
struct MatOperand<T: Element> {
    array: GpuArray<T>,
    /// The host copy of every matrix, dense row-major, one after another.
    dense: Vec<T>,
    t: bool,
    lie: Lie,
    three_d: bool,
    /// Matrices held: 1 for a 2-D operand or one broadcast over a batch.
    matrices: usize,
}

impl<T: Tol> MatOperand<T> {
    fn new(ctx: &Context, batch: Option<usize>, (r, c): (usize, usize), t: bool, lie: Lie) -> Self {
        let (sr, sc) = if t { (c, r) } else { (r, c) };
        let pad = usize::from(lie != Lie::Dense);
        let wide = if lie == Lie::Wide { 3 } else { 0 };
        let stored_cols = sc + wide;
        // The stored array: an extra matrix (3-D) or row (2-D) in front.
        let shape: Vec<usize> = match batch {
            Some(g) => vec![g + pad, sr, stored_cols],
            None => vec![sr + pad, stored_cols],
        };
        let host = small::<T>(shape.iter().product());
        let array = ctx.upload(&host).unwrap().reshape(shape).unwrap();
        let g = batch.unwrap_or(1);
        let mut dense = Vec::with_capacity(g * r * c);
        for z in 0..g {
            for i in 0..r {
                for j in 0..c {
                    let (rr, cc) = if t { (j, i) } else { (i, j) };
                    let cc = cc + usize::from(lie == Lie::Wide);
                    let at = match batch {
                        Some(_) => ((z + pad) * sr + rr) * stored_cols + cc,
                        None => (rr + pad) * stored_cols + cc,
                    };
                    dense.push(host[at]);
                }
            }
        }
        MatOperand {
            array,
            dense,
            t,
            lie,
            three_d: batch.is_some(),
            matrices: g,
        }
    }

    /// The view an op takes.
    fn view(&self) -> unigpu::ArrayView<'_, T> {
        let mut v = self.array.view();
        let (row_axis, col_axis) = if self.three_d { (1, 2) } else { (0, 1) };
        if self.lie != Lie::Dense {
            let n = v.shape()[0];
            v = v.slice(0, 1..n).unwrap();
        }
        if self.lie == Lie::Wide {
            let n = v.shape()[col_axis];
            v = v.slice(col_axis, 1..n - 2).unwrap();
        }
        if self.t {
            v = v.swap_axes(row_axis, col_axis).unwrap();
        }
        v
    }

    /// Matrix `z` (the only one of a 2-D operand), dense row-major.
    fn matrix(&self, z: usize, len: usize) -> &[T] {
        let z = z.min(self.matrices - 1);
        &self.dense[z * len..(z + 1) * len]
    }
}

/// mm and bmm of random views: every combination of transposed `a` and
/// `b`, dense, sliced and wide operands, 2-D products, batched ones and
/// batched ones with a 2-D `b` broadcast over the batch; every matrix of
/// the result against the host reference, within the matmul bound.
fn matmul_views<T: Tol>(ctx: &Context) {
    let split_k = matches!(ctx.backend(), Backend::Cuda | Backend::Torch);
    let mut rng = rand::rng();
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        for lie in [Lie::Dense, Lie::Sliced, Lie::Wide] {
            // Random sizes, and ones with k and n multiples of four (the
            // vulkan vec4 kernel where the layout allows it).
            let sizes = [
                (
                    rng.random_range(1..5),
                    rng.random_range(1..40),
                    rng.random_range(1..40),
                    rng.random_range(1..40),
                ),
                (3, 20, 16, 36),
                // An empty sum: zeros, and nothing of a or b read.
                (2, 5, 0, 3),
            ];
            for (batch, m, k, n) in sizes {
                for kind in ["mm", "bmm", "bmm, b 2-D", "bmm, a one matrix"] {
                    let (ga, gb) = match kind {
                        "mm" => (None, None),
                        "bmm" => (Some(batch), Some(batch)),
                        "bmm, b 2-D" => (Some(batch), None),
                        _ => (Some(1), Some(batch)),
                    };
                    let a = MatOperand::<T>::new(ctx, ga, (m, k), ta, lie);
                    let b = MatOperand::<T>::new(ctx, gb, (k, n), tb, lie);
                    let g = if kind == "mm" { 1 } else { batch };
                    let shape = if kind == "mm" {
                        vec![m, n]
                    } else {
                        vec![g, m, n]
                    };
                    let mut c = ctx
                        .upload(&random_vec::<T>(g * m * n))
                        .unwrap()
                        .reshape(shape)
                        .unwrap();
                    let ops = ctx.ops();
                    let done = if kind == "mm" {
                        ops.mm(&a.view(), &b.view(), &mut c)
                    } else {
                        ops.bmm(&a.view(), &b.view(), &mut c)
                    };
                    done.unwrap_or_else(|e| {
                        panic!("{kind} {batch}x{m}x{k}x{n} (a.t {ta}, b.t {tb}, {lie:?}): {e}")
                    });
                    let got = c.download().unwrap();
                    for z in 0..g {
                        let what = format!(
                            "{kind} a.t {ta}, b.t {tb}, {lie:?}, matrix {z} of {g} ({})",
                            ctx.backend()
                        );
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            check_matmul(
                                split_k,
                                a.matrix(z, m * k),
                                b.matrix(z, k * n),
                                &got[z * m * n..(z + 1) * m * n],
                                (m, k, n),
                            )
                        }));
                        if let Err(e) = r {
                            panic!("{what}: {}", e.downcast_ref::<String>().map_or("", |s| s));
                        }
                    }
                }
            }
        }
    }
}
on_every_backend!(matmul_views_read_in_place, |ctx| for_float_types!(
    matmul_views,
    ctx
));

/// A transposed operand is read in place, not copied: the CUDA backend's
/// allocator counts every allocation (`memory_stats`: hits + misses), and
/// an mm of `a.t()`, a bmm of a batch slice times transposed matrices and
/// a bmm with a 2-D `b` broadcast over the batch make none. The control: an
/// operand with a negative stride is copied (one allocation), so the
/// counter does see a hidden copy. (The CPU, vulkan and torch backends
/// expose no allocation counter; matmul_views_read_in_place checks their
/// results for the same views.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn transposed_views_are_not_copied() {
    let ctx = common::cuda_ctx();
    let (m, k, n, g) = (48, 40, 56, 3);
    let at = ctx
        .upload(&small::<f32>(k * m))
        .unwrap()
        .reshape([k, m])
        .unwrap();
    let b = ctx
        .upload(&small::<f32>(k * n))
        .unwrap()
        .reshape([k, n])
        .unwrap();
    let x = ctx
        .upload(&small::<f32>((g + 1) * n * k))
        .unwrap()
        .reshape([g + 1, n, k])
        .unwrap();
    let a3 = ctx
        .upload(&small::<f32>(g * m * k))
        .unwrap()
        .reshape([g, m, k])
        .unwrap();
    let mut c = ctx.zeros::<f32>([m, n]).unwrap();
    let mut c3 = ctx.zeros::<f32>([g, m, n]).unwrap();
    let ops = ctx.ops();
    // Warm: cuBLAS's handle and workspace are made on first use.
    ops.mm(&at.t(), &b, &mut c).unwrap();
    ctx.synchronize().unwrap();
    let allocations = || {
        let s = ctx.memory_stats().unwrap();
        s.hits + s.misses
    };
    let before = allocations();
    ops.mm(&at.t(), &b, &mut c).unwrap();
    let xs = x.view().slice(0, 1..g + 1).unwrap();
    ops.bmm(&a3, &xs.swap_axes(1, 2).unwrap(), &mut c3).unwrap();
    ops.bmm(&a3, &b, &mut c3).unwrap();
    ctx.synchronize().unwrap();
    assert_eq!(
        allocations(),
        before,
        "a transposed, sliced or broadcast operand was copied"
    );
    let reversed = at.view().slice_step(0, 0..k, -1).unwrap();
    ops.mm(&reversed.t(), &b, &mut c).unwrap();
    ctx.synchronize().unwrap();
    assert!(
        allocations() > before,
        "the copy of a reversed view was not counted"
    );
}

/// bmm's shape errors name the three shapes; nothing runs.
#[test]
fn bmm_shape_errors_name_the_shapes() {
    let ctx = common::cpu_ctx();
    let ops = ctx.ops();
    let a = ctx.zeros::<f32>([2, 3, 4]).unwrap();
    let b = ctx.zeros::<f32>([2, 4, 5]).unwrap();
    let b3 = ctx.zeros::<f32>([3, 4, 5]).unwrap();
    let bk = ctx.zeros::<f32>([2, 6, 5]).unwrap();
    let mut out = ctx.zeros::<f32>([2, 3, 5]).unwrap();
    let mut out2 = ctx.zeros::<f32>([3, 5]).unwrap();
    ops.bmm(&a, &b, &mut out).unwrap();
    for (e, shapes) in [
        (ops.bmm(&a, &b3, &mut out), "[3, 4, 5]"),
        (ops.bmm(&a, &bk, &mut out), "[2, 6, 5]"),
        (ops.bmm(&a, &b, &mut out2), "[3, 5]"),
        (ops.mm(&a, &b, &mut out2), "[2, 3, 4]"),
    ] {
        match e {
            Err(Error::Shape { message, .. }) => {
                assert!(message.contains(shapes), "{message} does not name {shapes}")
            }
            other => panic!("expected a shape error naming {shapes}, got {other:?}"),
        }
    }
}
