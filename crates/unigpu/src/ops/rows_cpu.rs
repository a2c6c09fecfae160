//! The row kernels' CPU forms, written natively and attached with
//! `Kernel::with_cpu` (axes.rs): the macro's CPU form of a workgroup of 64
//! a row runs each invocation's strided loop one after another, scalar,
//! so max over rows of 1024 took 6.8× numpy's time and the sum 3×. Here a
//! row is one contiguous slice, the rows split across rayon's pool, and
//! the loops vectorise (under [`crate::simd::simd`]).
//!
//! The results follow the kernels' rules (axes.rs): sum and mean add in
//! the accumulation type (in another order than the GPU's tree, within
//! the same bound), max and min propagate NaN, argmax and argmin give the
//! first NaN's index when there is one, else the first extreme's; an
//! index slot that saw no element (an empty row) holds `u32::MAX`.

use rayon::prelude::*;

use super::kinds::Float;
use crate::Result;
use crate::kernel::CpuArgs;
use num_traits::{Float as _, NumCast, Zero};

/// Lanes the sums and extremes are kept in, so the loops vectorise.
const LANES: usize = 16;

/// `rows_reduce`'s arguments: `x`, `out`, `index`, `rows`, `len`, `op`
/// (0 sum, 1 max, 2 min, 3 argmax, 4 argmin, 5 mean).
pub(super) fn reduce<T: Float>(a: &CpuArgs) -> Result<()> {
    let x = a.input::<T>(0)?;
    let mut out = a.output::<T>(1)?;
    let mut index = a.output::<u32>(2)?;
    let (rows, len, op) = (
        a.scalar::<u32>(3)? as usize,
        a.scalar::<u32>(4)? as usize,
        a.scalar::<u32>(5)?,
    );
    let x = &x[..rows * len];
    // The dispatch inside each task: a closure run on a pool thread is
    // not inlined into a dispatch made around the `par_iter` call.
    out[..rows]
        .par_iter_mut()
        .zip(index[..rows].par_iter_mut())
        .enumerate()
        .for_each(|(r, (o, i))| {
            let row = &x[r * len..(r + 1) * len];
            let (v, at) = crate::simd::simd(
                #[inline(always)]
                || match op {
                    0 => (sum(row), u32::MAX),
                    5 => (
                        sum(row) / <T::Acc as NumCast>::from(len).unwrap_or_else(T::Acc::nan),
                        u32::MAX,
                    ),
                    _ => extreme(row, op == 1 || op == 3, op == 3 || op == 4),
                },
            );
            *o = T::from_acc(v);
            *i = at;
        });
    Ok(())
}

/// `rows_softmax`'s arguments: `x`, `out`, `rows`, `len`, `log` (1 for
/// log-softmax): `exp(x - max) / sum` or `(x - max) - ln(sum)` a row, the
/// max and sum in the accumulation type.
pub(super) fn softmax<T: Float>(a: &CpuArgs) -> Result<()> {
    let x = a.input::<T>(0)?;
    let mut out = a.output::<T>(1)?;
    let (rows, len, log) = (
        a.scalar::<u32>(2)? as usize,
        a.scalar::<u32>(3)? as usize,
        a.scalar::<u32>(4)? == 1,
    );
    if len == 0 {
        return Ok(());
    }
    let x = &x[..rows * len];
    out[..rows * len]
        .par_chunks_mut(len)
        .zip(x.par_chunks(len))
        .for_each(|(o, row)| {
            crate::simd::simd(
                #[inline(always)]
                || softmax_row(row, o, log),
            )
        });
    Ok(())
}

/// One row of [`softmax`].
#[inline(always)]
fn softmax_row<T: Float>(row: &[T], o: &mut [T], log: bool) {
    let (mx, _) = extreme(row, true, false);
    // Where the element type is the accumulation type (f32, f64), each
    // e^(x - max) is kept in `o` by the sum's pass and divided there: one
    // exp an element, the same values as computing it again. f16 and
    // bf16 compute it twice rather than round it early.
    let keep = !log && std::mem::size_of::<T>() == std::mem::size_of::<T::Acc>();
    let mut lanes = [T::Acc::zero(); LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    let mut o_chunks = o.chunks_exact_mut(LANES);
    for c in chunks {
        let oc = o_chunks.next();
        let mut e = [T::Acc::zero(); LANES];
        for ((l, e), &v) in lanes.iter_mut().zip(e.iter_mut()).zip(c) {
            *e = T::exp_acc(v.to_acc() - mx);
            *l = *l + *e;
        }
        if keep && let Some(oc) = oc {
            for (o, &e) in oc.iter_mut().zip(&e) {
                *o = T::from_acc(e);
            }
        }
    }
    let mut tail = T::Acc::zero();
    let start = row.len() - rest.len();
    for (i, &v) in rest.iter().enumerate() {
        let e = T::exp_acc(v.to_acc() - mx);
        tail = tail + e;
        if keep {
            o[start + i] = T::from_acc(e);
        }
    }
    let total = lanes.iter().fold(T::Acc::zero(), |s, &l| s + l) + tail;
    if keep {
        for o in o.iter_mut() {
            *o = T::from_acc(o.to_acc() / total);
        }
    } else if log {
        let ls = total.ln();
        for (o, &v) in o.iter_mut().zip(row) {
            *o = T::from_acc((v.to_acc() - mx) - ls);
        }
    } else {
        for (o, &v) in o.iter_mut().zip(row) {
            *o = T::from_acc(T::exp_acc(v.to_acc() - mx) / total);
        }
    }
}

/// The row's sum in the accumulation type, in `LANES` partial sums.
#[inline(always)]
fn sum<T: Float>(row: &[T]) -> T::Acc {
    let mut lanes = [T::Acc::zero(); LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = *l + v.to_acc();
        }
    }
    let tail = rest.iter().fold(T::Acc::zero(), |s, &v| s + v.to_acc());
    lanes.iter().fold(T::Acc::zero(), |s, &l| s + l) + tail
}

/// The row's max (`wants_max`) or min and the index of its first
/// occurrence (`u32::MAX` where `index` is not asked for and the value
/// alone settles it); a NaN wins (the first NaN); `(0, u32::MAX)` for an
/// empty row.
#[inline(always)]
fn extreme<T: Float>(row: &[T], wants_max: bool, index: bool) -> (T::Acc, u32) {
    let Some(first) = row.first() else {
        return (T::Acc::zero(), u32::MAX);
    };
    // Pass 1, vectorised: the extreme of the non-NaN values, and whether a
    // NaN is there (a NaN never wins a `>` or `<`).
    let mut best = [first.to_acc(); LANES];
    let mut nan = [false; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for ((b, n), &v) in best.iter_mut().zip(nan.iter_mut()).zip(c) {
            let v = v.to_acc();
            let better = if wants_max { v > *b } else { v < *b };
            *b = if better { v } else { *b };
            *n |= v.is_nan();
        }
    }
    let mut m = first.to_acc();
    let mut any_nan = nan.iter().any(|&n| n);
    let mut take = |b: T::Acc| {
        any_nan |= b.is_nan();
        if (wants_max && b > m) || (!wants_max && b < m) || m.is_nan() {
            m = b;
        }
    };
    best.iter().for_each(|&b| take(b));
    rest.iter().for_each(|&v| take(v.to_acc()));
    // The value settles it unless the index is asked for, a NaN is there
    // (the first one's is the result), or it is a zero (the first zero's
    // sign is the result).
    if !index && !any_nan && m != T::Acc::zero() {
        return (m, u32::MAX);
    }
    // Pass 2: the first index holding it (or the first NaN), a chunk at a
    // time (the chunk's test vectorises), and that element's own value.
    let hit = |v: T::Acc| if any_nan { v.is_nan() } else { v == m };
    let chunk = row
        .chunks(LANES)
        .position(|c| c.iter().fold(false, |a, &v| a | hit(v.to_acc())));
    let at = chunk.and_then(|k| {
        row[k * LANES..]
            .iter()
            .position(|&v| hit(v.to_acc()))
            .map(|i| k * LANES + i)
    });
    match at {
        Some(i) => (row[i].to_acc(), i as u32),
        None => (m, u32::MAX),
    }
}
