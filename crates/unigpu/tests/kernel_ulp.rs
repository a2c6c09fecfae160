//! The ulp bounds of the kernel language's math functions (issue 26, item
//! 4): per function and backend, the largest error over a wide random
//! sample of its documented domain, asserted against the bound table of
//! docs/kernels.md ("Math functions: ulp bounds") and printed.
//!
//! The error of a result is its distance in ulps (representable values)
//! from the correctly rounded result, CUDA's convention: 0 is correctly
//! rounded. The reference of an f32 function is the f64 function of the
//! host rounded to f32: its own error is far below an f32 ulp (a tie
//! broken the wrong way by it is possible in principle and never seen).
//! `/` and `sqrt` in f64 are checked against the host's IEEE operations,
//! which are exact; the other f64 functions against the host's libm, which
//! is itself within about 1 ulp, so an f64 figure is ± 1 (and the CPU
//! backend, which calls the same libm, measures 0 by construction).
//!
//! WGSL states some bounds as absolute errors (sin and cos on [-π, π], log
//! and log2 on [0.5, 2]) or as "inherited" from an expression (sqrt, tan,
//! tanh): on vulkan the check is the ulp bound or the absolute bound,
//! whichever WGSL gives at that input, and an inherited bound is computed
//! from the parts' bounds as below.

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use unigpu::{Backend, Context, Grid};

/// One function of one argument, chosen by `which` (0..10, the order of
/// [`F32`]), so one shader serves them all.
#[unigpu::kernel]
fn unary_f32(x: &[f32], which: u32, out: &mut [f32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    let v = x[i];
    let mut r: f32 = 0.0;
    if which == 0 {
        r = v.sqrt();
    } else if which == 1 {
        r = rsqrt(v);
    } else if which == 2 {
        r = v.exp();
    } else if which == 3 {
        r = v.exp2();
    } else if which == 4 {
        r = v.ln();
    } else if which == 5 {
        r = v.log2();
    } else if which == 6 {
        r = v.sin();
    } else if which == 7 {
        r = v.cos();
    } else if which == 8 {
        r = v.tan();
    } else if which == 9 {
        r = v.tanh();
    }
    out[i] = r;
}

#[unigpu::kernel]
fn binary_f32(x: &[f32], y: &[f32], n: &[i32], out: &mut [f32], pow: &mut [f32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    out[i] = x[i] / y[i];
    pow[i] = x[i].powi(n[i]);
}

/// `pow` (x > 0: its special cases are kernel_lang.rs's) and `round`.
#[unigpu::kernel]
fn pow_round_f32(x: &[f32], y: &[f32], pow: &mut [f32], rnd: &mut [f32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    pow[i] = x[i].powf(y[i]);
    rnd[i] = (y[i] * 100.0).round();
}

/// `/` and `sqrt` in f64: on every backend with f64 (vulkan with
/// shader-f64).
#[unigpu::kernel]
fn exact_f64(x: &[f64], y: &[f64], quot: &mut [f64], root: &mut [f64]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    quot[i] = x[i] / y[i];
    root[i] = x[i].abs().sqrt();
}

/// The other f64 functions: cpu, cuda and torch (SPIR-V's GLSL.std.450 has
/// no f64 exp, log, sin, ..., so vulkan does not run it).
#[unigpu::kernel]
fn unary_f64(x: &[f64], which: u32, out: &mut [f64]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    let v = x[i];
    let mut r: f64 = 0.0;
    if which == 1 {
        r = rsqrt(v);
    } else if which == 2 {
        r = v.exp();
    } else if which == 3 {
        r = v.exp2();
    } else if which == 4 {
        r = v.ln();
    } else if which == 5 {
        r = v.log2();
    } else if which == 6 {
        r = v.sin();
    } else if which == 7 {
        r = v.cos();
    } else if which == 8 {
        r = v.tan();
    } else if which == 9 {
        r = v.tanh();
    }
    out[i] = r;
}

/// An f64 function: its `which`, name, domain, reference and bound on
/// cuda and torch.
type F64Case = (u32, &'static str, Domain, fn(f64) -> f64, f64);

/// Samples a function is checked on (fewer under a sanitizer, where
/// every load is checked: common::random_len says more).
const SAMPLES: usize = if cfg!(unigpu_sanitizer) {
    1 << 12
} else {
    1 << 16
};

/// Where a function is sampled.
#[derive(Clone, Copy)]
enum Domain {
    /// Uniform on [lo, hi].
    Uniform(f64, f64),
    /// Positive, 2^e with e uniform on [lo, hi] (every binade alike).
    Binades(f64, f64),
}

impl Domain {
    fn sample(self, rng: &mut StdRng) -> f64 {
        match self {
            Domain::Uniform(lo, hi) => rng.random_range(lo..=hi),
            Domain::Binades(lo, hi) => rng.random_range(lo..=hi).exp2(),
        }
    }
}

/// A bound at one input: ulps, and (where WGSL states one) an absolute
/// error also accepted.
struct Bound {
    ulps: f64,
    abs: f64,
}

fn ulps(n: f64) -> Bound {
    Bound { ulps: n, abs: 0.0 }
}

/// One f32 function: its name, domain (vulkan's where WGSL states its
/// bound on a narrower one), f64 reference, and bounds on cpu, cuda/torch
/// (the CUDA Math API's documented maximum errors, without fast math) and
/// vulkan (WGSL's, given `x` and the exact result).
struct F32Fn {
    name: &'static str,
    domain: Domain,
    vulkan_domain: Domain,
    reference: fn(f64) -> f64,
    cpu: f64,
    cuda: f64,
    vulkan: fn(f64, f64) -> Bound,
}

const PI: f64 = std::f64::consts::PI;
const F32_ULP1: f64 = 1.0 / 8_388_608.0; // 2^-23

const F32: &[F32Fn] = &[
    F32Fn {
        name: "sqrt",
        domain: Domain::Binades(-126.0, 127.0),
        vulkan_domain: Domain::Binades(-126.0, 127.0),
        reference: f64::sqrt,
        cpu: 0.0,
        cuda: 0.0,
        // Inherited from 1 / inverseSqrt(x): 2 + 2.5 ulp.
        vulkan: |_, _| ulps(5.0),
    },
    F32Fn {
        name: "rsqrt",
        domain: Domain::Binades(-126.0, 127.0),
        vulkan_domain: Domain::Binades(-126.0, 127.0),
        reference: |x| 1.0 / x.sqrt(),
        // 1 / sqrt(x), two roundings.
        cpu: 1.0,
        cuda: 2.0,
        vulkan: |_, _| ulps(2.0),
    },
    F32Fn {
        name: "exp",
        domain: Domain::Uniform(-87.0, 88.0),
        vulkan_domain: Domain::Uniform(-87.0, 88.0),
        reference: f64::exp,
        cpu: 1.0,
        cuda: 2.0,
        vulkan: |x, _| ulps(3.0 + 2.0 * x.abs()),
    },
    F32Fn {
        name: "exp2",
        domain: Domain::Uniform(-126.0, 127.0),
        vulkan_domain: Domain::Uniform(-126.0, 127.0),
        reference: f64::exp2,
        cpu: 1.0,
        cuda: 2.0,
        vulkan: |x, _| ulps(3.0 + 2.0 * x.abs()),
    },
    F32Fn {
        name: "ln",
        domain: Domain::Binades(-126.0, 127.0),
        vulkan_domain: Domain::Binades(-126.0, 127.0),
        reference: f64::ln,
        cpu: 1.0,
        cuda: 1.0,
        vulkan: |x, _| wgsl_log(x),
    },
    F32Fn {
        name: "log2",
        domain: Domain::Binades(-126.0, 127.0),
        vulkan_domain: Domain::Binades(-126.0, 127.0),
        reference: f64::log2,
        cpu: 1.0,
        cuda: 1.0,
        vulkan: |x, _| wgsl_log(x),
    },
    F32Fn {
        name: "sin",
        domain: Domain::Uniform(-1e4, 1e4),
        vulkan_domain: Domain::Uniform(-PI, PI),
        reference: f64::sin,
        cpu: 1.0,
        cuda: 2.0,
        vulkan: |_, _| Bound {
            ulps: 0.0,
            abs: (-11f64).exp2(),
        },
    },
    F32Fn {
        name: "cos",
        domain: Domain::Uniform(-1e4, 1e4),
        vulkan_domain: Domain::Uniform(-PI, PI),
        reference: f64::cos,
        cpu: 1.0,
        cuda: 2.0,
        vulkan: |_, _| Bound {
            ulps: 0.0,
            abs: (-11f64).exp2(),
        },
    },
    F32Fn {
        name: "tan",
        domain: Domain::Uniform(-1.5, 1.5),
        vulkan_domain: Domain::Uniform(-1.5, 1.5),
        reference: f64::tan,
        cpu: 1.0,
        cuda: 4.0,
        // Inherited from sin(x) / cos(x): each within 2^-11, then a
        // division within 2.5 ulp.
        vulkan: |x, t| Bound {
            ulps: 3.0,
            abs: (-11f64).exp2() * (1.0 + t.abs()) / x.cos().abs(),
        },
    },
    F32Fn {
        name: "tanh",
        domain: Domain::Uniform(-10.0, 10.0),
        vulkan_domain: Domain::Uniform(-10.0, 10.0),
        reference: f64::tanh,
        cpu: 2.0,
        cuda: 2.0,
        // Inherited from sinh(x) / cosh(x), each from exp(±x) within
        // 3 + 2|x| ulp: about twice that, absolute, on a result below 1.
        vulkan: |x, _| Bound {
            ulps: 3.0,
            abs: 2.0 * (3.5 + 2.0 * x.abs()) * F32_ULP1,
        },
    },
];

/// WGSL's log and log2: 3 ulp outside [0.5, 2], 2^-21 absolute inside.
fn wgsl_log(x: f64) -> Bound {
    if (0.5..=2.0).contains(&x) {
        Bound {
            ulps: 0.0,
            abs: (-21f64).exp2(),
        }
    } else {
        ulps(3.0)
    }
}

/// `x` as a signed count of representable values from +0.
fn ord32(x: f32) -> i64 {
    let b = x.to_bits();
    let m = (b & 0x7fff_ffff) as i64;
    if b >> 31 == 1 { -m } else { m }
}

fn ord64(x: f64) -> i128 {
    let b = x.to_bits();
    let m = (b & 0x7fff_ffff_ffff_ffff) as i128;
    if b >> 63 == 1 { -m } else { m }
}

/// Ulps between `got` and `want` (both f32); infinite for a NaN on one
/// side only.
fn dist32(got: f32, want: f32) -> f64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0.0,
        (false, false) => (ord32(got) - ord32(want)).unsigned_abs() as f64,
        _ => f64::INFINITY,
    }
}

fn dist64(got: f64, want: f64) -> f64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0.0,
        (false, false) => (ord64(got) - ord64(want)).unsigned_abs() as f64,
        _ => f64::INFINITY,
    }
}

fn backend_name(ctx: &Context) -> &'static str {
    match ctx.backend() {
        Backend::Cpu => "cpu",
        Backend::Cuda => "cuda",
        Backend::Torch => "torch",
        Backend::Vulkan => "vulkan",
    }
}

/// Whether the result is a normal f32 (or zero): lavapipe flushes
/// subnormals, which WGSL allows, so samples whose input or correctly
/// rounded result is subnormal are not drawn.
fn normal32(v: f64) -> bool {
    let f = v as f32;
    f == 0.0 || f.is_normal()
}

on_every_backend!(math_functions_are_within_their_ulp_bounds, |ctx| {
    let seed: u64 = rand::rng().random();
    let mut rng = StdRng::seed_from_u64(seed);
    let vulkan = ctx.backend() == Backend::Vulkan;
    let be = backend_name(ctx);
    let k = unary_f32::kernel(ctx).unwrap();
    let mut failures = Vec::new();
    for (which, f) in F32.iter().enumerate() {
        let domain = if vulkan { f.vulkan_domain } else { f.domain };
        let mut xs = Vec::with_capacity(SAMPLES);
        while xs.len() < SAMPLES {
            let x = domain.sample(&mut rng) as f32;
            if normal32(x as f64) && normal32((f.reference)(x as f64)) {
                xs.push(x);
            }
        }
        let x = ctx.upload(&xs).unwrap();
        let mut out = ctx.zeros::<f32>(SAMPLES).unwrap();
        k.launch(ctx, Grid::for_elems(SAMPLES), (&x, which as u32, &mut out))
            .unwrap();
        let got = out.download().unwrap();
        let (mut worst, mut at) = (0.0f64, 0.0f32);
        let mut over = None;
        for (&x, &g) in xs.iter().zip(&got) {
            let exact = (f.reference)(x as f64);
            let d = dist32(g, exact as f32);
            if d > worst {
                (worst, at) = (d, x);
            }
            let ok = match ctx.backend() {
                Backend::Cpu => d <= f.cpu,
                Backend::Cuda | Backend::Torch => d <= f.cuda,
                Backend::Vulkan => {
                    let b = (f.vulkan)(x as f64, exact);
                    // An error of b ulps from the exact result is at most
                    // b + 1/2 from the correctly rounded one.
                    d <= (b.ulps + 0.5).floor() || (g as f64 - exact).abs() <= b.abs
                }
            };
            if !ok && over.is_none() {
                over = Some(format!(
                    "{}({x:e}) = {g:e}, exact {exact:e}, {d} ulp",
                    f.name
                ));
            }
        }
        eprintln!("{be} f32 {:6}: max {worst} ulp (at {at:e})", f.name);
        if let Some(o) = over {
            failures.push(o);
        }
    }

    // `/` (correctly rounded on cpu, cuda and torch; WGSL: 2.5 ulp where
    // |y| is in [2^-126, 2^126]) and powi (the same square-and-multiply on
    // every backend: bit for bit the host's, within |n| ulp of x^n).
    let k = binary_f32::kernel(ctx).unwrap();
    let binade = |rng: &mut StdRng| {
        let m = rng.random_range(-60.0..60.0f64).exp2() as f32;
        if rng.random() { m } else { -m }
    };
    let xs: Vec<f32> = (0..SAMPLES).map(|_| binade(&mut rng)).collect();
    let ys: Vec<f32> = (0..SAMPLES).map(|_| binade(&mut rng)).collect();
    let px: Vec<f32> = (0..SAMPLES)
        .map(|_| rng.random_range(0.5..2.0f32) * if rng.random() { 1.0 } else { -1.0 })
        .collect();
    let ns: Vec<i32> = (0..SAMPLES).map(|_| rng.random_range(-8..=8)).collect();
    let (x, y, n) = (
        ctx.upload(&xs).unwrap(),
        ctx.upload(&ys).unwrap(),
        ctx.upload(&ns).unwrap(),
    );
    let mut quot = ctx.zeros::<f32>(SAMPLES).unwrap();
    let mut pow = ctx.zeros::<f32>(SAMPLES).unwrap();
    k.launch(
        ctx,
        Grid::for_elems(SAMPLES),
        (&x, &y, &n, &mut quot, &mut pow),
    )
    .unwrap();
    let q = quot.download().unwrap();
    let div_bound = if vulkan { 3.0 } else { 0.0 };
    let worst = (0..SAMPLES)
        .map(|i| (dist32(q[i], ((xs[i] as f64) / (ys[i] as f64)) as f32), i))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
    eprintln!(
        "{be} f32 /     : max {} ulp (at {:e} / {:e})",
        worst.0, xs[worst.1], ys[worst.1]
    );
    if worst.0 > div_bound {
        failures.push(format!(
            "{:e} / {:e}: {} ulp",
            xs[worst.1], ys[worst.1], worst.0
        ));
    }
    // powi on its own inputs (x in ±[0.5, 2], so every result is normal).
    let px_dev = ctx.upload(&px).unwrap();
    k.launch(
        ctx,
        Grid::for_elems(SAMPLES),
        (&px_dev, &y, &n, &mut quot, &mut pow),
    )
    .unwrap();
    let p = pow.download().unwrap();
    let mut worst = 0.0f64;
    for i in 0..SAMPLES {
        let (v, m) = (px[i], ns[i]);
        let (mut r, mut b, mut e) = (1.0f32, v, m.unsigned_abs());
        while e > 0 {
            if e & 1 == 1 {
                r *= b;
            }
            b *= b;
            e >>= 1;
        }
        let host = if m < 0 { 1.0 / r } else { r };
        // A negative power ends in a division, which WGSL lets a driver
        // round within 2.5 ulp (NVIDIA's does: seen on an H100): there the
        // last step is judged by that bound, everywhere else bit for bit.
        if vulkan && m < 0 {
            let d = dist32(p[i], host);
            if d > div_bound {
                failures.push(format!(
                    "powi({v:e}, {m}) = {:e}, the host's {host:e}: {d} ulp past WGSL's division bound",
                    p[i]
                ));
                break;
            }
        } else if p[i].to_bits() != host.to_bits() {
            failures.push(format!(
                "powi({v:e}, {m}) = {:e}, the host's {host:e}",
                p[i]
            ));
            break;
        }
        let d = dist32(p[i], (v as f64).powi(m) as f32);
        worst = worst.max(d);
        let division = if vulkan && m < 0 { div_bound } else { 0.0 };
        if d > m.unsigned_abs() as f64 + 1.0 + division {
            failures.push(format!("powi({v:e}, {m}) = {:e}: {d} ulp", p[i]));
            break;
        }
    }
    eprintln!("{be} f32 powi  : max {worst} ulp (|n| <= 8)");

    // pow on x in [2^-10, 2^10], y in [-10, 10] with a normal result:
    // cpu glibc's powf (1 ulp as measured), cuda's documented 4 ulp, and on
    // vulkan WGSL's "inherited from exp2(y * log2(x))": log2's error (3
    // ulp, or 2^-21 absolute on [0.5, 2]) times |y|, the product's
    // rounding, then exp2's 3 + 2|t| ulp, with t = y log2(x). And round,
    // half away from zero: bit for bit Rust's everywhere.
    let k = pow_round_f32::kernel(ctx).unwrap();
    let (mut xs, mut ys) = (Vec::with_capacity(SAMPLES), Vec::with_capacity(SAMPLES));
    while xs.len() < SAMPLES {
        let x = rng.random_range(-10.0..10.0f64).exp2() as f32;
        let y = rng.random_range(-10.0..10.0f64) as f32;
        if normal32((x as f64).powf(y as f64)) {
            xs.push(x);
            ys.push(y);
        }
    }
    let (x, y) = (ctx.upload(&xs).unwrap(), ctx.upload(&ys).unwrap());
    let mut pow = ctx.zeros::<f32>(SAMPLES).unwrap();
    let mut rnd = ctx.zeros::<f32>(SAMPLES).unwrap();
    k.launch(ctx, Grid::for_elems(SAMPLES), (&x, &y, &mut pow, &mut rnd))
        .unwrap();
    let (p, r) = (pow.download().unwrap(), rnd.download().unwrap());
    let mut worst = 0.0f64;
    for i in 0..SAMPLES {
        let (xv, yv) = (xs[i] as f64, ys[i] as f64);
        let exact = xv.powf(yv);
        let d = dist32(p[i], exact as f32);
        worst = worst.max(d);
        let bound = match ctx.backend() {
            Backend::Cpu => 1.0,
            Backend::Cuda | Backend::Torch => 4.0,
            Backend::Vulkan => {
                let l = xv.log2();
                let log_err = if (0.5..=2.0).contains(&xv) {
                    (-21f64).exp2()
                } else {
                    3.0 * l.abs().max(f64::MIN_POSITIVE) * F32_ULP1
                };
                let t = yv * l;
                let dt = yv.abs() * log_err + t.abs() * F32_ULP1;
                (dt * std::f64::consts::LN_2 / F32_ULP1 + 3.0 + 2.0 * t.abs() + 0.5).floor()
            }
        };
        if d > bound {
            failures.push(format!(
                "powf({:e}, {:e}) = {:e}, exact {exact:e}: {d} ulp (bound {bound})",
                xs[i], ys[i], p[i]
            ));
            break;
        }
        let want = (ys[i] * 100.0).round();
        if r[i].to_bits() != want.to_bits() {
            failures.push(format!(
                "round({:e}) = {:e}, not {want:e}",
                ys[i] * 100.0,
                r[i]
            ));
            break;
        }
    }
    eprintln!("{be} f32 pow   : max {worst} ulp; round: bit for bit");

    // f64: `/` and sqrt against the host's exact operations.
    let f64_ok = !vulkan || common::detail(ctx, "shader-f64").is_some_and(|v| v == "yes");
    if f64_ok {
        let binade = |rng: &mut StdRng| {
            let m = rng.random_range(-500.0..500.0f64).exp2();
            if rng.random() { m } else { -m }
        };
        let xs: Vec<f64> = (0..SAMPLES).map(|_| binade(&mut rng)).collect();
        let ys: Vec<f64> = (0..SAMPLES).map(|_| binade(&mut rng)).collect();
        let k = exact_f64::kernel(ctx).unwrap();
        let (x, y) = (ctx.upload(&xs).unwrap(), ctx.upload(&ys).unwrap());
        let mut quot = ctx.zeros::<f64>(SAMPLES).unwrap();
        let mut root = ctx.zeros::<f64>(SAMPLES).unwrap();
        k.launch(
            ctx,
            Grid::for_elems(SAMPLES),
            (&x, &y, &mut quot, &mut root),
        )
        .unwrap();
        let (q, r) = (quot.download().unwrap(), root.download().unwrap());
        let bound = |b: f64| if vulkan { b } else { 0.0 };
        let dq = (0..SAMPLES)
            .map(|i| dist64(q[i], xs[i] / ys[i]))
            .fold(0.0, f64::max);
        let dr = (0..SAMPLES)
            .map(|i| dist64(r[i], xs[i].abs().sqrt()))
            .fold(0.0, f64::max);
        eprintln!("{be} f64 /     : max {dq} ulp");
        eprintln!("{be} f64 sqrt  : max {dr} ulp");
        if dq > bound(3.0) {
            failures.push(format!("f64 /: {dq} ulp"));
        }
        if dr > bound(5.0) {
            failures.push(format!("f64 sqrt: {dr} ulp"));
        }
    }

    // The other f64 functions (not on vulkan), against the host's libm.
    if !vulkan {
        let k = unary_f64::kernel(ctx).unwrap();
        // CUDA's documented f64 bounds, plus 1 for the reference's own error.
        let cases: &[F64Case] = &[
            (
                1,
                "rsqrt",
                Domain::Binades(-1000.0, 1000.0),
                |x| 1.0 / x.sqrt(),
                2.0,
            ),
            (2, "exp", Domain::Uniform(-700.0, 700.0), f64::exp, 2.0),
            (3, "exp2", Domain::Uniform(-1000.0, 1000.0), f64::exp2, 2.0),
            (4, "ln", Domain::Binades(-1000.0, 1000.0), f64::ln, 2.0),
            (5, "log2", Domain::Binades(-1000.0, 1000.0), f64::log2, 2.0),
            (6, "sin", Domain::Uniform(-1e4, 1e4), f64::sin, 3.0),
            (7, "cos", Domain::Uniform(-1e4, 1e4), f64::cos, 3.0),
            (8, "tan", Domain::Uniform(-1.5, 1.5), f64::tan, 3.0),
            // CUDA documents 2; measured 3 against the host's libm on an
            // H100 (the reference's own ulp).
            (9, "tanh", Domain::Uniform(-10.0, 10.0), f64::tanh, 3.0),
        ];
        for &(which, name, domain, reference, cuda) in cases {
            let xs: Vec<f64> = (0..SAMPLES).map(|_| domain.sample(&mut rng)).collect();
            let x = ctx.upload(&xs).unwrap();
            let mut out = ctx.zeros::<f64>(SAMPLES).unwrap();
            k.launch(ctx, Grid::for_elems(SAMPLES), (&x, which, &mut out))
                .unwrap();
            let got = out.download().unwrap();
            let worst = (0..SAMPLES)
                .map(|i| dist64(got[i], reference(xs[i])))
                .fold(0.0, f64::max);
            eprintln!("{be} f64 {name:6}: max {worst} ulp (vs the host's libm)");
            let bound = if ctx.backend() == Backend::Cpu {
                0.0
            } else {
                cuda
            };
            if worst > bound {
                failures.push(format!("f64 {name}: {worst} ulp"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "over the bounds of docs/kernels.md on {be} (sample seed {seed}):\n{}",
        failures.join("\n")
    );
});
