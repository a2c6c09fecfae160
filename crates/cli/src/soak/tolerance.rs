//! How far an op's result may be from the exact value: the bounds of the
//! facade's own op tests (crates/unigpu/tests/ops.rs, which says where
//! each comes from), so the soak holds every backend to what those tests
//! hold it to. References are computed in f64 with compensated sums, so
//! their own error is far below the bounds.

use unigpu::Backend;

use super::values::SoakFloat;

/// Σ terms, correctly rounded to f64 but for a few ulps (Neumaier).
pub fn accurate_sum(terms: impl IntoIterator<Item = f64>) -> f64 {
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

/// Σ x·y as [`accurate_sum`] does it, each product split exactly in two.
pub fn accurate_dot(x: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    accurate_sum(x.into_iter().flat_map(|(a, b)| {
        let p = a * b;
        [p, a.mul_add(b, -p)]
    }))
}

/// The relative error of sigmoid and tanh: a few ulps of `T::Acc` on the
/// device and in the host's libm, then one rounding to `T`.
pub fn transcendental<T: SoakFloat>() -> f64 {
    let acc = 6.0 * T::ACC_EPS;
    acc + T::rounding() * (1.0 + acc)
}

/// The roundings any one term of an `n`-term reduction can go through
/// (CUDA's and vulkan's two-pass trees, torch's, the CPU's lanes), with
/// room to spare.
fn reduction_depth(n: usize) -> f64 {
    let threads = n.div_ceil(256).clamp(1, 1024) * 256;
    let serial = n.div_ceil(threads);
    let log2 = (usize::BITS - n.leading_zeros()) as usize;
    (serial + 2 * log2 + 32) as f64
}

/// The bound on |result − exact| of a sum or dot of `n` terms whose
/// magnitudes add up to `abs_sum`, on `backend`.
pub fn reduction<T: SoakFloat>(backend: Backend, n: usize, expected: f64, abs_sum: f64) -> f64 {
    let mut acc = reduction_depth(n) * T::ACC_EPS;
    match backend {
        Backend::Cpu => acc += n as f64 * f64::EPSILON,
        Backend::Torch => acc += n.div_ceil(32 * 1024) as f64 * T::ACC_EPS,
        Backend::Cuda | Backend::Vulkan => {}
    }
    acc * abs_sum * (1.0 + T::EPS) + T::EPS * expected.abs() + T::TINY
}

/// The bound on one entry of a matmul with inner dimension `k`; cuBLAS and
/// torch (`split_k`) may split k for f16/bf16 and add the parts in `T`.
/// Vulkan's shader never does, and its slack would hide a matmul that
/// accumulates in `T`.
pub fn matmul<T: SoakFloat>(split_k: bool, k: usize, expected: f64, abs_sum: f64) -> f64 {
    let mut tol = (k as f64 + 2.0) * T::ACC_EPS * abs_sum * (1.0 + T::EPS)
        + T::EPS * expected.abs()
        + T::TINY;
    if split_k && T::EPS > T::ACC_EPS {
        tol += 4.0 * T::EPS * abs_sum;
    }
    tol
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use unigpu::{bf16, f16};

    use super::*;
    use crate::soak::values::small;

    /// The bounds pass the right answer rounded to `T` and reject a sum
    /// or dot of zero.
    fn rejects_wrong_reductions<T: SoakFloat>(rng: &mut StdRng) {
        let n = rng.random_range(2_000..20_000);
        let (xs, ys) = loop {
            let (x, y): (Vec<T>, Vec<T>) = (small(rng, n), small(rng, n));
            let xs: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
            let ys: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
            let sum = accurate_sum(xs.iter().copied());
            let dot = accurate_dot(xs.iter().copied().zip(ys.iter().copied()));
            // Draws whose true result is near zero say nothing about zero.
            if sum.abs() > 50.0 && dot.abs() > 50.0 {
                break (xs, ys);
            }
        };
        let sum = accurate_sum(xs.iter().copied());
        let sum_abs = accurate_sum(xs.iter().map(|v| v.abs()));
        let dot = accurate_dot(xs.iter().copied().zip(ys.iter().copied()));
        let dot_abs = accurate_dot(xs.iter().map(|v| v.abs()).zip(ys.iter().map(|v| v.abs())));
        for backend in Backend::ALL {
            for (what, want, abs) in [("sum", sum, sum_abs), ("dot", dot, dot_abs)] {
                let tol = reduction::<T>(backend, n, want, abs);
                let rounded = T::from_f64(want).to_f64();
                assert!(
                    (want - rounded).abs() <= tol,
                    "the right {what} rounded to T fails on {backend}"
                );
                assert!(tol < want.abs(), "a {what} of 0 passes on {backend}");
            }
        }
    }

    #[test]
    fn reduction_bounds_reject_wrong_answers() {
        let mut rng = StdRng::seed_from_u64(rand::rng().random());
        rejects_wrong_reductions::<f32>(&mut rng);
        rejects_wrong_reductions::<f64>(&mut rng);
        rejects_wrong_reductions::<f16>(&mut rng);
        rejects_wrong_reductions::<bf16>(&mut rng);
    }

    #[test]
    fn matmul_bound_rejects_a_zero_entry() {
        let mut rng = StdRng::seed_from_u64(rand::rng().random());
        let k = rng.random_range(1..200);
        // One row of all-positive products: Σ|a·b| = Σa·b, and zero is
        // far outside (k + 2)·ε·Σ|a·b|.
        let a: Vec<f64> = (0..k).map(|_| rng.random_range(0.5..4.0)).collect();
        let b: Vec<f64> = (0..k).map(|_| rng.random_range(0.5..4.0)).collect();
        let want = accurate_dot(a.iter().copied().zip(b.iter().copied()));
        for split_k in [false, true] {
            assert!(matmul::<f32>(split_k, k, want, want) < want);
            assert!(matmul::<bf16>(split_k, k, want, want) < want);
        }
    }
}
