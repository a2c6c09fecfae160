//! Reductions over axes (sum, mean, max, min, argmax, argmin; numpy's
//! `axis=` and `keepdims=`) and softmax / log-softmax over an axis, on
//! every backend from kernels written once with `#[unigpu::kernel]`.
//!
//! The reduced axes are moved last (a view), the operand made one
//! contiguous buffer of `rows × len` (a copy only where the view is not
//! already that), and one workgroup reduces each row: every invocation
//! runs over its elements `l, l + 64, ...` in order, then a shared-memory
//! tree combines the 64 partial results. The same order on every
//! backend, and no contraction, so a sum gives the same bits everywhere.
//! f16/bf16 accumulate in f32, f32 in f32, f64 in f64.

use unigpu_core::Layout;

use crate::kernel::args::{WholeBuffer, WholeBufferMut};
use crate::kernel::{Arg, Grid, Kernel, Scalar};
use crate::{Context, DType, Error, GpuArray, Result};

use super::operand::On;
use super::{AsView, AsViewMut, Float};

/// What a row reduction computes (the kernel's `op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowOp {
    Sum = 0,
    Max = 1,
    Min = 2,
    ArgMax = 3,
    ArgMin = 4,
    Mean = 5,
}

/// The two row kernels, for element types that accumulate in `$acc`
/// (f32 for f32, f16 and bf16; f64 for f64): one body, two lists, because
/// a generic kernel's every combination must type-check and an f16
/// element is written from an f32 value, an f64 one from an f64.
macro_rules! row_kernels {
    ($reduce:ident, $softmax:ident, $beats:ident, $extreme:ident, $nan_max:ident, [$($t:ident),*], $acc:ident, $max:tt, $log2e:tt) => {
/// Whether max/min (argmax/argmin) takes a later element `c` over the
/// best so far, `v`: a NaN, which wins and stays, else one strictly
/// larger (`wants_max`) or smaller.
#[crate::device]
fn $beats(v: $acc, c: $acc, wants_max: bool) -> bool {
    let mut better = c < v;
    if wants_max {
        better = c > v;
    }
    v == v && (c != c || better)
}

/// The larger (`wants_max`) or smaller of `a` and `b` by the hardware's
/// max and min, whose NaN rules differ between backends: a caller tests
/// for NaNs itself.
#[crate::device]
fn $extreme(a: $acc, b: $acc, wants_max: bool) -> $acc {
    let mut r = a.min(b);
    if wants_max {
        r = a.max(b);
    }
    r
}

/// The larger of `a` and `b`, a NaN winning (`a`'s, if both are).
#[crate::device]
fn $nan_max(a: $acc, b: $acc) -> $acc {
    let mut r = a;
    if a == a && (b != b || b > a) {
        r = b;
    }
    r
}

/// Row `r` of `x` (`len` elements from `r * len`) reduced into `out[r]`
/// (and, for argmax/argmin, its index into `index[r]`). Sum and mean
/// (`op` 0, 5) add in `A`, the mean divides once at the end; max/min
/// (1, 2) propagate NaN (numpy's and torch's `max`); argmax/argmin (3, 4)
/// give the first NaN's index when there is one, else the first
/// extreme's. A slot that saw no element holds index `u32::MAX`, which
/// loses every comparison.
#[crate::kernel(T = [$($t),*], workgroup_size = 64)]
        fn $reduce<T>(x: &[T], out: &mut [T], index: &mut [u32], rows: u32, len: u32, op: u32) {
    let best = shared::<$acc, 64>();
    let at = shared::<u32, 64>();
    let l = local_id().x;
    let n = len as usize;
    let adds = op == 0u32 || op == 5u32;
    let wants_max = op == 1u32 || op == 3u32;
    let mut row = workgroup_id().x;
    while row < rows as usize {
        let base = row * n;
        let mut v = 0.0 as $acc;
        let mut vi = 4294967295u32;
        let mut j = l;
        // max/min start from the invocation's first element, so the loop
        // below compares with no "nothing seen yet" case. The loop then
        // takes that element again, which never beats itself (a NaN
        // stays), so a row of 1024 runs two whole steps of eight, not one
        // and seven single loads.
        if !adds && j < n {
            v = x[base + j] as $acc;
            vi = j as u32;
        }
        // Eight elements a step where `base + j .. base + j + 448` is
        // inside `x` (the check inbounds.rs proves the eight loads from,
        // one where each load had its own: softmax 0.88 -> 1.05x torch on
        // an H200; a row outside `x`, a host bug, goes on one element a
        // step below, each load checked, and reports the fault), all
        // loaded before any is combined, so
        // eight loads are in flight (one at a time left the GPU's memory
        // half idle, four 0.68x torch's max on an H200); they are
        // combined in the same order as one at a time, so the result is
        // the same. One loop a kind of op, the op's test outside it.
        let mut nan = false;
        if op == 1u32 || op == 2u32 {
            // max/min without an index: the hardware's max (min) of the
            // eight, a tree, and a NaN test beside it, about half the
            // instructions of `$beats`' compare chain (0.87x torch's max
            // on an H200 with it). Whatever the backend's max does with
            // a NaN, `nan` makes the result one (below).
            nan = v != v;
            while j + 448 < n && 448 < x.len() && base + j < x.len() - 448 {
                let c0 = x[base + j] as $acc;
                let c1 = x[base + j + 64] as $acc;
                let c2 = x[base + j + 128] as $acc;
                let c3 = x[base + j + 192] as $acc;
                let c4 = x[base + j + 256] as $acc;
                let c5 = x[base + j + 320] as $acc;
                let c6 = x[base + j + 384] as $acc;
                let c7 = x[base + j + 448] as $acc;
                nan = nan
                    || c0 != c0
                    || c1 != c1
                    || c2 != c2
                    || c3 != c3
                    || c4 != c4
                    || c5 != c5
                    || c6 != c6
                    || c7 != c7;
                let q = $extreme(
                    $extreme($extreme(c0, c1, wants_max), $extreme(c2, c3, wants_max), wants_max),
                    $extreme($extreme(c4, c5, wants_max), $extreme(c6, c7, wants_max), wants_max),
                    wants_max,
                );
                v = $extreme(v, q, wants_max);
                j += 512;
            }
        } else if adds {
            while j + 448 < n && 448 < x.len() && base + j < x.len() - 448 {
                let c0 = x[base + j] as $acc;
                let c1 = x[base + j + 64] as $acc;
                let c2 = x[base + j + 128] as $acc;
                let c3 = x[base + j + 192] as $acc;
                let c4 = x[base + j + 256] as $acc;
                let c5 = x[base + j + 320] as $acc;
                let c6 = x[base + j + 384] as $acc;
                let c7 = x[base + j + 448] as $acc;
                v += c0;
                v += c1;
                v += c2;
                v += c3;
                v += c4;
                v += c5;
                v += c6;
                v += c7;
                j += 512;
            }
        } else {
            while j + 448 < n && 448 < x.len() && base + j < x.len() - 448 {
                let c0 = x[base + j] as $acc;
                let c1 = x[base + j + 64] as $acc;
                let c2 = x[base + j + 128] as $acc;
                let c3 = x[base + j + 192] as $acc;
                let c4 = x[base + j + 256] as $acc;
                let c5 = x[base + j + 320] as $acc;
                let c6 = x[base + j + 384] as $acc;
                let c7 = x[base + j + 448] as $acc;
                if $beats(v, c0, wants_max) {
                    v = c0;
                    vi = j as u32;
                }
                if $beats(v, c1, wants_max) {
                    v = c1;
                    vi = (j + 64) as u32;
                }
                if $beats(v, c2, wants_max) {
                    v = c2;
                    vi = (j + 128) as u32;
                }
                if $beats(v, c3, wants_max) {
                    v = c3;
                    vi = (j + 192) as u32;
                }
                if $beats(v, c4, wants_max) {
                    v = c4;
                    vi = (j + 256) as u32;
                }
                if $beats(v, c5, wants_max) {
                    v = c5;
                    vi = (j + 320) as u32;
                }
                if $beats(v, c6, wants_max) {
                    v = c6;
                    vi = (j + 384) as u32;
                }
                if $beats(v, c7, wants_max) {
                    v = c7;
                    vi = (j + 448) as u32;
                }
                j += 512;
            }
        }
        while j < n {
            let c = x[base + j] as $acc;
            if adds {
                v += c;
            } else if $beats(v, c, wants_max) {
                v = c;
                vi = j as u32;
            }
            j += 64;
        }
        if nan {
            // The NaN the row holds (the extremes' loop saw one).
            v = 0.0 as $acc;
            let mut k = l;
            while k < n {
                let c = x[base + k] as $acc;
                if c != c {
                    v = c;
                }
                k += 64;
            }
        }
        best[l] = v;
        at[l] = vi;
        barrier();
        let mut stride = 32usize;
        while stride > 0 {
            if l < stride {
                let a = best[l];
                let b = best[l + stride];
                let ia = at[l];
                let ib = at[l + stride];
                if adds {
                    best[l] = a + b;
                } else if ib != 4294967295u32 {
                    // Take the other slot's candidate when it is better,
                    // or as good and earlier.
                    let mut take = false;
                    if ia == 4294967295u32 {
                        take = true;
                    } else if a != a {
                        take = b != b && ib < ia;
                    } else if b != b {
                        take = true;
                    } else if wants_max {
                        take = b > a || (b == a && ib < ia);
                    } else {
                        take = b < a || (b == a && ib < ia);
                    }
                    if take {
                        best[l] = b;
                        at[l] = ib;
                    }
                }
            }
            barrier();
            stride /= 2;
        }
        if l == 0 {
            if op == 5u32 {
                out[row] = best[0] / (len as $acc);
            } else {
                out[row] = best[0];
            }
            index[row] = at[0];
        }
        barrier();
        row += num_workgroups().x;
    }
}

/// Row `r` of `x` (`len` elements) as its softmax (`log` 0) or
/// log-softmax (`log` 1) into the same row of `out`: `exp(x - max) / sum`
/// and `(x - max) - ln(sum)`, the max and sum in the accumulation type.
///
/// One pass finds both (an online softmax): each invocation keeps its
/// running max `m` and `s`, the sum of `exp(c - m)` over its elements,
/// taking eight elements a step: their max first, `s` rescaled by
/// `exp(m_old - m)` when it grows, then their eight `exp(c - m)` added.
/// Each `exp(t)` is `exp2(t · log2 e)`: the hardware's base-2 exponential
/// and a multiplication, where `exp`'s range reduction took most of the
/// pass's instructions (a relative error of |t| · 2^-24 more in f32, at
/// most 2e-6 where the term is above 2^-24 of the largest).
/// The workgroup then takes the row's max of the invocations' (a
/// subgroup max, then over the subgroups), rescales each `s` to it and
/// sums them the same way: two barriers where a tree of pairs took seven
/// (0.80x torch's bandwidth on an H200 with the tree); one more pass
/// writes the row. Two reads of the row, not three (max, sum, write:
/// 0.59x with three). Every term is an
/// `exp(c - m)`, as in the two-pass form, so a NaN or a +inf in the row
/// gives NaNs as there. `m` starts at the lowest finite value, so an
/// invocation whose elements are all -inf (a causal mask's) adds 0s and
/// keeps `s` 0, and a row of -inf alone gives 0 / 0, NaN, as the two-pass
/// form's `exp(-inf + inf)` does.
#[crate::kernel(T = [$($t),*], workgroup_size = 64)]
        fn $softmax<T>(x: &[T], out: &mut [T], rows: u32, len: u32, log: u32) {
    let red_m = shared::<$acc, 64>();
    let red_s = shared::<$acc, 64>();
    let l = local_id().x;
    let n = len as usize;
    let mut row = workgroup_id().x;
    while row < rows as usize {
        let base = row * n;
        // The lowest finite value, not -inf: an element of -inf then adds
        // exp(-inf - m) = 0, never exp(-inf + inf), a NaN.
        let mut m = -$max;
        let mut s = 0.0 as $acc;
        let mut j = l;
        while j + 448 < n && 448 < x.len() && base + j < x.len() - 448 {
            let c0 = x[base + j] as $acc;
            let c1 = x[base + j + 64] as $acc;
            let c2 = x[base + j + 128] as $acc;
            let c3 = x[base + j + 192] as $acc;
            let c4 = x[base + j + 256] as $acc;
            let c5 = x[base + j + 320] as $acc;
            let c6 = x[base + j + 384] as $acc;
            let c7 = x[base + j + 448] as $acc;
            // The eight's max by the hardware's max, a tree. A NaN
            // element needs no rule here: its `exp2` below makes `s`, so
            // the row, NaN, whatever max made of it. (On an H200 the tree
            // measured the same as a NaN-winning chain; the speed came
            // from the merges' exp2.)
            let q = c0.max(c1).max(c2.max(c3)).max(c4.max(c5).max(c6.max(c7)));
            if q > m {
                s = s * ((m - q) * $log2e).exp2();
                m = q;
            }
            s += ((c0 - m) * $log2e).exp2();
            s += ((c1 - m) * $log2e).exp2();
            s += ((c2 - m) * $log2e).exp2();
            s += ((c3 - m) * $log2e).exp2();
            s += ((c4 - m) * $log2e).exp2();
            s += ((c5 - m) * $log2e).exp2();
            s += ((c6 - m) * $log2e).exp2();
            s += ((c7 - m) * $log2e).exp2();
            j += 512;
        }
        while j < n {
            let c = x[base + j] as $acc;
            if m == m && (c != c || c > m) {
                s = s * ((m - c) * $log2e).exp2();
                m = c;
            }
            s += ((c - m) * $log2e).exp2();
            j += 64;
        }
        // The row's max: each subgroup's (a warp's shuffles on CUDA, no
        // barrier), then the few subgroups' through shared memory.
        let sm = subgroup_max(m);
        let g = subgroup_id();
        let lane = subgroup_invocation_id();
        let subgroups = 64 / subgroup_size();
        if lane == 0 {
            red_m[g] = sm;
        }
        barrier();
        let mut mx = red_m[0];
        let mut t = 1usize;
        while t < subgroups {
            mx = $nan_max(mx, red_m[t]);
            t += 1;
        }
        // Each sum rescaled to the row's max, then summed the same way. A
        // sum whose max is the row's stays as it is (a factor of 1, not
        // `exp(m - m)`, which is NaN for an infinite max); a NaN or +inf
        // element has already made its `s` NaN.
        if m != mx {
            s = s * ((m - mx) * $log2e).exp2();
        }
        let ss = subgroup_add(s);
        if lane == 0 {
            red_s[g] = ss;
        }
        barrier();
        let mut total = red_s[0];
        let mut t = 1usize;
        while t < subgroups {
            total += red_s[t];
            t += 1;
        }
        // One division a row, a multiplication an element (a division an
        // element was most of the writing pass's instructions).
        let inv = 1.0 as $acc / total;
        let ls = total.ln();
        let mut i = l;
        while i + 448 < n
            && 448 < x.len()
            && base + i < x.len() - 448
            && 448 < out.len()
            && base + i < out.len() - 448
        {
            let d0 = x[base + i] as $acc - mx;
            let d1 = x[base + i + 64] as $acc - mx;
            let d2 = x[base + i + 128] as $acc - mx;
            let d3 = x[base + i + 192] as $acc - mx;
            let d4 = x[base + i + 256] as $acc - mx;
            let d5 = x[base + i + 320] as $acc - mx;
            let d6 = x[base + i + 384] as $acc - mx;
            let d7 = x[base + i + 448] as $acc - mx;
            if log == 1u32 {
                out[base + i] = d0 - ls;
                out[base + i + 64] = d1 - ls;
                out[base + i + 128] = d2 - ls;
                out[base + i + 192] = d3 - ls;
                out[base + i + 256] = d4 - ls;
                out[base + i + 320] = d5 - ls;
                out[base + i + 384] = d6 - ls;
                out[base + i + 448] = d7 - ls;
            } else {
                out[base + i] = (d0 * $log2e).exp2() * inv;
                out[base + i + 64] = (d1 * $log2e).exp2() * inv;
                out[base + i + 128] = (d2 * $log2e).exp2() * inv;
                out[base + i + 192] = (d3 * $log2e).exp2() * inv;
                out[base + i + 256] = (d4 * $log2e).exp2() * inv;
                out[base + i + 320] = (d5 * $log2e).exp2() * inv;
                out[base + i + 384] = (d6 * $log2e).exp2() * inv;
                out[base + i + 448] = (d7 * $log2e).exp2() * inv;
            }
            i += 512;
        }
        while i < n {
            let d = x[base + i] as $acc - mx;
            if log == 1u32 {
                out[base + i] = d - ls;
            } else {
                out[base + i] = (d * $log2e).exp2() * inv;
            }
            i += 64;
        }
        barrier();
        row += num_workgroups().x;
    }
}

    };
}

row_kernels!(
    rows_reduce,
    rows_softmax,
    beats_f32,
    extreme_f32,
    nan_max_f32,
    [f32, f16, bf16],
    f32,
    3.4028234663852886e38f32,
    1.442695040888963407359924681001892137f32
);
row_kernels!(
    rows_reduce_f64,
    rows_softmax_f64,
    beats_f64,
    extreme_f64,
    nan_max_f64,
    [f64],
    f64,
    1.7976931348623157e308f64,
    1.442695040888963407359924681001892137f64
);

/// The row kernels with their native CPU forms (rows_cpu.rs).
fn reduce_kernel<T: Float>(ctx: &Context) -> Result<Kernel> {
    Ok(generated_reduce::<T>(ctx)?.with_cpu(super::rows_cpu::reduce::<T>))
}

fn softmax_kernel<T: Float>(ctx: &Context) -> Result<Kernel> {
    // As the element-wise math (elementwise.rs): NVIDIA's Vulkan driver
    // lost the device on the f64 softmax (an H200, 2026-11-28), and
    // lavapipe's f64 exp was 18 % off.
    if T::DTYPE == DType::F64 && ctx.backend() == crate::Backend::Vulkan {
        return Err(Error::Unsupported {
            backend: ctx.backend(),
            what: "softmax and log_softmax of f64: WGSL's exp and log take f32 only \
                   (compute in f32, or on another backend)"
                .into(),
        });
    }
    Ok(generated_softmax::<T>(ctx)?.with_cpu(super::rows_cpu::softmax::<T>))
}

fn generated_reduce<T: Float>(ctx: &Context) -> Result<Kernel> {
    Ok(match T::DTYPE {
        DType::F32 => (*rows_reduce::kernel::<f32>(ctx)?).clone(),
        DType::F64 => (*rows_reduce_f64::kernel::<f64>(ctx)?).clone(),
        DType::F16 => (*rows_reduce::kernel::<half::f16>(ctx)?).clone(),
        DType::BF16 => (*rows_reduce::kernel::<half::bf16>(ctx)?).clone(),
        other => unreachable!("Float is f32, f64, f16 or bf16, not {other}"),
    })
}

fn generated_softmax<T: Float>(ctx: &Context) -> Result<Kernel> {
    Ok(match T::DTYPE {
        DType::F32 => (*rows_softmax::kernel::<f32>(ctx)?).clone(),
        DType::F64 => (*rows_softmax_f64::kernel::<f64>(ctx)?).clone(),
        DType::F16 => (*rows_softmax::kernel::<half::f16>(ctx)?).clone(),
        DType::BF16 => (*rows_softmax::kernel::<half::bf16>(ctx)?).clone(),
        other => unreachable!("Float is f32, f64, f16 or bf16, not {other}"),
    })
}

/// Workgroups for `rows` rows: one a row, at most 65535 (each then takes
/// every `num_workgroups`-th row). 64 invocations a row: with 256, the
/// shared-memory tree (eight levels, each a barrier, over 256 slots) cost
/// more than the row's loads on an H100 (rows of 1024 at 0.53-0.77x
/// torch); 64 run a six-level tree over a quarter of the slots.
fn row_grid(rows: usize) -> Grid {
    let groups = rows.clamp(1, 65535) as u32;
    Grid::new((groups, 1, 1), (64, 1, 1))
}

fn u32_of(n: usize, what: &'static str) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::Shape {
        what,
        message: format!("{n} is more than the 32-bit counts of generated kernels"),
    })
}

/// The reduced axes (`None`: all), checked and sorted.
fn axes_of(ndim: usize, axes: Option<&[usize]>, what: &'static str) -> Result<Vec<usize>> {
    let mut a: Vec<usize> = match axes {
        None => (0..ndim).collect(),
        Some(a) => a.to_vec(),
    };
    a.sort_unstable();
    if let Some(&bad) = a.iter().find(|&&x| x >= ndim) {
        return Err(Error::Shape {
            what,
            message: format!("axis {bad} is out of range for an array of {ndim} dimensions"),
        });
    }
    if a.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::Shape {
            what,
            message: format!("axes {a:?} name an axis twice"),
        });
    }
    Ok(a)
}

/// The kept axes, then the reduced ones: the permutation that puts the
/// reduced axes last, and the shape it gives.
fn reduced_last(shape: &[usize], reduced: &[usize]) -> (Vec<usize>, usize, usize) {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !reduced.contains(a)).collect();
    let rows = kept.iter().map(|&a| shape[a]).product();
    let len = reduced.iter().map(|&a| shape[a]).product();
    let order = kept.into_iter().chain(reduced.iter().copied()).collect();
    (order, rows, len)
}

/// The result's shape: the kept axes, with 1 for each reduced one when
/// `keepdims`.
fn result_shape(shape: &[usize], reduced: &[usize], keepdims: bool) -> Vec<usize> {
    (0..shape.len())
        .filter_map(|a| match (reduced.contains(&a), keepdims) {
            (false, _) => Some(shape[a]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

impl<'o> super::Ops<'o> {
    /// Rows of `x` (the reduced axes last) reduced by `op`: the values
    /// and the indices (into the flattened reduced axes).
    fn rows<T: Float>(
        &self,
        x: &impl AsView<T>,
        axes: Option<&[usize]>,
        keepdims: bool,
        op: RowOp,
        what: &'static str,
    ) -> Result<(GpuArray<T>, GpuArray<u32>)> {
        let x = x.as_view();
        let on: On<'_> = self.on();
        let reduced = axes_of(x.ndim(), axes, what)?;
        let (order, rows, len) = reduced_last(x.shape(), &reduced);
        if len == 0 && !matches!(op, RowOp::Sum | RowOp::Mean) {
            return Err(Error::Shape {
                what,
                message: format!(
                    "the reduced axes {reduced:?} of shape {:?} hold no element",
                    x.shape()
                ),
            });
        }
        let moved = x.clone().permute(&order)?;
        let moved_shape = moved.shape().to_vec();
        let whole = on.whole(&moved, &moved_shape, what)?;
        let mut out = GpuArray::<T>::uninit(self.ctx, rows)?;
        let mut index = GpuArray::<u32>::uninit(self.ctx, rows)?;
        if rows > 0 {
            let kernel = reduce_kernel::<T>(self.ctx)?;
            let (src, mut dst, mut idx) = (
                WholeBuffer(whole.storage()),
                WholeBufferMut(&mut out.storage),
                WholeBufferMut(&mut index.storage),
            );
            let args = vec![
                Arg::Array(&src),
                Arg::ArrayMut(&mut dst),
                Arg::ArrayMut(&mut idx),
                Arg::Scalar(Scalar::new(u32_of(rows, what)?)),
                Arg::Scalar(Scalar::new(u32_of(len, what)?)),
                Arg::Scalar(Scalar::new(op as u32)),
            ];
            self.stream.launch(&kernel, row_grid(rows), args)?;
        }
        let shape = result_shape(x.shape(), &reduced, keepdims);
        out.layout = Layout::contiguous(&shape);
        index.layout = Layout::contiguous(&shape);
        Ok((out, index))
    }

    /// The sum over `axes` (`None`: every axis), accumulated in `T::Acc`
    /// (0 for no element); the reduced axes removed, or kept with extent
    /// 1 when `keepdims` (numpy's `sum(axis=, keepdims=)`).
    pub fn sum_axes<T: Float>(
        &self,
        x: &impl AsView<T>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<GpuArray<T>> {
        Ok(self.rows(x, axes, keepdims, RowOp::Sum, "sum_axes")?.0)
    }

    /// The mean over `axes`: the sum as [`Ops::sum_axes`], divided once
    /// by the element count at the end (NaN for no element, as numpy).
    pub fn mean_axes<T: Float>(
        &self,
        x: &impl AsView<T>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<GpuArray<T>> {
        Ok(self.rows(x, axes, keepdims, RowOp::Mean, "mean_axes")?.0)
    }

    /// The largest element over `axes`; a NaN propagates (numpy's and
    /// torch's `max`; [`Ops::max`] of a whole array ignores NaN instead).
    /// No element is an error.
    pub fn max_axes<T: Float>(
        &self,
        x: &impl AsView<T>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<GpuArray<T>> {
        Ok(self.rows(x, axes, keepdims, RowOp::Max, "max_axes")?.0)
    }

    /// The smallest element over `axes`; NaN as [`Ops::max_axes`].
    pub fn min_axes<T: Float>(
        &self,
        x: &impl AsView<T>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<GpuArray<T>> {
        Ok(self.rows(x, axes, keepdims, RowOp::Min, "min_axes")?.0)
    }

    /// The index along `axis` (`None`: into the flattened array) of the
    /// largest element, the first of equal ones; a NaN's index when there
    /// is one (numpy's `argmax`).
    pub fn argmax<T: Float>(
        &self,
        x: &impl AsView<T>,
        axis: Option<usize>,
        keepdims: bool,
    ) -> Result<GpuArray<u32>> {
        let axes = axis.map(|a| vec![a]);
        Ok(self
            .rows(x, axes.as_deref(), keepdims, RowOp::ArgMax, "argmax")?
            .1)
    }

    /// As [`Ops::argmax`], the smallest.
    pub fn argmin<T: Float>(
        &self,
        x: &impl AsView<T>,
        axis: Option<usize>,
        keepdims: bool,
    ) -> Result<GpuArray<u32>> {
        let axes = axis.map(|a| vec![a]);
        Ok(self
            .rows(x, axes.as_deref(), keepdims, RowOp::ArgMin, "argmin")?
            .1)
    }

    /// `out = softmax(x)` along `axis`: `exp(x - max) / sum(exp(x - max))`,
    /// in `T::Acc`; `out` has `x`'s shape (a view is fine).
    pub fn softmax<T: Float>(
        &self,
        x: &impl AsView<T>,
        axis: usize,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.softmax_impl(x, axis, out, false, "softmax")
    }

    /// `out = log_softmax(x)` along `axis`: `(x - max) - ln(sum(exp(x -
    /// max)))`, in `T::Acc`.
    pub fn log_softmax<T: Float>(
        &self,
        x: &impl AsView<T>,
        axis: usize,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.softmax_impl(x, axis, out, true, "log_softmax")
    }

    fn softmax_impl<T: Float>(
        &self,
        x: &impl AsView<T>,
        axis: usize,
        out: &mut impl AsViewMut<T>,
        log: bool,
        what: &'static str,
    ) -> Result<()> {
        let (x, out) = (x.as_view(), out.as_view_mut());
        if x.shape() != out.shape() {
            return Err(Error::Shape {
                what,
                message: format!("the input is {:?}, the output {:?}", x.shape(), out.shape()),
            });
        }
        let reduced = axes_of(x.ndim(), Some(&[axis]), what)?;
        let (order, rows, len) = reduced_last(x.shape(), &reduced);
        let on = self.on();
        let moved = x.permute(&order)?;
        let moved_shape = moved.shape().to_vec();
        let whole = on.whole(&moved, &moved_shape, what)?;
        let mut moved_out = out.permute(&order)?;
        if rows == 0 || len == 0 {
            return Ok(());
        }
        let kernel = softmax_kernel::<T>(self.ctx)?;
        let (rows32, len32) = (u32_of(rows, what)?, u32_of(len, what)?);
        on.write_whole(&mut moved_out, false, what, |dst| {
            let (src, mut dst) = (WholeBuffer(whole.storage()), WholeBufferMut(dst));
            let args = vec![
                Arg::Array(&src),
                Arg::ArrayMut(&mut dst),
                Arg::Scalar(Scalar::new(rows32)),
                Arg::Scalar(Scalar::new(len32)),
                Arg::Scalar(Scalar::new(u32::from(log))),
            ];
            self.stream.launch(&kernel, row_grid(rows), args)
        })
    }
}
