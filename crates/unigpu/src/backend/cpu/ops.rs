//! The CPU side of the built-in ops: jobs on the stream's worker thread,
//! ordered against other uses of their arrays like any stream work.
//!
//! Inside a job, arrays of at least `PAR_MIN` elements are split into
//! `CHUNK`-element pieces across rayon's pool (every core); smaller ones
//! stay on the worker thread. The inner loops are plain slice loops over
//! a closure chosen once per call, run under pulp's run-time SIMD
//! dispatch (`simd`), so LLVM vectorises them as wide as the CPU allows.

use std::sync::{Arc, Mutex};

use unigpu_core::dlpack::{HostArray, HostRead, HostWrite};
use unigpu_core::{GemmOperand, GemmShape};

use num_traits::{Float as _, One, Zero};
use rayon::prelude::*;

use super::Cpu;
use super::{CpuBuffer, CpuStream, check_distinct, submit, submit_replayable};
use crate::backend::contract::BuiltinOps;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::ops::{Binary, Float, Reduce, Unary};
use crate::simd::simd;

type Stream = Arc<CpuStream>;

/// Below this many elements an op runs on the stream's worker thread
/// alone: waking the pool costs microseconds, more than the split saves.
const PAR_MIN: usize = 1 << 16;

/// Elements per rayon task: 128 KiB of f32, large enough that a task's
/// overhead is lost in its work, small enough to balance between cores.
const CHUNK: usize = 1 << 15;

/// Accumulator lanes of a reduction: independent chains that LLVM keeps
/// in SIMD registers, and that bound each partial sum's length.
const LANES: usize = 16;

/// Lanes of `max`: a SIMD max takes several cycles to give its result, so
/// one AVX-512 register of 16 lanes would leave the loop waiting on it;
/// four registers' worth keep the SIMD units busy. (Order does not change
/// a max, so this costs no accuracy.)
const MAX_LANES: usize = 64;

/// Terms per reduction block: each lane adds `BLOCK / LANES` = 16 terms
/// in `T::Acc` before the block's lanes are added in f64, so the error
/// stays far inside the c(n)·ε_acc bound of a `T::Acc` tree (and integer
/// sums stay exact while each block's do, as in f32 below 2^24).
const BLOCK: usize = 256;

fn read<T: Element>(a: &HostArray<T>) -> HostRead<'_, T> {
    a.read()
}

fn write<T: Element>(a: &HostArray<T>) -> HostWrite<'_, T> {
    a.write()
}

fn acc_from_f64<T: Float>(v: f64) -> T::Acc {
    num_traits::cast(v).unwrap_or_else(T::Acc::nan)
}

/// e^x in the accumulator type: `exp_f32` for f32 (so f16/bf16 too),
/// where libm's `expf` would be a call per element that stops the loop
/// from vectorising; libm's `exp` for f64.
fn exp_acc<A: Element + num_traits::Float>(x: A) -> A {
    if A::DTYPE == DType::F32 {
        bytemuck::cast(exp_f32(bytemuck::cast(x)))
    } else {
        x.exp()
    }
}

/// tanh in the accumulator type: for f32 (so f16/bf16 too) the kernel
/// language's vectorisable one (`simd::math::tanh`, branch-free f32 code
/// within 1 ulp), where libm's
/// `tanhf` is a call per element (15× numpy's time on 2 cores); libm's
/// `tanh` for f64.
#[inline(always)]
fn tanh_acc<A: Element + num_traits::Float>(x: A) -> A {
    if A::DTYPE == DType::F32 {
        bytemuck::cast(crate::simd::math::tanh(bytemuck::cast(x)))
    } else {
        x.tanh()
    }
}

/// e^x in f32 in branch-free arithmetic that LLVM vectorises: x = k·ln2 +
/// r with |r| ≤ ln2/2 (Cody–Waite, ln2 split so k·ln2_hi is exact), e^r by
/// its Taylor polynomial to r^7 (truncation ≤ 0.05 ulp; with rounding,
/// within 2 ulps of e^x), times 2^k applied as two powers of two so that
/// overflow to inf and gradual underflow to 0 round as `expf`'s do.
// Inlined into the `simd`-dispatched loops, so it vectorises there.
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    // e^89 overflows and e^-110 is below half the least subnormal, so
    // clamping changes no result, and keeps 2^k within two normal factors.
    // `clamp` passes NaN through.
    let x = x.clamp(-110.0, 89.0);
    // Rounding to nearest by adding 1.5·2^23: SSE2 has no vector round.
    const SHIFTER: f32 = 12_582_912.0;
    const LN2_HI: f32 = 355.0 / 512.0; // 9 bits, so k·LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4;
    let shifted = x * std::f32::consts::LOG2_E + SHIFTER;
    let kf = shifted - SHIFTER;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // k ∈ [-159, 128] sits in the low mantissa bits of `shifted` (an
    // `as i32` conversion would saturate, which does not vectorise); its
    // halves lie in [-80, 64], each a normal power of two. For NaN, k is
    // junk but p is NaN, and so is the product.
    let k = (shifted.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
    let (k1, k2) = (k >> 1, k - (k >> 1));
    // 2^e from its bit pattern: a shift and an add per lane, where
    // `powi` would be a call.
    let pow2 = |e: i32| f32::from_bits((e.wrapping_add(127) as u32) << 23);
    p * pow2(k1) * pow2(k2)
}

/// `out[i] = f(x[i])`, in `T::Acc`, rounded once to `T`.
fn map1<T: Float>(x: &[T], out: &mut [T], f: impl Fn(T::Acc) -> T::Acc + Sync) {
    // One serial piece, shared by both paths so they compute alike.
    let run = |o: &mut [T], x: &[T]| {
        simd(|| {
            for (o, v) in o.iter_mut().zip(x) {
                *o = T::from_acc(f(v.to_acc()));
            }
        })
    };
    if out.len() < PAR_MIN {
        run(out, x);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(o, x)| run(o, x));
    }
}

/// `out[i] = f(a[i], b[i])`, in `T::Acc`, rounded once to `T`.
fn map2<T: Float>(a: &[T], b: &[T], out: &mut [T], f: impl Fn(T::Acc, T::Acc) -> T::Acc + Sync) {
    // One serial piece, shared by both paths so they compute alike.
    let run = |o: &mut [T], a: &[T], b: &[T]| {
        simd(|| {
            for ((o, x), y) in o.iter_mut().zip(a).zip(b) {
                *o = T::from_acc(f(x.to_acc(), y.to_acc()));
            }
        })
    };
    if out.len() < PAR_MIN {
        run(out, a, b);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(a.par_chunks(CHUNK))
            .zip(b.par_chunks(CHUNK))
            .for_each(|((o, a), b)| run(o, a, b));
    }
}

/// `y[i] = f(x[i], y[i])` in place.
fn update<T: Float>(x: &[T], y: &mut [T], f: impl Fn(T::Acc, T::Acc) -> T::Acc + Sync) {
    // One serial piece, shared by both paths so they compute alike.
    let run = |y: &mut [T], x: &[T]| {
        simd(|| {
            for (y, x) in y.iter_mut().zip(x) {
                *y = T::from_acc(f(x.to_acc(), y.to_acc()));
            }
        })
    };
    if y.len() < PAR_MIN {
        run(y, x);
    } else {
        y.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(y, x)| run(y, x));
    }
}

/// Adds `LANES` running sums in f64: the end of one block.
fn lanes_sum<A: Into<f64> + Copy>(lanes: &[A; LANES]) -> f64 {
    lanes.iter().map(|&l| l.into()).fold(0.0, |a, b| a + b)
}

/// Σ x over one block of at most `BLOCK` terms: `LANES` running sums in
/// `T::Acc` (fixed-width chunks, which LLVM turns into SIMD adds).
// Inlined into the `simd` call of its caller, so it vectorises there.
#[inline(always)]
fn block_sum<T: Float>(xs: &[T]) -> f64 {
    let mut lanes = [T::Acc::zero(); LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = *l + v.to_acc();
        }
    }
    for (l, v) in lanes.iter_mut().zip(chunks.remainder()) {
        *l = *l + v.to_acc();
    }
    lanes_sum(&lanes)
}

/// Σ x·y over one block, like `block_sum`.
// Inlined into the `simd` call of its caller, so it vectorises there.
#[inline(always)]
fn block_dot<T: Float>(xs: &[T], ys: &[T]) -> f64 {
    let mut lanes = [T::Acc::zero(); LANES];
    let (mut cx, mut cy) = (xs.chunks_exact(LANES), ys.chunks_exact(LANES));
    for (a, b) in (&mut cx).zip(&mut cy) {
        for ((l, x), y) in lanes.iter_mut().zip(a).zip(b) {
            *l = *l + x.to_acc() * y.to_acc();
        }
    }
    for ((l, x), y) in lanes.iter_mut().zip(cx.remainder()).zip(cy.remainder()) {
        *l = *l + x.to_acc() * y.to_acc();
    }
    lanes_sum(&lanes)
}

/// Σ x in blocks (see `BLOCK`), the block sums added in f64.
///
/// Every sum here folds from +0.0 rather than calling `Iterator::sum`,
/// which starts from -0.0 for floats: an empty array's sum (and dot) is
/// +0.0, as the header and the GPU backends say (issue 25).
fn sum_serial<T: Float>(xs: &[T]) -> f64 {
    simd(|| xs.chunks(BLOCK).map(block_sum).fold(0.0, |a, b| a + b))
}

/// Σ x·y in blocks, like `sum_serial`.
fn dot_serial<T: Float>(xs: &[T], ys: &[T]) -> f64 {
    simd(|| {
        xs.chunks(BLOCK)
            .zip(ys.chunks(BLOCK))
            .map(|(a, b)| block_dot(a, b))
            .fold(0.0, |a, b| a + b)
    })
}

/// The largest element, NaNs ignored unless every one is NaN.
fn max_serial<T: Float>(xs: &[T]) -> T::Acc {
    let m = simd(|| max_lanes(xs));
    // -inf is also what a piece of NaNs leaves: only then look again, to
    // tell "every element is -inf or NaN" from "every one is NaN".
    if m == T::Acc::neg_infinity() && xs.iter().all(|v| v.to_acc().is_nan()) {
        T::Acc::nan()
    } else {
        m
    }
}

/// `max_serial`'s loop, inlined into its `simd` call. `v > l` is false
/// for a NaN `v`, so NaNs are skipped by a plain select (one SIMD max
/// instruction), where IEEE maxNum would need a NaN test on the loop's
/// dependency chain.
#[inline(always)]
fn max_lanes<T: Float>(xs: &[T]) -> T::Acc {
    let pick = |l: T::Acc, v: T::Acc| if v > l { v } else { l };
    let mut lanes = [T::Acc::neg_infinity(); MAX_LANES];
    let mut chunks = xs.chunks_exact(MAX_LANES);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = pick(*l, v.to_acc());
        }
    }
    for (l, v) in lanes.iter_mut().zip(chunks.remainder()) {
        *l = pick(*l, v.to_acc());
    }
    lanes
        .iter()
        .fold(T::Acc::neg_infinity(), |m, &l| pick(m, l))
}

/// The partial results of `f` over `CHUNK`-element pieces of `xs` (and the
/// matching pieces of `ys`), in order, on every core when `xs` is large:
/// combining them in order keeps a result independent of the pool's
/// scheduling.
fn pieces<T: Float, R: Send>(xs: &[T], ys: &[T], f: impl Fn(&[T], &[T]) -> R + Sync) -> Vec<R> {
    if xs.len() < PAR_MIN {
        return vec![f(xs, ys)];
    }
    // `ys` is empty for one-input reductions: pad its pieces with empties
    // so both cases share one split.
    let ys_piece = |i: usize| {
        ys.get(i * CHUNK..((i + 1) * CHUNK).min(ys.len()))
            .unwrap_or(&[])
    };
    xs.par_chunks(CHUNK)
        .enumerate()
        .map(|(i, x)| f(x, ys_piece(i)))
        .collect()
}

/// Below this many multiply-adds (m·k·n) a matmul runs on the worker
/// thread alone: a 64×64×64 product takes microseconds, about what
/// waking the pool costs.
const PAR_MIN_FLOPS: usize = 1 << 18;

/// `c = a · b` in the accumulator type (f32 or f64), through faer's
/// kernels (SIMD chosen at run time, split across rayon's pool).
fn gemm_acc<A: Element>(shape: &GemmShape, a: &[A], b: &[A], c: &mut [A]) -> Result<()> {
    match A::DTYPE {
        DType::F32 => gemm::<f32>(shape, cast(a), cast(b), bytemuck::cast_slice_mut(c)),
        DType::F64 => gemm::<f64>(shape, cast(a), cast(b), bytemuck::cast_slice_mut(c)),
        other => Err(Error::Unsupported {
            backend: crate::backend::Backend::Cpu,
            what: format!("matmul accumulating in {other}"),
        }),
    }
}

fn cast<A: Element, B: Element>(x: &[A]) -> &[B] {
    bytemuck::cast_slice(x)
}

/// Matrix `z` of `op` (`rows`×`cols`) as a faer view of its buffer: a
/// transposed operand is a column-major view, no copy. The caller has
/// checked the shape against the buffer (`GemmShape::check`) and that the
/// matrix is not empty.
fn operand<'x, F>(
    x: &'x [F],
    op: &GemmOperand,
    z: usize,
    rows: usize,
    cols: usize,
) -> faer::MatRef<'x, F> {
    let x = &x[op.offset + z * op.batch_stride..];
    if op.transposed {
        faer::MatRef::from_column_major_slice_with_stride(x, rows, cols, op.ld)
    } else {
        faer::MatRef::from_row_major_slice_with_stride(x, rows, cols, op.ld)
    }
}

fn gemm<F>(shape: &GemmShape, a: &[F], b: &[F], c: &mut [F]) -> Result<()>
where
    F: faer::traits::ComplexField
        + faer::traits::Conjugate<Canonical = F>
        + One
        + Zero
        + Send
        + Sync,
{
    // faer's constructors panic on a view past its slice; the facade has
    // checked the shape already, so this is a second line, as an error.
    shape
        .check(a.len(), b.len(), c.len())
        .map_err(|message| Error::StreamWork { message })?;
    let GemmShape { m, k, n, .. } = *shape;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        // An empty sum: no element of `a` or `b` is read (nor in bounds).
        c.fill(F::zero());
        return Ok(());
    }
    let one = |(z, c): (usize, &mut [F]), par| {
        let (a, b) = (operand(a, &shape.a, z, m, k), operand(b, &shape.b, z, k, n));
        gemm_one(c, (m, n), a, b, par);
    };
    let flops = m.saturating_mul(k).saturating_mul(n);
    if flops >= PAR_MIN_FLOPS {
        // Each product is worth the pool: faer splits it.
        c.chunks_mut(m * n)
            .enumerate()
            .for_each(|zc| one(zc, faer::Par::rayon(0)));
    } else if flops.saturating_mul(shape.batch) >= PAR_MIN_FLOPS {
        // Many small products: one a task.
        c.par_chunks_mut(m * n)
            .enumerate()
            .for_each(|zc| one(zc, faer::Par::Seq));
    } else {
        c.chunks_mut(m * n)
            .enumerate()
            .for_each(|zc| one(zc, faer::Par::Seq));
    }
    Ok(())
}

/// One product into the dense row-major m×n `c`.
fn gemm_one<F>(
    c: &mut [F],
    (m, n): (usize, usize),
    a: faer::MatRef<'_, F>,
    b: faer::MatRef<'_, F>,
    par: faer::Par,
) where
    F: faer::traits::ComplexField + faer::traits::Conjugate<Canonical = F> + One,
{
    faer::linalg::matmul::matmul(
        faer::MatMut::from_row_major_slice_mut(c, m, n),
        faer::Accum::Replace,
        a,
        b,
        F::one(),
        par,
    );
}

impl BuiltinOps for Cpu {
    fn fill<T: Element>(s: &Stream, x: &mut CpuBuffer<T>, value: T) -> Result<()> {
        let data = x.data.clone();
        submit_replayable(s, &[], &[&x.uses], move || {
            write(&data).fill(value);
            Ok(())
        })
        .map(drop)
    }

    fn binary<T: Float>(
        s: &Stream,
        op: Binary,
        a: &CpuBuffer<T>,
        b: &CpuBuffer<T>,
        out: &mut CpuBuffer<T>,
    ) -> Result<()> {
        check_distinct(|| format!("{op:?}").to_lowercase(), out, &[a, b])?;
        let (da, db, dout) = (a.data.clone(), b.data.clone(), out.data.clone());
        submit_replayable(s, &[&a.uses, &b.uses], &[&out.uses], move || {
            let ga = read(&da);
            // `add(&a, &a, ..)` passes one array twice: lock it once.
            let gb = (!HostArray::ptr_eq(&da, &db)).then(|| read(&db));
            let bs: &[T] = gb.as_deref().unwrap_or(&ga);
            let mut o = write(&dout);
            // The match is outside the loop: each arm's closure is its own
            // monomorphised loop, free of calls through a pointer.
            match op {
                Binary::Add => map2(&ga, bs, &mut o, |x, y| x + y),
                Binary::Sub => map2(&ga, bs, &mut o, |x, y| x - y),
                Binary::Mul => map2(&ga, bs, &mut o, |x, y| x * y),
            }
            Ok(())
        })
        .map(drop)
    }

    fn unary<T: Float>(
        s: &Stream,
        op: Unary,
        x: &CpuBuffer<T>,
        out: &mut CpuBuffer<T>,
    ) -> Result<()> {
        check_distinct(|| format!("{op:?}").to_lowercase(), out, &[x])?;
        let (dx, dout) = (x.data.clone(), out.data.clone());
        submit_replayable(s, &[&x.uses], &[&out.uses], move || {
            let (xs, mut o) = (read(&dx), write(&dout));
            // As in `binary`: one loop per op, each free to vectorise.
            match op {
                // `v <= 0` is false for NaN, which passes through, as the
                // docs promise; a select, so the loop still vectorises.
                Unary::Relu => map1(&xs, &mut o, |v| {
                    if v <= T::Acc::zero() {
                        T::Acc::zero()
                    } else {
                        v
                    }
                }),
                Unary::Sigmoid => map1(&xs, &mut o, |v| {
                    T::Acc::one() / (T::Acc::one() + exp_acc(-v))
                }),
                Unary::Tanh => map1(&xs, &mut o, tanh_acc),
            }
            Ok(())
        })
        .map(drop)
    }

    fn axpy<T: Float>(s: &Stream, alpha: T, x: &CpuBuffer<T>, y: &mut CpuBuffer<T>) -> Result<()> {
        check_distinct(|| "axpy".into(), y, &[x])?;
        let (dx, dy) = (x.data.clone(), y.data.clone());
        let alpha = alpha.to_acc();
        submit_replayable(s, &[&x.uses], &[&y.uses], move || {
            // mul_add: the GPU kernel's `a * x + y` compiles to one FMA.
            update(&read(&dx), &mut write(&dy), |x, y| alpha.mul_add(x, y));
            Ok(())
        })
        .map(drop)
    }

    fn scale<T: Float>(s: &Stream, alpha: T, x: &mut CpuBuffer<T>) -> Result<()> {
        let dx = x.data.clone();
        let alpha = alpha.to_acc();
        submit_replayable(s, &[], &[&x.uses], move || {
            let mut xs = write(&dx);
            let xs: &mut [T] = &mut xs;
            let len = xs.len();
            // One serial piece, shared by both paths so they compute alike.
            let run = |v: &mut [T]| {
                for v in v.iter_mut() {
                    *v = T::from_acc(alpha * v.to_acc());
                }
            };
            if len < PAR_MIN {
                run(xs);
            } else {
                xs.par_chunks_mut(CHUNK).for_each(run);
            }
            Ok(())
        })
        .map(drop)
    }

    fn reduce<T: Float>(
        s: &Stream,
        op: Reduce,
        x: &CpuBuffer<T>,
        y: Option<&CpuBuffer<T>>,
    ) -> Result<T> {
        let (dx, dy) = (x.data.clone(), y.map(|y| y.data.clone()));
        let result: Arc<Mutex<Option<T>>> = Arc::default();
        let out = result.clone();
        let mut reads = vec![&x.uses];
        reads.extend(y.map(|y| &y.uses));
        let done = submit(s, &reads, &[], move || {
            let xs = read(&dx);
            // Sums and dots: blocks in `T::Acc` lanes, added up in f64 (see
            // `BLOCK`), never less accurate than a `T::Acc` tree.
            let value = match op {
                Reduce::Sum => {
                    let total = pieces(&xs, &[], |x, _| sum_serial(x))
                        .into_iter()
                        .fold(0.0, |a, b| a + b);
                    T::from_acc(acc_from_f64::<T>(total))
                }
                Reduce::Dot => {
                    // `dot(&x, &x)` passes one array twice: lock it once.
                    let same = dy.as_ref().is_some_and(|d| HostArray::ptr_eq(&dx, d));
                    let yl = dy.as_ref().filter(|_| !same).map(|d| read(d));
                    let ys: &[T] = if same {
                        &xs
                    } else {
                        yl.as_deref().map_or(&[], |v| v)
                    };
                    let n = xs.len().min(ys.len());
                    let total = pieces(&xs[..n], &ys[..n], dot_serial)
                        .into_iter()
                        .fold(0.0, |a, b| a + b);
                    T::from_acc(acc_from_f64::<T>(total))
                }
                Reduce::Max => T::from_acc(
                    pieces(&xs, &[], |x, _| max_serial(x))
                        .into_iter()
                        .fold(T::Acc::nan(), |m, v| m.max(v)),
                ),
            };
            *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
            Ok(())
        })?;
        done.wait();
        let value = *result.lock().unwrap_or_else(|e| e.into_inner());
        value.ok_or_else(|| Error::StreamWork {
            message: "a reduction on the CPU stream did not produce a value".into(),
        })
    }

    fn matmul<T: Float>(
        s: &Stream,
        a: &CpuBuffer<T>,
        b: &CpuBuffer<T>,
        c: &mut CpuBuffer<T>,
        shape: &GemmShape,
    ) -> Result<()> {
        check_distinct(|| "matmul".into(), c, &[a, b])?;
        let shape = *shape;
        let (da, db, dc) = (a.data.clone(), b.data.clone(), c.data.clone());
        submit_replayable(s, &[&a.uses, &b.uses], &[&c.uses], move || {
            let ga = read(&da);
            // `matmul(&a, &a, ..)` passes one array twice: lock it once.
            let gb = (!HostArray::ptr_eq(&da, &db)).then(|| read(&db));
            let bs: &[T] = gb.as_deref().unwrap_or(&ga);
            if T::DTYPE == T::Acc::DTYPE {
                // f32 and f64 are their own accumulator: no copies.
                return gemm_acc::<T>(&shape, &ga, bs, &mut write(&dc));
            }
            let to_acc = |v: &[T]| v.iter().map(|x| x.to_acc()).collect::<Vec<T::Acc>>();
            let (va, vb) = (to_acc(&ga), to_acc(bs));
            drop((ga, gb));
            let mut vc = vec![T::Acc::zero(); write(&dc).len()];
            gemm_acc::<T::Acc>(&shape, &va, &vb, &mut vc)?;
            for (o, v) in write(&dc).iter_mut().zip(vc) {
                *o = T::from_acc(v);
            }
            Ok(())
        })
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::exp_f32;

    /// `exp_f32` against f64's `exp` rounded to f32, over every 61st f32
    /// from -120 to 100 (both ends past where e^x leaves f32's range):
    /// within 2 ulps where the result is normal, within one subnormal
    /// step below that, inf and 0 exactly where `expf` gives them.
    #[test]
    fn exp_f32_is_within_two_ulps() {
        let (lo, hi) = ((-120.0f32).to_bits(), 100.0f32.to_bits());
        // Negative floats are the bit patterns from -0 up to `lo`.
        let neg = (0x8000_0000..=lo).step_by(61).map(f32::from_bits);
        let pos = (0..=hi).step_by(61).map(f32::from_bits);
        for x in neg.chain(pos) {
            let want = (x as f64).exp() as f32;
            let got = exp_f32(x);
            if want.is_infinite() || want == 0.0 {
                assert_eq!(got, want, "exp({x})");
            } else if want.is_normal() {
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ulps <= 2, "exp({x}): {got} vs {want}, {ulps} ulps");
            } else {
                let step = f32::from_bits(1);
                assert!((got - want).abs() <= step, "exp({x}): {got} vs {want}");
            }
        }
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    }
}
