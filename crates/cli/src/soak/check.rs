//! The element-by-element comparisons every step's result goes through.
//! Each returns the first element that is wrong (or `None`), so that a
//! mismatch can be reported with its index and both values.

use std::fmt::Debug;

use serde::Serialize;

use super::values::SoakElement;

/// The first element of a result that differs from the host's reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Index of the first wrong element (for a length mismatch: the
    /// shorter length).
    pub index: usize,
    /// Elements in the reference.
    pub len: usize,
    pub expected: String,
    pub got: String,
    /// The absolute tolerance the element was held to, for the checks
    /// that have one.
    pub tolerance: Option<f64>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "element {} of {}: expected {}, got {}",
            self.index, self.len, self.expected, self.got
        )?;
        if let Some(tol) = self.tolerance {
            write!(f, " (tolerance {tol:e})")?;
        }
        Ok(())
    }
}

fn length_difference(expected: usize, got: usize) -> Option<Difference> {
    (expected != got).then(|| Difference {
        index: expected.min(got),
        len: expected,
        expected: format!("{expected} elements"),
        got: format!("{got} elements"),
        tolerance: None,
    })
}

/// The first element whose bits differ: transfers, copies and fills must
/// carry every bit pattern unchanged (NaN payloads and -0 included).
pub fn first_bit_difference<T: SoakElement>(expected: &[T], got: &[T]) -> Option<Difference> {
    first_where(expected, got, |e, g| {
        bytemuck::bytes_of(e) == bytemuck::bytes_of(g)
    })
}

/// The first element that is not `==` the reference: results the op
/// computes exactly (one rounding), where -0 and +0 are both right.
pub fn first_unequal<T: SoakElement>(expected: &[T], got: &[T]) -> Option<Difference> {
    first_where(expected, got, |e, g| e == g)
}

fn first_where<T: Debug>(
    expected: &[T],
    got: &[T],
    same: impl Fn(&T, &T) -> bool,
) -> Option<Difference> {
    if let Some(d) = length_difference(expected.len(), got.len()) {
        return Some(d);
    }
    let index = expected.iter().zip(got).position(|(e, g)| !same(e, g))?;
    Some(Difference {
        index,
        len: expected.len(),
        expected: format!("{:?}", expected[index]),
        got: format!("{:?}", got[index]),
        tolerance: None,
    })
}

/// The first element `i` with |expected − got| > `tolerance(i, expected)`;
/// a NaN reference wants a NaN, an infinite one the same infinity.
pub fn first_outside(
    expected: &[f64],
    got: &[f64],
    tolerance: impl Fn(usize, f64) -> f64,
) -> Option<Difference> {
    if let Some(d) = length_difference(expected.len(), got.len()) {
        return Some(d);
    }
    expected
        .iter()
        .zip(got)
        .enumerate()
        .find_map(|(i, (&e, &g))| {
            let tol = tolerance(i, e);
            let ok = if e.is_nan() {
                g.is_nan()
            } else if e.is_infinite() {
                g == e
            } else {
                (e - g).abs() <= tol
            };
            (!ok).then(|| Difference {
                index: i,
                len: expected.len(),
                expected: format!("{e:e}"),
                got: format!("{g:e}"),
                tolerance: Some(tol),
            })
        })
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use unigpu::{bf16, f16};

    use super::*;
    use crate::soak::values::{any_bits, small};

    fn rng() -> StdRng {
        StdRng::seed_from_u64(rand::rng().random())
    }

    /// A copy of `v` with one bit of element `i` flipped.
    fn corrupted<T: SoakElement>(v: &[T], i: usize, bit: usize) -> Vec<T> {
        let mut out = v.to_vec();
        let bytes = bytemuck::bytes_of_mut(&mut out[i]);
        bytes[bit / 8 % bytes.len()] ^= 1 << (bit % 8);
        out
    }

    fn bit_check_finds<T: SoakElement>(rng: &mut StdRng) {
        let n = rng.random_range(1..5000);
        let v = any_bits::<T>(rng, n);
        assert_eq!(first_bit_difference(&v, &v.clone()), None);
        let i = rng.random_range(0..n);
        let bad = corrupted(&v, i, rng.random_range(0..64));
        let d = first_bit_difference(&v, &bad).expect("a flipped bit is found");
        assert_eq!((d.index, d.len), (i, n), "{d}");
    }

    #[test]
    fn a_flipped_bit_is_found_at_its_index_in_every_type() {
        let mut rng = rng();
        for _ in 0..20 {
            bit_check_finds::<f32>(&mut rng);
            bit_check_finds::<f64>(&mut rng);
            bit_check_finds::<f16>(&mut rng);
            bit_check_finds::<bf16>(&mut rng);
            bit_check_finds::<i32>(&mut rng);
            bit_check_finds::<u32>(&mut rng);
            bit_check_finds::<i64>(&mut rng);
            bit_check_finds::<u64>(&mut rng);
            bit_check_finds::<u8>(&mut rng);
        }
    }

    #[test]
    fn an_unequal_value_is_found_and_signed_zeros_are_equal() {
        let mut rng = rng();
        let n = rng.random_range(2..5000);
        let v: Vec<f32> = small(&mut rng, n);
        let i = rng.random_range(0..n);
        let mut bad = v.clone();
        bad[i] = -bad[i] + 1.0;
        let d = first_unequal(&v, &bad).expect("a changed value is found");
        assert_eq!(d.index, i, "{d}");
        assert_eq!(first_unequal(&[0.0f32, -0.0], &[-0.0, 0.0]), None);
        // A bit check tells them apart.
        assert_eq!(
            first_bit_difference(&[0.0f32], &[-0.0]).map(|d| d.index),
            Some(0)
        );
    }

    #[test]
    fn a_value_outside_its_tolerance_is_found_and_one_inside_is_not() {
        let mut rng = rng();
        let n = rng.random_range(2..5000);
        let want: Vec<f64> = (0..n).map(|_| rng.random_range(-4.0..4.0)).collect();
        let rel = 1e-6;
        let tol = |_: usize, e: f64| rel * e.abs() + 1e-30;
        let inside: Vec<f64> = want.iter().map(|e| e + 0.5 * rel * e.abs()).collect();
        assert_eq!(first_outside(&want, &inside, tol), None);
        let i = rng.random_range(0..n);
        let mut bad = inside.clone();
        bad[i] = want[i] + 3.0 * tol(i, want[i]);
        let d = first_outside(&want, &bad, tol).expect("the element outside is found");
        assert_eq!(d.index, i, "{d}");
        assert!(d.tolerance.is_some());
        // A NaN where a number is wanted, and a number where NaN is.
        let mut nan = inside.clone();
        nan[i] = f64::NAN;
        assert_eq!(first_outside(&want, &nan, tol).map(|d| d.index), Some(i));
        assert_eq!(
            first_outside(&[f64::NAN], &[1.0], tol).map(|d| d.index),
            Some(0)
        );
    }

    #[test]
    fn a_result_of_the_wrong_length_is_a_difference() {
        let mut rng = rng();
        let n = rng.random_range(1..100);
        let v: Vec<u32> = any_bits(&mut rng, n);
        let d = first_bit_difference(&v, &v[..n - 1]).expect("a short result is wrong");
        assert_eq!(d.index, n - 1);
        assert!(first_unequal(&v[..0], &v).is_some());
    }
}
