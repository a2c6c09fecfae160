//! The CPU side of the built-in ops: jobs on the stream's worker thread,
//! ordered against other uses of their arrays like any stream work.

use std::sync::{Arc, Mutex};

use unigpu_cuda_safe::dlpack::{HostArray, HostRead, HostWrite};

use ndarray::{ArrayView2, ArrayViewMut2};
use num_traits::{Float as _, One, Zero};

use super::Cpu;
use super::{CpuBuffer, CpuStream, submit};
use crate::backend::contract::BuiltinOps;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::ops::{Binary, Float, Reduce, Unary};

type Stream = Arc<CpuStream>;

fn read<T: Element>(a: &HostArray<T>) -> HostRead<'_, T> {
    a.read()
}

fn write<T: Element>(a: &HostArray<T>) -> HostWrite<'_, T> {
    a.write()
}

fn acc_from_f64<T: Float>(v: f64) -> T::Acc {
    num_traits::cast(v).unwrap_or_else(T::Acc::nan)
}

/// `c = a · b` in the accumulator type (f32 or f64), through ndarray and
/// its `matrixmultiply` kernels.
fn gemm_acc<A: Element>(
    (m, k, n): (usize, usize, usize),
    a: &[A],
    b: &[A],
    c: &mut [A],
) -> Result<()> {
    match A::DTYPE {
        DType::F32 => gemm::<f32>((m, k, n), cast(a), cast(b), bytemuck::cast_slice_mut(c)),
        DType::F64 => gemm::<f64>((m, k, n), cast(a), cast(b), bytemuck::cast_slice_mut(c)),
        other => Err(Error::Unsupported {
            backend: crate::backend::Backend::Cpu,
            what: format!("matmul accumulating in {other}"),
        }),
    }
}

fn cast<A: Element, B: Element>(x: &[A]) -> &[B] {
    bytemuck::cast_slice(x)
}

fn gemm<F: ndarray::LinalgScalar>(
    (m, k, n): (usize, usize, usize),
    a: &[F],
    b: &[F],
    c: &mut [F],
) -> Result<()> {
    let shape = |e: ndarray::ShapeError| Error::StreamWork {
        message: format!("matmul: {e}"),
    };
    let av = ArrayView2::from_shape((m, k), a).map_err(shape)?;
    let bv = ArrayView2::from_shape((k, n), b).map_err(shape)?;
    let mut cv = ArrayViewMut2::from_shape((m, n), c).map_err(shape)?;
    ndarray::linalg::general_mat_mul(F::one(), &av, &bv, F::zero(), &mut cv);
    Ok(())
}

impl BuiltinOps for Cpu {
    fn fill<T: Element>(s: &Stream, x: &mut CpuBuffer<T>, value: T) -> Result<()> {
        let data = x.data.clone();
        submit(s, &[], &[&x.uses], move || {
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
        let (da, db, dout) = (a.data.clone(), b.data.clone(), out.data.clone());
        let f = match op {
            Binary::Add => |x: T::Acc, y: T::Acc| x + y,
            Binary::Sub => |x: T::Acc, y: T::Acc| x - y,
            Binary::Mul => |x: T::Acc, y: T::Acc| x * y,
        };
        submit(s, &[&a.uses, &b.uses], &[&out.uses], move || {
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

    fn unary<T: Float>(
        s: &Stream,
        op: Unary,
        x: &CpuBuffer<T>,
        out: &mut CpuBuffer<T>,
    ) -> Result<()> {
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
        submit(s, &[&x.uses], &[&out.uses], move || {
            for (o, v) in write(&dout).iter_mut().zip(read(&dx).iter()) {
                *o = T::from_acc(f(v.to_acc()));
            }
            Ok(())
        })
        .map(drop)
    }

    fn axpy<T: Float>(s: &Stream, alpha: T, x: &CpuBuffer<T>, y: &mut CpuBuffer<T>) -> Result<()> {
        let (dx, dy) = (x.data.clone(), y.data.clone());
        let alpha = alpha.to_acc();
        submit(s, &[&x.uses], &[&y.uses], move || {
            for (yi, xi) in write(&dy).iter_mut().zip(read(&dx).iter()) {
                // mul_add: the GPU kernel's `a * x + y` compiles to one FMA.
                *yi = T::from_acc(alpha.mul_add(xi.to_acc(), yi.to_acc()));
            }
            Ok(())
        })
        .map(drop)
    }

    fn scale<T: Float>(s: &Stream, alpha: T, x: &mut CpuBuffer<T>) -> Result<()> {
        let dx = x.data.clone();
        let alpha = alpha.to_acc();
        submit(s, &[], &[&x.uses], move || {
            for v in write(&dx).iter_mut() {
                *v = T::from_acc(alpha * v.to_acc());
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

    fn matmul<T: Float>(
        s: &Stream,
        a: &CpuBuffer<T>,
        b: &CpuBuffer<T>,
        c: &mut CpuBuffer<T>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let (da, db, dc) = (a.data.clone(), b.data.clone(), c.data.clone());
        submit(s, &[&a.uses, &b.uses], &[&c.uses], move || {
            let to_acc = |v: &[T]| v.iter().map(|x| x.to_acc()).collect::<Vec<T::Acc>>();
            let (va, vb) = (to_acc(&read(&da)), to_acc(&read(&db)));
            let mut vc = vec![T::Acc::zero(); m * n];
            gemm_acc::<T::Acc>((m, k, n), &va, &vb, &mut vc)?;
            for (o, v) in write(&dc).iter_mut().zip(vc) {
                *o = T::from_acc(v);
            }
            Ok(())
        })
        .map(drop)
    }
}
