//! Built-in ops on every backend, against host references computed in f64
//! (or exactly as the device computes, where rounding is deterministic).

mod common;

use common::{Random, assert_same, random_len, random_vec, sizes};
use unigpu::{Context, Error, Float, bf16, f16};

/// Relative tolerance of one rounding to `T`, loosened for transcendental
/// functions whose device and host versions differ by a few ulps.
trait Tol: Float + Random {
    const EPS: f64;
    fn f64(self) -> f64 {
        self.to_acc().into()
    }
}
impl Tol for f32 {
    const EPS: f64 = 1.2e-7;
}
impl Tol for f64 {
    const EPS: f64 = 2.3e-16;
}
impl Tol for f16 {
    const EPS: f64 = 9.8e-4;
}
impl Tol for bf16 {
    const EPS: f64 = 7.9e-3;
}

/// Values in [-4, 4]: products and sums stay inside f16's range.
fn small<T: Tol>(n: usize) -> Vec<T> {
    random_vec::<f64>(n)
        .iter()
        .map(|v| T::from_acc(num_traits::cast(v / 2.5e5).unwrap()))
        .collect()
}

#[track_caller]
fn assert_close<T: Tol>(expected: &[f64], actual: &[T], ulps: f64) {
    assert_eq!(expected.len(), actual.len());
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        let a = a.f64();
        let tol = ulps * T::EPS * e.abs().max(1e-30) + 1e-300;
        assert!(
            (e - a).abs() <= tol,
            "element {i}: expected {e}, got {a} ({})",
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
        let want: Vec<T> = ha
            .iter()
            .zip(&hb)
            .map(|(x, y)| {
                T::from_acc(num_traits::Float::mul_add(
                    alpha.to_acc(),
                    x.to_acc(),
                    y.to_acc(),
                ))
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
            8.0,
        );
        ctx.ops().tanh(&x, &mut out).unwrap();
        assert_close(
            &xs.iter().map(|v| v.tanh()).collect::<Vec<_>>(),
            &out.download().unwrap(),
            8.0,
        );
    }
}
on_every_backend!(relu_sigmoid_tanh, |ctx| for_float_types!(activations, ctx));

/// |reduction error| <= slack * eps * sum(|terms|) (+ the final rounding to T).
fn check_reduction<T: Tol>(what: &str, expected: f64, abs_sum: f64, got: T, slack: f64) {
    let got = got.f64();
    let tol = slack * T::EPS * abs_sum + T::EPS * expected.abs() + 1e-300;
    assert!(
        (expected - got).abs() <= tol,
        "{what} ({}): expected {expected}, got {got}, tol {tol}",
        std::any::type_name::<T>()
    );
}

fn reductions<T: Tol>(ctx: &Context) {
    for n in sizes() {
        let (hx, hy) = (small::<T>(n), small::<T>(n));
        let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
        let xs: Vec<f64> = hx.iter().map(|v| v.f64()).collect();
        let ys: Vec<f64> = hy.iter().map(|v| v.f64()).collect();
        let abs: f64 = xs.iter().map(|v| v.abs()).sum();
        check_reduction(
            "sum",
            xs.iter().sum(),
            abs,
            ctx.ops().sum(&x).unwrap(),
            64.0,
        );
        let dot: f64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
        let dot_abs: f64 = xs.iter().zip(&ys).map(|(a, b)| (a * b).abs()).sum();
        check_reduction("dot", dot, dot_abs, ctx.ops().dot(&x, &y).unwrap(), 64.0);
        if n > 0 {
            let max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(ctx.ops().max(&x).unwrap().f64(), max);
        }
    }
}
on_every_backend!(sum_dot_max, |ctx| for_float_types!(reductions, ctx));

on_every_backend!(reductions_over_ten_million_elements, |ctx| {
    let n = 10_000_000;
    let hx = random_vec::<f32>(n);
    let hy = random_vec::<f32>(n);
    let (x, y) = (ctx.upload(&hx).unwrap(), ctx.upload(&hy).unwrap());
    let sum: f64 = hx.iter().map(|&v| v as f64).sum();
    let abs: f64 = hx.iter().map(|&v| (v as f64).abs()).sum();
    check_reduction("sum 1e7", sum, abs, ctx.ops().sum(&x).unwrap(), 64.0);
    let dot: f64 = hx.iter().zip(&hy).map(|(&a, &b)| a as f64 * b as f64).sum();
    let dot_abs: f64 = hx
        .iter()
        .zip(&hy)
        .map(|(&a, &b)| (a as f64 * b as f64).abs())
        .sum();
    check_reduction(
        "dot 1e7",
        dot,
        dot_abs,
        ctx.ops().dot(&x, &y).unwrap(),
        64.0,
    );
    let max = hx.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    assert_eq!(ctx.ops().max(&x).unwrap(), max);
});

fn matmul<T: Tol>(ctx: &Context) {
    for (m, k, n) in [
        (1, 1, 1),
        (33, 65, 17),
        (128, 96, 64),
        (random_len(50), random_len(50), random_len(50)),
        (3, 0, 4),
    ] {
        let (ha, hb) = (small::<T>(m * k), small::<T>(k * n));
        let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
        let mut c = ctx.upload(&random_vec::<T>(m * n)).unwrap();
        ctx.ops().matmul(&a, &b, &mut c, (m, k, n)).unwrap();
        let got = c.download().unwrap();
        for i in 0..m {
            for j in 0..n {
                let (mut want, mut abs) = (0.0, 0.0);
                for p in 0..k {
                    let t = ha[i * k + p].f64() * hb[p * n + j].f64();
                    want += t;
                    abs += t.abs();
                }
                check_reduction(
                    &format!("matmul {m}x{k}x{n} [{i},{j}]"),
                    want,
                    abs,
                    got[i * n + j],
                    4.0 * k as f64 + 4.0,
                );
            }
        }
    }
}
on_every_backend!(matmul_against_a_host_reference, |ctx| for_float_types!(
    matmul, ctx
));

on_every_backend!(op_errors_are_typed, |ctx| {
    let n = random_len(100);
    let a = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let b = ctx.upload(&random_vec::<f32>(n + 1)).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    assert!(matches!(
        ctx.ops().add(&a, &b, &mut out),
        Err(Error::SizeMismatch { .. })
    ));
    assert!(matches!(
        ctx.ops().dot(&a, &b),
        Err(Error::SizeMismatch { .. })
    ));
    let empty = ctx.zeros::<f64>(0).unwrap();
    assert!(matches!(
        ctx.ops().max(&empty),
        Err(Error::SizeMismatch { .. })
    ));
    assert_eq!(ctx.ops().sum(&empty).unwrap(), 0.0);
    // 5 elements can never be a 2×3 matrix (a random length could be).
    let five = ctx.zeros::<f32>(5).unwrap();
    let mut c = ctx.zeros::<f32>(4).unwrap();
    assert!(matches!(
        ctx.ops().matmul(&five, &five, &mut c, (2, 3, 2)),
        Err(Error::SizeMismatch { .. })
    ));
    // Nothing was written by the refused calls.
    assert_same(&vec![0.0f32; n], &out.download().unwrap());
});

on_every_backend!(ops_on_a_side_stream_are_ordered, |ctx| {
    let s = ctx.create_stream().unwrap();
    let n = random_len(1 << 16);
    let hx = random_vec::<f32>(n);
    let x = ctx.upload(&hx).unwrap();
    let mut y = ctx.zeros::<f32>(n).unwrap();
    ctx.ops_on(&s).axpy(2.0, &x, &mut y).unwrap();
    // The default stream's read waits for the side stream's write.
    let sum = ctx.ops().sum(&y).unwrap() as f64;
    let want: f64 = hx.iter().map(|&v| (2.0f32 * v) as f64).sum();
    let abs: f64 = hx.iter().map(|&v| (2.0 * v as f64).abs()).sum();
    check_reduction("sum after axpy", want, abs, sum as f32, 64.0);
});
