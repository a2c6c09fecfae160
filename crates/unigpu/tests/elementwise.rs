//! The element-wise ops of src/ops/elementwise.rs on every backend, for
//! f32, f64, f16 and bf16: every element against a host reference computed
//! independently in f64 and rounded to `T`.
//!
//! Bounds (docs/ops.md): exact ops (neg, abs, floor, ceil, round, clamp,
//! minimum, maximum, comparisons, where) bit for bit. The others within
//! `k` ulps of the result's type in which they are computed (f32 for f32,
//! f16 and bf16; f64 for f64), `k` from docs/kernels.md's "Math functions:
//! ulp bounds" for the backend (composite ops: the sum of their steps'),
//! plus, for f16/bf16, one ulp of `T` for the final rounding, plus the
//! absolute bounds WGSL states where it states one (vulkan). Inputs mix
//! random values with NaN, ±inf, ±0, halves (round's ties) and values out
//! of a function's domain (negative for log and sqrt).

mod common;

use rand::Rng;
use unigpu::{Backend, Context, Error, Float, GpuArray, bf16, f16};

/// An element type as the tests see it: exact conversions to f64 and one
/// rounding back.
trait T: Float + Copy + std::fmt::Debug {
    /// Mantissa bits (the ulp of 1 is 2^-P).
    const P: i32;
    /// The exponent of the smallest normal number.
    const EMIN: i32;
    /// Whether it is computed in f32 and rounded (f16, bf16).
    const NARROW: bool;
    fn f64(self) -> f64;
    fn of(v: f64) -> Self;
}
impl T for f32 {
    const P: i32 = 23;
    const EMIN: i32 = -126;
    const NARROW: bool = false;
    fn f64(self) -> f64 {
        self as f64
    }
    fn of(v: f64) -> Self {
        v as f32
    }
}
impl T for f64 {
    const P: i32 = 52;
    const EMIN: i32 = -1022;
    const NARROW: bool = false;
    fn f64(self) -> f64 {
        self
    }
    fn of(v: f64) -> Self {
        v
    }
}
impl T for f16 {
    const P: i32 = 10;
    const EMIN: i32 = -14;
    const NARROW: bool = true;
    fn f64(self) -> f64 {
        self.to_f64()
    }
    fn of(v: f64) -> Self {
        f16::from_f64(v)
    }
}
impl T for bf16 {
    const P: i32 = 7;
    const EMIN: i32 = -126;
    const NARROW: bool = true;
    fn f64(self) -> f64 {
        self.to_f64()
    }
    fn of(v: f64) -> Self {
        bf16::from_f64(v)
    }
}

/// The spacing of numbers of `p` mantissa bits (smallest normal exponent
/// `emin`) at `r`.
fn ulp_at(r: f64, p: i32, emin: i32) -> f64 {
    let r = r.abs();
    let e = if r == 0.0 || !r.is_finite() {
        emin
    } else {
        (r.log2().floor() as i32).max(emin)
    };
    2f64.powi(e - p)
}

/// How far from the exact reference an op may be: `ulps` ulps of the
/// type it computes in, plus `abs`; bit for bit where both are 0.
#[derive(Clone, Copy, Debug)]
struct Bound {
    ulps: f64,
    abs: f64,
}

const EXACT: Bound = Bound {
    ulps: 0.0,
    abs: 0.0,
};

/// `k` ulps from the correctly rounded result, docs/kernels.md's
/// convention (CUDA's): `k + 1/2` from the exact one, which the reference
/// is. (WGSL's bounds, stated from the exact result, are at most this.)
fn ulps(k: f64) -> Bound {
    Bound {
        ulps: k + 0.5,
        abs: 0.0,
    }
}

/// The allowed error of `got` against `reference` (f64, before rounding).
fn allowed<X: T>(b: Bound, reference: f64, backend: Backend) -> f64 {
    let (p, emin) = if X::NARROW || X::P == 23 {
        (23, -126)
    } else {
        (52, -1022)
    };
    let mut tol = b.ulps * ulp_at(reference, p, emin) + b.abs;
    if X::NARROW && (b.ulps > 0.0 || b.abs > 0.0) {
        tol += ulp_at(reference, X::P, X::EMIN);
    }
    if backend == Backend::Vulkan && (b.ulps > 0.0 || b.abs > 0.0) {
        // WGSL lets a driver flush subnormals (lavapipe does).
        tol += 2f64.powi(emin);
    }
    tol
}

fn check<X: T>(what: &str, inputs: &str, got: X, reference: f64, b: Bound, backend: Backend) {
    let g = got.f64();
    let r = X::of(reference).f64();
    let ok = if r.is_nan() {
        g.is_nan()
    } else if b.ulps == 0.0 && b.abs == 0.0 {
        g.to_bits() == r.to_bits()
    } else if r.is_infinite() || g.is_infinite() {
        // A result at the edge of the range may round either way.
        g == r || (!g.is_nan() && (g - reference).abs() <= allowed::<X>(b, reference, backend))
    } else {
        (g - reference).abs() <= allowed::<X>(b, reference, backend)
    };
    assert!(
        ok,
        "{what} on {backend:?} for {}: {inputs} gave {g:e}, the reference is {reference:e} \
         (rounded {r:e}); bound {b:?} = {:e}",
        std::any::type_name::<X>(),
        allowed::<X>(b, reference, backend)
    );
}

/// Special values every op sees.
const SPECIAL: [f64; 14] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    1.0,
    -1.0,
    3.0,
    -7.0,
];

/// `n` values as `X`: the special values, then random ones in `lo..hi`.
fn inputs<X: T>(n: usize, lo: f64, hi: f64) -> Vec<X> {
    let mut rng = rand::rng();
    let mut v: Vec<X> = SPECIAL.iter().map(|&s| X::of(s)).collect();
    while v.len() < n {
        let x = X::of(rng.random_range(lo..hi));
        // Subnormal inputs are left out: WGSL may flush them.
        if x.f64() == 0.0 || x.f64().abs() >= 2f64.powi(X::EMIN.max(-126)) {
            v.push(x);
        }
    }
    v.truncate(n);
    v
}

fn is_math_f64_on_vulkan<X: T>(ctx: &Context) -> bool {
    ctx.backend() == Backend::Vulkan && X::P == 52
}

/// Runs `op` on inputs from `lo..hi` (and the specials) and checks every
/// element against `reference`, within `bound(x, reference)`.
fn unary_case<X: T>(
    ctx: &Context,
    name: &str,
    op: impl Fn(&unigpu::Ops<'_>, &GpuArray<X>, &mut GpuArray<X>) -> unigpu::Result<()>,
    (lo, hi): (f64, f64),
    reference: impl Fn(f64) -> f64,
    bound: impl Fn(f64, f64) -> Bound,
    math: bool,
) {
    let host = inputs::<X>(3000, lo, hi);
    let x = ctx.upload(&host).unwrap();
    let mut out = ctx.upload(&vec![X::of(7.0); host.len()]).unwrap();
    let r = op(&ctx.ops(), &x, &mut out);
    if math && is_math_f64_on_vulkan::<X>(ctx) {
        match r {
            Err(Error::Unsupported { .. }) => return,
            other => panic!("{name} of f64 on vulkan: {other:?}"),
        }
    }
    r.unwrap();
    let got = out.download().unwrap();
    for (&x, &g) in host.iter().zip(&got) {
        let want = reference(x.f64());
        check(
            name,
            &format!("x = {:e}", x.f64()),
            g,
            want,
            bound(x.f64(), want),
            ctx.backend(),
        );
    }
}

/// The f32 (or f64) bound of a math function on `backend`, in ulps, from
/// docs/kernels.md's table.
fn lib(backend: Backend, f64_type: bool, cpu: f64, cuda: f64, f64_bound: f64) -> f64 {
    match (backend, f64_type) {
        (_, true) => f64_bound,
        (Backend::Cpu, false) => cpu,
        _ => cuda,
    }
}

/// torch's clamp, `min(max(x, lo), hi)` with NaN propagated.
fn torch_clamp(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() || lo.is_nan() || hi.is_nan() {
        return f64::NAN;
    }
    let r = if x < lo { lo } else { x };
    if r > hi { hi } else { r }
}

fn unary_ops<X: T>(ctx: &Context) {
    let be = ctx.backend();
    let vk = be == Backend::Vulkan;
    let wide = X::P == 52;
    let eps = if wide {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    };
    let exact = |_: f64, _: f64| EXACT;
    unary_case::<X>(
        ctx,
        "neg",
        |o, x, y| o.neg(x, y),
        (-100.0, 100.0),
        |x| -x,
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "abs",
        |o, x, y| o.abs(x, y),
        (-100.0, 100.0),
        f64::abs,
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "floor",
        |o, x, y| o.floor(x, y),
        (-100.0, 100.0),
        f64::floor,
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "ceil",
        |o, x, y| o.ceil(x, y),
        (-100.0, 100.0),
        f64::ceil,
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "round",
        |o, x, y| o.round(x, y),
        (-100.0, 100.0),
        f64::round_ties_even,
        exact,
        false,
    );
    // Halves only, where ties decide.
    unary_case::<X>(
        ctx,
        "round (ties)",
        |o, x, y| o.round(x, y),
        (-50.0, 50.0),
        f64::round_ties_even,
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "clamp",
        |o, x, y| o.clamp(x, X::of(-2.5), X::of(10.0), y),
        (-100.0, 100.0),
        |x| torch_clamp(x, -2.5, 10.0),
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "clamp (lo > hi)",
        |o, x, y| o.clamp(x, X::of(3.0), X::of(1.0), y),
        (-100.0, 100.0),
        |x| torch_clamp(x, 3.0, 1.0),
        exact,
        false,
    );
    unary_case::<X>(
        ctx,
        "clamp (NaN bound)",
        |o, x, y| o.clamp(x, X::of(f64::NAN), X::of(1.0), y),
        (-100.0, 100.0),
        |_| f64::NAN,
        exact,
        false,
    );

    // exp: cpu 1, cuda 2, f64 2; vulkan 3 + 2|x|.
    let k = lib(be, wide, 1.0, 2.0, 2.0);
    unary_case::<X>(
        ctx,
        "exp",
        |o, x, y| o.exp(x, y),
        (-20.0, 20.0),
        f64::exp,
        move |x, _| {
            if vk {
                ulps(3.0 + 2.0 * x.abs())
            } else {
                ulps(k)
            }
        },
        true,
    );
    // log: 1 (f64 2); vulkan 3 ulps, or 2^-21 absolute on [0.5, 2].
    let k = lib(be, wide, 1.0, 1.0, 2.0);
    unary_case::<X>(
        ctx,
        "log",
        |o, x, y| o.log(x, y),
        (-10.0, 1.0e4),
        f64::ln,
        move |x, _| {
            if vk {
                Bound {
                    ulps: 3.0,
                    abs: if (0.5..=2.0).contains(&x) {
                        2f64.powi(-21)
                    } else {
                        0.0
                    },
                }
            } else {
                ulps(k)
            }
        },
        true,
    );
    unary_case::<X>(
        ctx,
        "log (near 1)",
        |o, x, y| o.log(x, y),
        (0.5, 2.0),
        f64::ln,
        move |_, _| {
            if vk {
                Bound {
                    ulps: 3.0,
                    abs: 2f64.powi(-21),
                }
            } else {
                ulps(k)
            }
        },
        true,
    );
    // sqrt: correctly rounded; vulkan 5.
    let k = if vk { 5.0 } else { 0.0 };
    unary_case::<X>(
        ctx,
        "sqrt",
        |o, x, y| o.sqrt(x, y),
        (-10.0, 1.0e4),
        f64::sqrt,
        move |_, _| ulps(k),
        true,
    );
    // rsqrt: cpu 1 (1 / sqrt, two roundings), cuda 2, vulkan 2, f64 2.
    let k = lib(be, wide, 1.0, 2.0, 2.0);
    unary_case::<X>(
        ctx,
        "rsqrt",
        |o, x, y| o.rsqrt(x, y),
        (-10.0, 1.0e4),
        |x| 1.0 / x.sqrt(),
        move |_, _| ulps(k),
        true,
    );
    // sin, cos: cpu 1, cuda 2, f64 3; vulkan 2^-11 absolute on [-π, π].
    let k = lib(be, wide, 1.0, 2.0, 3.0);
    let range = if vk {
        (-std::f64::consts::PI, std::f64::consts::PI)
    } else {
        (-100.0, 100.0)
    };
    let b = move |_: f64, _: f64| {
        if vk {
            Bound {
                ulps: 2.0,
                abs: 2f64.powi(-11),
            }
        } else {
            ulps(k)
        }
    };
    unary_case::<X>(ctx, "sin", |o, x, y| o.sin(x, y), range, f64::sin, b, true);
    unary_case::<X>(ctx, "cos", |o, x, y| o.cos(x, y), range, f64::cos, b, true);
    // gelu (tanh form): the cubic's and the products' roundings (~6
    // ulps) and tanh's error (2 ulps; vulkan (3.5 + 2|u|)·2^-22
    // absolute), which 1 + tanh turns absolute, times |x| / 2.
    let gelu = |x: f64| {
        let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
        0.5 * x * (1.0 + u.tanh())
    };
    unary_case::<X>(
        ctx,
        "gelu",
        |o, x, y| o.gelu(x, y),
        (-10.0, 10.0),
        gelu,
        move |x, _| {
            let u = 0.8 * (x + 0.045 * x * x * x);
            let t = if vk {
                (3.5 + 2.0 * u.abs()) * 2f64.powi(-22)
            } else {
                0.0
            };
            Bound {
                ulps: 8.0,
                abs: x.abs() * (8.0 * eps * (1.0 + 3.0 * 0.045 * x * x) + t),
            }
        },
        true,
    );
    // silu = x / (1 + e^-x): exp's error (vulkan 3 + 2|x|), + and /.
    let k = lib(be, wide, 1.0, 2.0, 2.0);
    unary_case::<X>(
        ctx,
        "silu",
        |o, x, y| o.silu(x, y),
        (-20.0, 20.0),
        |x| x / (1.0 + (-x).exp()),
        move |x, _| {
            if vk {
                ulps(5.0 + 2.0 * x.abs())
            } else {
                ulps(k + 2.0)
            }
        },
        true,
    );
    // pow(x, p): cpu 1, cuda 4, f64 3; vulkan exp2(p · log2 x) (below).
    for p in [2.0, 0.5, -1.5, 3.0] {
        let k = lib(be, wide, 1.0, 4.0, 3.0);
        unary_case::<X>(
            ctx,
            &format!("pow(x, {p})"),
            move |o, x, y| o.pow_scalar(x, X::of(p), y),
            (-30.0, 30.0),
            move |x| x.powf(p),
            move |x, _| if vk { vulkan_pow(x, p) } else { ulps(k) },
            true,
        );
    }
}

/// WGSL's pow bound, as docs/kernels.md states it: exp2(y · log2 x), with
/// log2's error (3 ulps, or 2^-21 absolute on [0.5, 2]) times |y|, the
/// product's rounding, times ln 2, plus exp2's 3 + 2|t|.
fn vulkan_pow(x: f64, y: f64) -> Bound {
    let l = x.abs().log2();
    let t = y * l;
    if !t.is_finite() {
        // Zeros, infinities, NaNs: C's special cases, decided exactly.
        return ulps(3.0);
    }
    let e = 2f64.powi(-23);
    let log_err = (3.0 * e * l.abs()).max(if (0.5..=2.0).contains(&x.abs()) {
        2f64.powi(-21)
    } else {
        0.0
    });
    let t_err = y.abs() * log_err + e * t.abs();
    // Relative error of the result, as ulps (an ulp is at least ε/2 of it).
    ulps(2.0 * (t_err * std::f64::consts::LN_2) / e + 3.0 + 2.0 * t.abs() + 2.0)
}

type BinaryOp<X> =
    fn(&unigpu::Ops<'_>, &GpuArray<X>, &GpuArray<X>, &mut GpuArray<X>) -> unigpu::Result<()>;

#[allow(clippy::too_many_arguments)]
fn binary_case<X: T>(
    ctx: &Context,
    name: &str,
    op: BinaryOp<X>,
    (alo, ahi): (f64, f64),
    (blo, bhi): (f64, f64),
    reference: impl Fn(f64, f64) -> f64,
    bound: impl Fn(f64, f64) -> Bound,
    math: bool,
) {
    // Every special against every special, then random pairs.
    let mut a: Vec<X> = Vec::new();
    let mut b: Vec<X> = Vec::new();
    for &s in &SPECIAL {
        for &t in &SPECIAL {
            a.push(X::of(s));
            b.push(X::of(t));
        }
    }
    let n = a.len() + 2000;
    a.extend(inputs::<X>(n, alo, ahi).into_iter().skip(a.len()));
    b.extend(inputs::<X>(n, blo, bhi).into_iter().skip(b.len()));
    let (da, db) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
    let mut out = ctx.upload(&vec![X::of(7.0); n]).unwrap();
    let r = op(&ctx.ops(), &da, &db, &mut out);
    if math && is_math_f64_on_vulkan::<X>(ctx) {
        match r {
            Err(Error::Unsupported { .. }) => return,
            other => panic!("{name} of f64 on vulkan: {other:?}"),
        }
    }
    r.unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        let (x, y) = (a[i].f64(), b[i].f64());
        let want = reference(x, y);
        check(
            name,
            &format!("({x:e}, {y:e})"),
            got[i],
            want,
            bound(x, y),
            ctx.backend(),
        );
    }
}

/// numpy's minimum/maximum: NaN wins; -0 below +0.
fn np_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y {
        if x.is_sign_negative() { x } else { y }
    } else {
        x.min(y)
    }
}
fn np_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y {
        if x.is_sign_positive() { x } else { y }
    } else {
        x.max(y)
    }
}

fn binary_ops<X: T>(ctx: &Context) {
    let be = ctx.backend();
    let vk = be == Backend::Vulkan;
    let wide = X::P == 52;
    let k = if vk { 3.0 } else { 0.0 };
    binary_case::<X>(
        ctx,
        "div",
        |o, a, b, c| o.div(a, b, c),
        (-100.0, 100.0),
        (-100.0, 100.0),
        |x, y| x / y,
        move |_, _| if k == 0.0 { EXACT_ROUNDED } else { ulps(k) },
        false,
    );
    binary_case::<X>(
        ctx,
        "minimum",
        |o, a, b, c| o.minimum(a, b, c),
        (-10.0, 10.0),
        (-10.0, 10.0),
        np_min,
        |_, _| EXACT,
        false,
    );
    binary_case::<X>(
        ctx,
        "maximum",
        |o, a, b, c| o.maximum(a, b, c),
        (-10.0, 10.0),
        (-10.0, 10.0),
        np_max,
        |_, _| EXACT,
        false,
    );
    let k = lib(be, wide, 1.0, 4.0, 3.0);
    binary_case::<X>(
        ctx,
        "pow",
        |o, a, b, c| o.pow(a, b, c),
        (0.0625, 16.0),
        (-8.0, 8.0),
        f64::powf,
        move |x, y| if vk { vulkan_pow(x, y) } else { ulps(k) },
        true,
    );
}

/// Correctly rounded in the compute type, then (f16/bf16) rounded to T:
/// within an ulp of T of the f64 result.
const EXACT_ROUNDED: Bound = Bound {
    ulps: 0.5,
    abs: 0.0,
};

fn compare_ops<X: T>(ctx: &Context) {
    let mut a: Vec<X> = Vec::new();
    let mut b: Vec<X> = Vec::new();
    for &s in &SPECIAL {
        for &t in &SPECIAL {
            a.push(X::of(s));
            b.push(X::of(t));
        }
    }
    let n = a.len() + 1000;
    // Small integers, so equal pairs are common.
    let mut rng = rand::rng();
    while a.len() < n {
        a.push(X::of(rng.random_range(-4..4) as f64));
        b.push(X::of(rng.random_range(-4..4) as f64));
    }
    let (da, db) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
    type Cmp<X> =
        fn(&unigpu::Ops<'_>, &GpuArray<X>, &GpuArray<X>, &mut GpuArray<u8>) -> unigpu::Result<()>;
    type Case<X> = (&'static str, Cmp<X>, fn(f64, f64) -> bool);
    let cases: [Case<X>; 6] = [
        ("lt", |o, a, b, m| o.lt(a, b, m), |x, y| x < y),
        ("le", |o, a, b, m| o.le(a, b, m), |x, y| x <= y),
        ("gt", |o, a, b, m| o.gt(a, b, m), |x, y| x > y),
        ("ge", |o, a, b, m| o.ge(a, b, m), |x, y| x >= y),
        ("eq", |o, a, b, m| o.eq(a, b, m), |x, y| x == y),
        ("ne", |o, a, b, m| o.ne(a, b, m), |x, y| x != y),
    ];
    for (name, op, host) in cases {
        let mut m = ctx.upload(&vec![9u8; n]).unwrap();
        op(&ctx.ops(), &da, &db, &mut m).unwrap();
        let got = m.download().unwrap();
        for i in 0..n {
            let (x, y) = (a[i].f64(), b[i].f64());
            assert_eq!(
                got[i],
                host(x, y) as u8,
                "{name}({x}, {y}) on {:?}",
                ctx.backend()
            );
        }
    }
    // where: the mask picks.
    let mask: Vec<u8> = (0..n).map(|_| rng.random_range(0..3u8)).collect();
    let dm = ctx.upload(&mask).unwrap();
    let mut out = ctx.upload(&vec![X::of(7.0); n]).unwrap();
    ctx.ops().where_(&dm, &da, &db, &mut out).unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        let want = if mask[i] != 0 { a[i] } else { b[i] };
        if want.f64().is_nan() {
            // A NaN stays a NaN; its payload is not promised for f16/bf16
            // (they pass through f32, and CUDA's cvt gives one NaN).
            assert!(
                got[i].f64().is_nan(),
                "where at {i}: {:?} for NaN",
                got[i].f64()
            );
        } else {
            assert_eq!(got[i].f64().to_bits(), want.f64().to_bits(), "where at {i}");
        }
    }
}

fn all_types(ctx: &Context, f: [fn(&Context); 4]) {
    for g in f {
        g(ctx);
    }
}

on_every_backend!(unary_ops_match_the_host, |ctx| {
    all_types(
        ctx,
        [
            unary_ops::<f32>,
            unary_ops::<f64>,
            unary_ops::<f16>,
            unary_ops::<bf16>,
        ],
    );
});

on_every_backend!(binary_ops_match_the_host, |ctx| {
    all_types(
        ctx,
        [
            binary_ops::<f32>,
            binary_ops::<f64>,
            binary_ops::<f16>,
            binary_ops::<bf16>,
        ],
    );
});

on_every_backend!(comparisons_and_where_match_the_host, |ctx| {
    all_types(
        ctx,
        [
            compare_ops::<f32>,
            compare_ops::<f64>,
            compare_ops::<f16>,
            compare_ops::<bf16>,
        ],
    );
});

/// `[d0, d1, d2]` against `[d1, 1]`, `[1, d2]` and a scalar `[]`, into an
/// output that is a strided view (every other element of a wider array's
/// last axis), for div, maximum, lt and where.
fn broadcast_case<X: T>(ctx: &Context) {
    let mut rng = rand::rng();
    let (d0, d1, d2) = (
        rng.random_range(2..5),
        rng.random_range(1..6),
        rng.random_range(3..7),
    );
    let full = [d0, d1, d2];
    let at = |i: usize, j: usize, k: usize| (i * d1 + j) * d2 + k;
    let host_a = inputs::<X>(d0 * d1 * d2, -10.0, 10.0);
    let a = ctx.upload(&host_a).unwrap().reshape(full).unwrap();
    for (case, bshape) in [vec![d1, 1], vec![1, d2], vec![]].into_iter().enumerate() {
        let bn: usize = bshape.iter().product();
        let host_b = inputs::<X>(bn + SPECIAL.len(), 1.0, 10.0)[SPECIAL.len() - 3..][..bn].to_vec();
        let b = ctx
            .upload(&host_b)
            .unwrap()
            .reshape(bshape.clone())
            .unwrap();
        let b_at = |j: usize, k: usize| match case {
            0 => host_b[j],
            1 => host_b[k],
            _ => host_b[0],
        };
        // Outputs: every other element of the last axis of [d0, d1, 2 d2].
        let wide = |v: X| {
            ctx.upload(&vec![v; d0 * d1 * 2 * d2])
                .unwrap()
                .reshape([d0, d1, 2 * d2])
                .unwrap()
        };
        let mut out = wide(X::of(7.0));
        ctx.ops()
            .div(
                &a,
                &b,
                &mut out.view_mut().slice_step(2, 0..2 * d2, 2).unwrap(),
            )
            .unwrap();
        let mut mx = wide(X::of(7.0));
        ctx.ops()
            .maximum(
                &b,
                &a,
                &mut mx.view_mut().slice_step(2, 0..2 * d2, 2).unwrap(),
            )
            .unwrap();
        let mut mask = ctx
            .upload(&vec![9u8; d0 * d1 * 2 * d2])
            .unwrap()
            .reshape([d0, d1, 2 * d2])
            .unwrap();
        ctx.ops()
            .lt(
                &a,
                &b,
                &mut mask.view_mut().slice_step(2, 0..2 * d2, 2).unwrap(),
            )
            .unwrap();
        let mut w = wide(X::of(7.0));
        ctx.ops()
            .where_(
                &mask.view().slice_step(2, 0..2 * d2, 2).unwrap(),
                &a,
                &b,
                &mut w.view_mut().slice_step(2, 0..2 * d2, 2).unwrap(),
            )
            .unwrap();
        let (out, mx, mask, w) = (
            out.download().unwrap(),
            mx.download().unwrap(),
            mask.download().unwrap(),
            w.download().unwrap(),
        );
        let vk = ctx.backend() == Backend::Vulkan;
        for i in 0..d0 {
            for j in 0..d1 {
                for k in 0..2 * d2 {
                    let o = (i * d1 + j) * 2 * d2 + k;
                    if k % 2 == 1 {
                        // Between the view's elements: untouched.
                        assert_eq!(out[o].f64(), 7.0);
                        assert_eq!(mx[o].f64(), 7.0);
                        assert_eq!(mask[o], 9);
                        assert_eq!(w[o].f64(), 7.0);
                        continue;
                    }
                    let (x, y) = (host_a[at(i, j, k / 2)], b_at(j, k / 2));
                    let (xf, yf) = (x.f64(), y.f64());
                    let at = format!("{bshape:?} at ({i}, {j}, {})", k / 2);
                    let b = if vk { ulps(3.0) } else { EXACT_ROUNDED };
                    check("div", &at, out[o], xf / yf, b, ctx.backend());
                    check("maximum", &at, mx[o], np_max(yf, xf), EXACT, ctx.backend());
                    assert_eq!(mask[o], (xf < yf) as u8, "lt {at}");
                    let want = if xf < yf { x } else { y };
                    assert_eq!(w[o].f64().to_bits(), want.f64().to_bits(), "where {at}");
                }
            }
        }
    }
}

on_every_backend!(binary_ops_broadcast_into_strided_views, |ctx| {
    all_types(
        ctx,
        [
            broadcast_case::<f32>,
            broadcast_case::<f64>,
            broadcast_case::<f16>,
            broadcast_case::<bf16>,
        ],
    );
});

/// A unary op through views: a transposed input into a transposed output.
fn transposed_case<X: T>(ctx: &Context) {
    let (r, c) = (7, 5);
    let host = inputs::<X>(r * c, -3.0, 3.0);
    let a = ctx.upload(&host).unwrap().reshape([r, c]).unwrap();
    let mut out = ctx
        .upload(&vec![X::of(0.0); r * c])
        .unwrap()
        .reshape([r, c])
        .unwrap();
    // out.t()[j][i] = exp(a.t()[j][i]): out = exp(a).
    let res = ctx.ops().exp(&a.t(), &mut out.view_mut().t());
    if is_math_f64_on_vulkan::<X>(ctx) {
        assert!(matches!(res, Err(Error::Unsupported { .. })), "{res:?}");
        return;
    }
    res.unwrap();
    let got = out.download().unwrap();
    let vk = ctx.backend() == Backend::Vulkan;
    for (i, (&x, &g)) in host.iter().zip(&got).enumerate() {
        let b = if vk {
            ulps(3.0 + 2.0 * x.f64().abs())
        } else {
            ulps(2.0)
        };
        check(
            "exp (transposed)",
            &format!("at {i}"),
            g,
            x.f64().exp(),
            b,
            ctx.backend(),
        );
    }
}

on_every_backend!(unary_ops_read_and_write_views, |ctx| {
    all_types(
        ctx,
        [
            transposed_case::<f32>,
            transposed_case::<f64>,
            transposed_case::<f16>,
            transposed_case::<bf16>,
        ],
    );
});

on_every_backend!(mismatched_shapes_are_errors, |ctx| {
    let a = ctx.upload(&[1.0f32; 6]).unwrap().reshape([2, 3]).unwrap();
    let b = ctx.upload(&[1.0f32; 4]).unwrap().reshape([2, 2]).unwrap();
    let mut out = ctx.upload(&[0.0f32; 6]).unwrap().reshape([2, 3]).unwrap();
    let mut mask = ctx.upload(&[0u8; 6]).unwrap().reshape([3, 2]).unwrap();
    assert!(matches!(
        ctx.ops().div(&a, &b, &mut out),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ctx.ops().exp(&b, &mut out),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ctx.ops().lt(&a, &a, &mut mask),
        Err(Error::Shape { .. })
    ));
    // Nothing was written.
    assert_eq!(out.download().unwrap(), vec![0.0; 6]);
});

on_every_backend!(empty_arrays_are_no_ops, |ctx| {
    let e = ctx.upload::<f32>(&[]).unwrap().reshape([0, 3]).unwrap();
    let mut out = ctx.upload::<f32>(&[]).unwrap().reshape([0, 3]).unwrap();
    let mut mask = ctx.upload::<u8>(&[]).unwrap().reshape([0, 3]).unwrap();
    let row = ctx.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let ops = ctx.ops();
    ops.exp(&e, &mut out).unwrap();
    ops.round(&e, &mut out).unwrap();
    ops.div(&e, &row, &mut out).unwrap();
    ops.pow(&row, &e, &mut out).unwrap();
    ops.lt(&e, &row, &mut mask).unwrap();
    ops.where_(&mask, &e, &row, &mut out).unwrap();
    assert_eq!(out.download().unwrap(), Vec::<f32>::new());
});

// A capture records the kernels, the comparisons' u8 masks and `where_`
// included, and replays them on new inputs (the clamp's bounds and the
// scalar exponent live in the graph).
on_every_backend!(ops_and_masks_replay_in_graphs, |ctx| {
    let n = 1 + common::random_len(5000);
    let s = ctx.create_stream().unwrap();
    let x0 = inputs::<f32>(n, -4.0, 4.0);
    let mut x = ctx.upload(&x0).unwrap();
    let mut c = ctx.zeros::<f32>(n).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    let mut mask = ctx.zeros::<u8>(n).unwrap();
    let mut sel = ctx.zeros::<f32>(n).unwrap();
    ctx.sync().unwrap();
    let graph = s
        .capture(|s| {
            let ops = ctx.ops_on(s);
            ops.clamp(&x, -1.5, 2.0, &mut c)?;
            ops.pow_scalar(&c, 2.0, &mut out)?;
            ops.lt(&x, &c, &mut mask)?;
            ops.where_(&mask, &x, &c, &mut sel)
        })
        .unwrap();
    for _ in 0..2 {
        let x1 = inputs::<f32>(n, -4.0, 4.0);
        s.upload(&x1, &mut x).unwrap();
        graph.launch(&s).unwrap();
        let got = s.download(&out).unwrap();
        let (got_mask, got_sel) = (s.download(&mask).unwrap(), s.download(&sel).unwrap());
        for (i, (&x, &g)) in x1.iter().zip(&got).enumerate() {
            let want = torch_clamp(x as f64, -1.5, 2.0).powi(2);
            let b = if ctx.backend() == Backend::Vulkan {
                vulkan_pow(want.sqrt(), 2.0)
            } else {
                ulps(4.0)
            };
            check(
                "clamp then pow (replayed)",
                &format!("x = {x:e}"),
                g,
                want,
                b,
                ctx.backend(),
            );
            let clamped = x.clamp(-1.5, 2.0);
            let below = x < clamped;
            assert_eq!(got_mask[i], below as u8, "lt (replayed) at {i}: x = {x:e}");
            let picked = if below { x } else { clamped };
            assert_eq!(
                got_sel[i].to_bits(),
                picked.to_bits(),
                "where (replayed) at {i}: x = {x:e}"
            );
        }
    }
});
