//! The CPU side of the built-in ops: jobs on the stream's worker thread,
//! ordered against other uses of their arrays like any stream work.

use std::sync::{Arc, Mutex};

use unigpu_cuda_safe::dlpack::{HostArray, HostRead, HostWrite};

use ndarray::{ArrayView2, ArrayViewMut2};
use num_traits::{Float as _, One, Zero};

use crate::array::Storage;
use crate::backend::cpu::{CpuBuffer, CpuStream, submit};
use crate::ops::{Binary, Float, Reduce, Unary};
use crate::stream::StreamImpl;
use crate::{Element, Error, GpuArray, Result, Stream};

fn stream(s: &Stream) -> Result<&Arc<CpuStream>> {
    match &s.imp {
        StreamImpl::Cpu(s) => Ok(s),
        _ => Err(Error::ContextMismatch {
            what: "a CPU op on a GPU stream",
        }),
    }
}

fn buf<T: Element>(a: &GpuArray<T>) -> Result<&CpuBuffer<T>> {
    match &a.storage {
        Storage::Cpu(b) => Ok(b),
        _ => Err(Error::ContextMismatch {
            what: "a GPU array in a CPU op",
        }),
    }
}

fn read<T: Element>(a: &HostArray<T>) -> HostRead<'_, T> {
    a.read()
}

fn write<T: Element>(a: &HostArray<T>) -> HostWrite<'_, T> {
    a.write()
}

pub(crate) fn fill<T: Element>(s: &Stream, x: &mut GpuArray<T>, value: T) -> Result<()> {
    let x = buf(x)?;
    let data = x.data.clone();
    submit(stream(s)?, &[], &[&x.uses], move || {
        write(&data).fill(value);
        Ok(())
    })
    .map(drop)
}

pub(crate) fn binary<T: Float>(
    s: &Stream,
    op: Binary,
    a: &GpuArray<T>,
    b: &GpuArray<T>,
    out: &mut GpuArray<T>,
) -> Result<()> {
    let (a, b, out) = (buf(a)?, buf(b)?, buf(out)?);
    let (da, db, dout) = (a.data.clone(), b.data.clone(), out.data.clone());
    let f = match op {
        Binary::Add => |x: T::Acc, y: T::Acc| x + y,
        Binary::Sub => |x: T::Acc, y: T::Acc| x - y,
        Binary::Mul => |x: T::Acc, y: T::Acc| x * y,
    };
    submit(stream(s)?, &[&a.uses, &b.uses], &[&out.uses], move || {
        let ga = read(&da);
        // `add(&a, &a, ..)` passes one array twice: lock it once.
        let gb = (!HostArray::ptr_eq(&da, &db)).then(|| read(&db));
        let bs: &[T] = gb.as_deref().unwrap_or(&ga);
        for ((o, x), y) in write(&dout).iter_mut().zip(ga.iter()).zip(bs) {
            *o = T::from_acc(f(x.to_acc(), y.to_acc()));
        }
        Ok(())
    })
    .map(drop)
}

pub(crate) fn unary<T: Float>(
    s: &Stream,
    op: Unary,
    x: &GpuArray<T>,
    out: &mut GpuArray<T>,
) -> Result<()> {
    let (x, out) = (buf(x)?, buf(out)?);
    let (dx, dout) = (x.data.clone(), out.data.clone());
    let f = match op {
        // `!(v <= 0)` keeps NaN, as the docs promise.
        Unary::Relu => |v: T::Acc| {
            if v <= T::Acc::zero() {
                T::Acc::zero()
            } else {
                v
            }
        },
        Unary::Sigmoid => |v: T::Acc| T::Acc::one() / (T::Acc::one() + (-v).exp()),
        Unary::Tanh => |v: T::Acc| v.tanh(),
    };
    submit(stream(s)?, &[&x.uses], &[&out.uses], move || {
        for (o, v) in write(&dout).iter_mut().zip(read(&dx).iter()) {
            *o = T::from_acc(f(v.to_acc()));
        }
        Ok(())
    })
    .map(drop)
}

pub(crate) fn axpy<T: Float>(
    s: &Stream,
    alpha: T,
    x: &GpuArray<T>,
    y: &mut GpuArray<T>,
) -> Result<()> {
    let (x, y) = (buf(x)?, buf(y)?);
    let (dx, dy) = (x.data.clone(), y.data.clone());
    let alpha = alpha.to_acc();
    submit(stream(s)?, &[&x.uses], &[&y.uses], move || {
        for (yi, xi) in write(&dy).iter_mut().zip(read(&dx).iter()) {
            // mul_add: the GPU kernel's `a * x + y` compiles to one FMA.
            *yi = T::from_acc(alpha.mul_add(xi.to_acc(), yi.to_acc()));
        }
        Ok(())
    })
    .map(drop)
}

pub(crate) fn scale<T: Float>(s: &Stream, alpha: T, x: &mut GpuArray<T>) -> Result<()> {
    let x = buf(x)?;
    let dx = x.data.clone();
    let alpha = alpha.to_acc();
    submit(stream(s)?, &[], &[&x.uses], move || {
        for v in write(&dx).iter_mut() {
            *v = T::from_acc(alpha * v.to_acc());
        }
        Ok(())
    })
    .map(drop)
}

pub(crate) fn reduce<T: Float>(
    s: &Stream,
    op: Reduce,
    x: &GpuArray<T>,
    y: Option<&GpuArray<T>>,
) -> Result<T> {
    let x = buf(x)?;
    let y = y.map(buf).transpose()?;
    let (dx, dy) = (x.data.clone(), y.map(|y| y.data.clone()));
    let result: Arc<Mutex<Option<T>>> = Arc::default();
    let out = result.clone();
    let mut reads = vec![&x.uses];
    reads.extend(y.map(|y| &y.uses));
    let done = submit(stream(s)?, &reads, &[], move || {
        let xs = read(&dx);
        // Sums are accumulated in f64: more accurate than the f32 tree on
        // the GPU, and never less.
        let value = match op {
            Reduce::Sum => T::from_acc(acc_from_f64::<T>(
                xs.iter().map(|v| v.to_acc().into()).sum(),
            )),
            Reduce::Dot => {
                let yl = dy.as_ref().map(|d| read(d));
                let ys: &[T] = yl.as_deref().map_or(&[], |v| v);
                let total: f64 = xs
                    .iter()
                    .zip(ys)
                    .map(|(a, b)| a.to_acc().into() * b.to_acc().into())
                    .sum();
                T::from_acc(acc_from_f64::<T>(total))
            }
            Reduce::Max => T::from_acc(
                xs.iter()
                    .map(|v| v.to_acc())
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

fn acc_from_f64<T: Float>(v: f64) -> T::Acc {
    num_traits::cast(v).unwrap_or_else(T::Acc::nan)
}

pub(crate) fn matmul<T: Float>(
    s: &Stream,
    a: &GpuArray<T>,
    b: &GpuArray<T>,
    c: &mut GpuArray<T>,
    (m, k, n): (usize, usize, usize),
) -> Result<()> {
    let (a, b, c) = (buf(a)?, buf(b)?, buf(c)?);
    let (da, db, dc) = (a.data.clone(), b.data.clone(), c.data.clone());
    submit(stream(s)?, &[&a.uses, &b.uses], &[&c.uses], move || {
        let to_acc = |v: &[T]| v.iter().map(|x| x.to_acc()).collect::<Vec<T::Acc>>();
        let (va, vb) = (to_acc(&read(&da)), to_acc(&read(&db)));
        let mut vc = vec![T::Acc::zero(); m * n];
        let shape = |e: ndarray::ShapeError| Error::StreamWork {
            message: format!("matmul: {e}"),
        };
        let av = ArrayView2::from_shape((m, k), &va).map_err(shape)?;
        let bv = ArrayView2::from_shape((k, n), &vb).map_err(shape)?;
        let cv = ArrayViewMut2::from_shape((m, n), &mut vc).map_err(shape)?;
        T::Acc::gemm(&av, &bv, cv);
        for (o, v) in write(&dc).iter_mut().zip(vc) {
            *o = T::from_acc(v);
        }
        Ok(())
    })
    .map(drop)
}

/// Matrix products on the CPU, through ndarray (which uses the
/// `matrixmultiply` kernels for f32 and f64).
pub trait CpuGemm: Sized {
    fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, c: ArrayViewMut2<'_, Self>);
}

macro_rules! cpu_gemm {
    ($($t:ty),*) => {$(
        impl CpuGemm for $t {
            fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, mut c: ArrayViewMut2<'_, Self>) {
                ndarray::linalg::general_mat_mul(1.0, a, b, 0.0, &mut c);
            }
        }
    )*};
}
cpu_gemm!(f32, f64);
