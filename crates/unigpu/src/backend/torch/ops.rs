//! The built-in ops and the stream copies on the torch backend: each one
//! makes its stream current, orders its operands, and calls one torch op.

use std::sync::Arc;

use num_traits::{Float as _, NumCast};

use super::{TorchBuffer, TorchStream};
use crate::array::Storage;
use crate::ops::{Binary, Float, Reduce, Unary};
use crate::stream::StreamImpl;
use crate::{Element, Error, GpuArray, Result, Stream};

pub(crate) fn stream_of<'a>(
    stream: &'a Stream,
    what: &'static str,
) -> Result<&'a Arc<TorchStream>> {
    match &stream.imp {
        StreamImpl::Torch(s) => Ok(s),
        _ => Err(Error::ContextMismatch { what }),
    }
}

pub(crate) fn buf<'a, T: Element>(
    x: &'a GpuArray<T>,
    what: &'static str,
) -> Result<&'a TorchBuffer> {
    match &x.storage {
        Storage::Torch(b) => Ok(b),
        _ => Err(Error::ContextMismatch { what }),
    }
}

pub(crate) fn buf_mut<'a, T: Element>(
    x: &'a mut GpuArray<T>,
    what: &'static str,
) -> Result<&'a mut TorchBuffer> {
    match &mut x.storage {
        Storage::Torch(b) => Ok(b),
        _ => Err(Error::ContextMismatch { what }),
    }
}

pub(crate) fn fill<T: Element>(stream: &Stream, x: &mut GpuArray<T>, value: T) -> Result<()> {
    let s = stream_of(stream, "fill")?;
    let d = buf_mut(x, "fill")?;
    let mut bits = [0u8; 8];
    let value = bytemuck::bytes_of(&value);
    bits[..value.len()].copy_from_slice(value);
    let _current = s.enter()?;
    d.order(s, true)?;
    Ok(d.tensor_mut().fill_bits(u64::from_le_bytes(bits))?)
}

pub(crate) fn binary<T: Float>(
    stream: &Stream,
    op: Binary,
    a: &GpuArray<T>,
    b: &GpuArray<T>,
    out: &mut GpuArray<T>,
) -> Result<()> {
    let what = "element-wise op";
    let s = stream_of(stream, what)?;
    let (a, b, o) = (buf(a, what)?, buf(b, what)?, buf_mut(out, what)?);
    let _current = s.enter()?;
    a.order(s, false)?;
    b.order(s, false)?;
    o.order(s, true)?;
    let out = o.tensor_mut();
    Ok(match op {
        Binary::Add => out.add_out(&a.tensor, &b.tensor),
        Binary::Sub => out.sub_out(&a.tensor, &b.tensor),
        Binary::Mul => out.mul_out(&a.tensor, &b.tensor),
    }?)
}

pub(crate) fn unary<T: Float>(
    stream: &Stream,
    op: Unary,
    x: &GpuArray<T>,
    out: &mut GpuArray<T>,
) -> Result<()> {
    let what = "element-wise op";
    let s = stream_of(stream, what)?;
    let (x, o) = (buf(x, what)?, buf_mut(out, what)?);
    let _current = s.enter()?;
    x.order(s, false)?;
    o.order(s, true)?;
    let out = o.tensor_mut();
    Ok(match op {
        Unary::Relu => out.relu_out(&x.tensor),
        Unary::Sigmoid => out.sigmoid_out(&x.tensor),
        Unary::Tanh => out.tanh_out(&x.tensor),
    }?)
}

pub(crate) fn axpy<T: Float>(
    stream: &Stream,
    alpha: T,
    x: &GpuArray<T>,
    y: &mut GpuArray<T>,
) -> Result<()> {
    let s = stream_of(stream, "axpy")?;
    let (x, y) = (buf(x, "axpy")?, buf_mut(y, "axpy")?);
    let _current = s.enter()?;
    x.order(s, false)?;
    y.order(s, true)?;
    Ok(y.tensor_mut()
        .add_scaled(&x.tensor, alpha.to_acc().into())?)
}

pub(crate) fn scale<T: Float>(stream: &Stream, alpha: T, x: &mut GpuArray<T>) -> Result<()> {
    let s = stream_of(stream, "scale")?;
    let x = buf_mut(x, "scale")?;
    let _current = s.enter()?;
    x.order(s, true)?;
    Ok(x.tensor_mut().scale(alpha.to_acc().into())?)
}

pub(crate) fn reduce<T: Float>(
    stream: &Stream,
    op: Reduce,
    x: &GpuArray<T>,
    y: Option<&GpuArray<T>>,
) -> Result<T> {
    let s = stream_of(stream, "reduction")?;
    let x = buf(x, "reduction")?;
    let _current = s.enter()?;
    x.order(s, false)?;
    let value = match (op, y) {
        (Reduce::Sum, _) => x.tensor.sum_acc()?,
        (Reduce::Max, _) => x.tensor.max_ignoring_nan()?,
        (Reduce::Dot, Some(y)) => {
            let y = buf(y, "reduction")?;
            y.order(s, false)?;
            x.tensor.dot_acc(&y.tensor)?
        }
        (Reduce::Dot, None) => {
            return Err(Error::SizeMismatch {
                what: "dot without a second operand",
                expected: 1,
                actual: 0,
            });
        }
    };
    // The value was accumulated in T::Acc; rounding it to T happens once.
    let acc: T::Acc = NumCast::from(value).unwrap_or_else(T::Acc::nan);
    Ok(T::from_acc(acc))
}

pub(crate) fn matmul<T: Float>(
    stream: &Stream,
    a: &GpuArray<T>,
    b: &GpuArray<T>,
    c: &mut GpuArray<T>,
    (m, k, n): (usize, usize, usize),
) -> Result<()> {
    let s = stream_of(stream, "matmul")?;
    let (a, b, c) = (buf(a, "matmul")?, buf(b, "matmul")?, buf_mut(c, "matmul")?);
    let dim = |d: usize| {
        i64::try_from(d).map_err(|_| Error::SizeMismatch {
            what: "matmul dimension",
            expected: i64::MAX as usize,
            actual: d,
        })
    };
    let (m, k, n) = (dim(m)?, dim(k)?, dim(n)?);
    let _current = s.enter()?;
    a.order(s, false)?;
    b.order(s, false)?;
    c.order(s, true)?;
    Ok(c.tensor_mut().mm_out(&a.tensor, &b.tensor, m, k, n)?)
}
