//! The built-in ops and the stream copies on the torch backend: each one
//! makes its stream current, orders its operands, and calls one torch op.

use std::sync::Arc;

use num_traits::{Float as _, NumCast};

use super::Torch;
use super::{TorchBuffer, TorchStream};
use crate::backend::contract::BuiltinOps;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::GemmShape;

type Stream = Arc<TorchStream>;

impl BuiltinOps for Torch {
    fn fill<T: Element>(s: &Stream, x: &mut TorchBuffer, value: T) -> Result<()> {
        let d = x;
        let mut bits = [0u8; 8];
        let value = bytemuck::bytes_of(&value);
        bits[..value.len()].copy_from_slice(value);
        let _current = s.enter()?;
        d.order(s, true)?;
        Ok(d.tensor_mut().fill_bits(u64::from_le_bytes(bits))?)
    }

    fn binary<T: Float>(
        s: &Stream,
        op: Binary,
        a: &TorchBuffer,
        b: &TorchBuffer,
        out: &mut TorchBuffer,
    ) -> Result<()> {
        let o = out;
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

    fn unary<T: Float>(
        s: &Stream,
        op: Unary,
        x: &TorchBuffer,
        out: &mut TorchBuffer,
    ) -> Result<()> {
        let o = out;
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

    fn axpy<T: Float>(s: &Stream, alpha: T, x: &TorchBuffer, y: &mut TorchBuffer) -> Result<()> {
        let _current = s.enter()?;
        x.order(s, false)?;
        y.order(s, true)?;
        Ok(y.tensor_mut()
            .add_scaled(&x.tensor, alpha.to_acc().into())?)
    }

    fn scale<T: Float>(s: &Stream, alpha: T, x: &mut TorchBuffer) -> Result<()> {
        let _current = s.enter()?;
        x.order(s, true)?;
        Ok(x.tensor_mut().scale(alpha.to_acc().into())?)
    }

    fn reduce<T: Float>(
        s: &Stream,
        op: Reduce,
        x: &TorchBuffer,
        y: Option<&TorchBuffer>,
    ) -> Result<T> {
        let _current = s.enter()?;
        x.order(s, false)?;
        let value = match (op, y) {
            (Reduce::Sum, _) => x.tensor.sum_acc()?,
            (Reduce::Max, _) => x.tensor.max_ignoring_nan()?,
            (Reduce::Dot, Some(y)) => {
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

    fn matmul<T: Float>(
        s: &Stream,
        a: &TorchBuffer,
        b: &TorchBuffer,
        c: &mut TorchBuffer,
        shape: &GemmShape,
    ) -> Result<()> {
        let dim = |d: usize| {
            i64::try_from(d).map_err(|_| Error::SizeMismatch {
                what: "matmul dimension, offset or stride",
                expected: i64::MAX as usize,
                actual: d,
            })
        };
        let GemmShape {
            batch,
            m,
            k,
            n,
            a: sa,
            b: sb,
        } = *shape;
        if batch == 0 || m == 0 || n == 0 {
            return Ok(());
        }
        let _current = s.enter()?;
        a.order(s, false)?;
        b.order(s, false)?;
        c.order(s, true)?;
        // The operands are read in place through strided views of their
        // buffers (ATen passes a transposed one to cuBLAS as op T).
        Ok(c.tensor_mut().bmm_out(
            &a.tensor,
            &b.tensor,
            dim(batch)?,
            dim(m)?,
            dim(k)?,
            dim(n)?,
            dim(sa.offset)?,
            dim(sa.batch_stride)?,
            dim(sa.ld)?,
            sa.transposed,
            dim(sb.offset)?,
            dim(sb.batch_stride)?,
            dim(sb.ld)?,
            sb.transposed,
        )?)
    }
}
