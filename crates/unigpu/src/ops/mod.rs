//! Built-in ops with one API on every backend: element-wise arithmetic and
//! activations, reductions, and matmul (cuBLAS on CUDA, faer on the
//! CPU).

mod axes;
mod elementwise;
pub(crate) mod kinds;
mod operand;
mod rows_cpu;

pub use kinds::Float;
pub(crate) use kinds::{Binary, BinaryMath, Compare, Reduce, Unary, UnaryMath};
pub use operand::{AsView, AsViewMut};

use crate::stream::check_len;
use crate::{ArrayView, ArrayViewMut, Context, Element, Error, Result, Stream};
use unigpu_core::{GemmOperand, GemmShape};

/// Built-in ops on one stream: `ctx.ops()` (the default stream) or
/// `ctx.ops_on(&stream)`. Every call is stream-ordered like a kernel
/// launch; the reductions wait for their result.
#[derive(Debug, Clone, Copy)]
pub struct Ops<'a> {
    ctx: &'a Context,
    stream: &'a Stream,
}

impl Context {
    /// Built-in ops on the default stream.
    pub fn ops(&self) -> Ops<'_> {
        Ops {
            ctx: self,
            stream: self.default_stream(),
        }
    }

    /// Built-in ops on `stream`.
    pub fn ops_on<'a>(&'a self, stream: &'a Stream) -> Ops<'a> {
        Ops { ctx: self, stream }
    }
}

impl<'a> Ops<'a> {
    /// The context the ops run in.
    pub fn context(&self) -> &'a Context {
        self.ctx
    }

    /// Sets every element of `x` (an array or a writable view) to `value`.
    pub fn fill<T: Element>(&self, x: &mut impl AsViewMut<T>, value: T) -> Result<()> {
        let mut x = x.as_view_mut();
        if !x.layout.is_whole(x.array.storage.len()) {
            // A view: the value broadcast into its elements.
            self.same_backend(&x.array.ctx, "fill")?;
            let one = crate::strided::stage(self.ctx, self.stream, &[value])?;
            return self
                .on()
                .copy(&one.view().reshape(Vec::<usize>::new())?, &mut x);
        }
        self.same_backend(&x.array.ctx, "fill")?;
        self.stream.imp.fill(&mut x.array.storage, value)
    }

    /// `dst = src`: equal shapes, `src` broadcast to `dst`'s shape, or two
    /// contiguous arrays of one length (the elements in order).
    pub fn copy<T: Element>(
        &self,
        src: &impl AsView<T>,
        dst: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let (src, mut dst) = (src.as_view(), dst.as_view_mut());
        let whole = |l: &unigpu_core::Layout, len: usize| l.is_whole(len);
        if whole(&src.layout, src.array.storage.len())
            && whole(&dst.layout, dst.array.storage.len())
        {
            return self.stream.copy(src.array, dst.array);
        }
        self.on().copy(&src, &mut dst)
    }

    /// `out = a + b`, element-wise, broadcasting size-1 axes (numpy's
    /// rules); `out` has the broadcast shape.
    pub fn add<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary(Binary::Add, a.as_view(), b.as_view(), out.as_view_mut())
    }

    /// `out = a - b`, element-wise, broadcasting as [`Ops::add`].
    pub fn sub<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary(Binary::Sub, a.as_view(), b.as_view(), out.as_view_mut())
    }

    /// `out = a * b`, element-wise, broadcasting as [`Ops::add`].
    pub fn mul<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary(Binary::Mul, a.as_view(), b.as_view(), out.as_view_mut())
    }

    /// `y = alpha * x + y` (`x` broadcast to `y`'s shape).
    pub fn axpy<T: Float>(
        &self,
        alpha: T,
        x: &impl AsView<T>,
        y: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let (x, mut y) = (x.as_view(), y.as_view_mut());
        if x.ndim() == 1 && y.ndim() == 1 {
            check_len("axpy", y.len(), x.len())?;
        }
        let x = self.on().whole(&x, y.layout.shape(), "axpy")?;
        self.on().write_whole(&mut y, true, "axpy", |y| {
            self.stream.imp.axpy(alpha, x.storage(), y)
        })
    }

    /// `x = alpha * x`.
    pub fn scale<T: Float>(&self, alpha: T, x: &mut impl AsViewMut<T>) -> Result<()> {
        let mut x = x.as_view_mut();
        self.on()
            .write_whole(&mut x, true, "scale", |x| self.stream.imp.scale(alpha, x))
    }

    /// `out = max(x, 0)`; a NaN stays NaN (as in torch and numpy), on
    /// every backend.
    pub fn relu<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary(Unary::Relu, x.as_view(), out.as_view_mut())
    }

    /// `out = 1 / (1 + e^-x)`.
    pub fn sigmoid<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary(Unary::Sigmoid, x.as_view(), out.as_view_mut())
    }

    /// `out = tanh(x)`.
    pub fn tanh<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary(Unary::Tanh, x.as_view(), out.as_view_mut())
    }

    /// The sum of all elements (0 for an empty array), accumulated in
    /// `T::Acc` by a tree reduction.
    pub fn sum<T: Float>(&self, x: &impl AsView<T>) -> Result<T> {
        self.reduce(Reduce::Sum, x.as_view(), None)
    }

    /// The largest element; NaNs are ignored unless every element is NaN.
    /// An empty array is an error.
    pub fn max<T: Float>(&self, x: &impl AsView<T>) -> Result<T> {
        let x = x.as_view();
        if x.is_empty() {
            return Err(Error::SizeMismatch {
                what: "max of an empty array",
                expected: 1,
                actual: 0,
            });
        }
        self.reduce(Reduce::Max, x, None)
    }

    /// `sum(x[i] * y[i])` over the elements of two arrays of one shape.
    pub fn dot<T: Float>(&self, x: &impl AsView<T>, y: &impl AsView<T>) -> Result<T> {
        let (x, y) = (x.as_view(), y.as_view());
        check_len("dot", x.len(), y.len())?;
        if x.shape() != y.shape() && !(x.is_contiguous() && y.is_contiguous()) {
            return Err(Error::Shape {
                what: "dot",
                message: format!("shapes {:?} and {:?} differ", x.shape(), y.shape()),
            });
        }
        self.reduce(Reduce::Dot, x, Some(y))
    }

    /// `c = a · b` for row-major `a` (m×k), `b` (k×n) and `c` (m×n) of
    /// any shape with those lengths (1-D arrays, as before shapes). For
    /// 2-D arrays and views, [`Ops::mm`] takes the sizes from the shapes.
    pub fn matmul<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        c: &mut impl AsViewMut<T>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let (a, b, mut c) = (a.as_view(), b.as_view(), c.as_view_mut());
        for (what, len, rows, cols) in [
            ("matmul a", a.len(), m, k),
            ("matmul b", b.len(), k, n),
            ("matmul c", c.len(), m, n),
        ] {
            let expected = rows.saturating_mul(cols);
            check_len(what, expected, len)?;
        }
        // Operands of the matrices' shapes may be views read in place
        // (`a.t()`); any other shape is its elements in row-major order.
        let on = self.on();
        fn operand<'v, T: Element>(
            on: &operand::On<'_>,
            v: &ArrayView<'v, T>,
            [rows, cols]: [usize; 2],
        ) -> Result<(operand::Whole<'v, T>, GemmOperand)> {
            if v.shape() == [rows, cols] {
                return on.gemm_operand(v, "matmul");
            }
            let whole = on.whole(v, v.layout.shape(), "matmul")?;
            Ok((whole, GemmOperand::row_major(rows, cols)))
        }
        let (a, b) = (operand(&on, &a, [m, k])?, operand(&on, &b, [k, n])?);
        self.gemm(a, b, &mut c, (1, m, k, n), "matmul")
    }

    /// `out = a · b` for 2-D `a` (m×k), `b` (k×n) and `out` (m×n), the
    /// sizes taken from the shapes. Any of them may be a view: a
    /// transposed one (`a.t()`, its last two axes swapped), a slice or a
    /// view with a leading dimension is read in place by every backend
    /// (cuBLAS's and the others' transpose flags), any other that is not
    /// row-major (negative strides, say) is copied to a contiguous buffer
    /// first, and an `out` that is not all of its array in row-major order
    /// is computed into one and copied into place.
    pub fn mm<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let (a, b, mut out) = (a.as_view(), b.as_view(), out.as_view_mut());
        let (&[m, k], &[k2, n], &[m2, n2]) = (a.shape(), b.shape(), out.shape()) else {
            return Err(Error::Shape {
                what: "mm",
                message: format!(
                    "takes 2-D arrays (bmm takes 3-D); got shapes {:?}, {:?} and {:?}",
                    a.shape(),
                    b.shape(),
                    out.shape()
                ),
            });
        };
        if k != k2 || m != m2 || n != n2 {
            return Err(Error::Shape {
                what: "mm",
                message: format!(
                    "{:?} · {:?} is {:?}, not {:?}",
                    a.shape(),
                    b.shape(),
                    [m, n],
                    out.shape()
                ),
            });
        }
        let (a, b) = (
            self.on().gemm_operand(&a, "mm")?,
            self.on().gemm_operand(&b, "mm")?,
        );
        self.gemm(a, b, &mut out, (1, m, k, n), "mm")
    }

    /// `out[z] = a[z] · b[z]` for each of `out`'s `B` matrices: `a`
    /// (B, m, k), `b` (B, k, n), `out` (B, m, n). `a` or `b` may be 2-D,
    /// or have a first axis of 1, and is then the same matrix for every
    /// `z` (broadcast, never copied). Views are read as [`Ops::mm`] reads
    /// them: transposed matrices (`x.swap_axes(1, 2)`), slices along any
    /// axis (`x.slice(0, 1..3)`) and broadcast batches go to the
    /// backend in place, in one batched call (cuBLAS's strided-batched
    /// GEMM on CUDA, `bmm` on torch); f16/bf16 accumulate in f32.
    pub fn bmm<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let (a, b, mut out) = (a.as_view(), b.as_view(), out.as_view_mut());
        let shapes = || format!("{:?} · {:?} into {:?}", a.shape(), b.shape(), out.shape());
        let &[batch, m, n] = out.shape() else {
            return Err(Error::Shape {
                what: "bmm",
                message: format!("the output must be 3-D (batch, m, n): {}", shapes()),
            });
        };
        // An operand's batch and matrix: (B, r, c), (1, r, c) or (r, c).
        let split = |shape: &[usize]| match *shape {
            [g, r, c] if g == batch || g == 1 => Some((r, c)),
            [r, c] => Some((r, c)),
            _ => None,
        };
        let (Some((m2, k)), Some((k2, n2))) = (split(a.shape()), split(b.shape())) else {
            return Err(Error::Shape {
                what: "bmm",
                message: format!(
                    "a and b must be 3-D with {batch} or 1 matrices, or 2-D: {}",
                    shapes()
                ),
            });
        };
        if m2 != m || n2 != n || k2 != k {
            return Err(Error::Shape {
                what: "bmm",
                message: format!("(m×k) · (k×n) is (m×n) for each matrix: {}", shapes()),
            });
        }
        let (a, b) = (
            self.on().gemm_operand(&a, "bmm")?,
            self.on().gemm_operand(&b, "bmm")?,
        );
        self.gemm(a, b, &mut out, (batch, m, k, n), "bmm")
    }

    /// `out = a · b` for `batch` products of the operands where they lie
    /// (see [`GemmShape`]), `out` the (batch, m, n) or (m, n) result.
    fn gemm<T: Float>(
        &self,
        (a, sa): (operand::Whole<'_, T>, GemmOperand),
        (b, sb): (operand::Whole<'_, T>, GemmOperand),
        out: &mut ArrayViewMut<'_, T>,
        (batch, m, k, n): (usize, usize, usize, usize),
        what: &'static str,
    ) -> Result<()> {
        let shape = GemmShape {
            batch,
            m,
            k,
            n,
            a: sa,
            b: sb,
        };
        let (a, b) = (a.storage(), b.storage());
        self.on().write_whole(out, false, what, |c| {
            // The views' layouts were checked against their buffers when
            // made; this keeps a wrong shape from reaching a backend.
            shape
                .check(a.len(), b.len(), c.len())
                .map_err(|message| Error::Shape { what, message })?;
            self.stream.imp.matmul(a, b, c, &shape)
        })
    }

    pub(crate) fn binary<T: Float>(
        &self,
        op: Binary,
        a: ArrayView<'_, T>,
        b: ArrayView<'_, T>,
        mut out: ArrayViewMut<'_, T>,
    ) -> Result<()> {
        let what = "element-wise op";
        let flat = a.ndim() == 1 && b.ndim() == 1 && out.ndim() == 1;
        let shape = match unigpu_core::broadcast_shapes(a.shape(), b.shape()) {
            Ok(shape) if shape == out.shape() => shape,
            // 1-D arrays of different lengths: the error they always gave.
            _ if flat && a.len() != b.len() && a.len() != 1 && b.len() != 1 => {
                return check_len(what, a.len(), b.len());
            }
            _ if flat && out.len() != a.len().max(b.len()) => {
                return check_len(what, out.len(), a.len().max(b.len()));
            }
            Ok(shape) => {
                return Err(Error::Shape {
                    what,
                    message: format!(
                        "{:?} and {:?} broadcast to {shape:?}, the output is {:?}",
                        a.shape(),
                        b.shape(),
                        out.shape()
                    ),
                });
            }
            Err(e) => return Err(crate::array::shape_error(what, e)),
        };
        let a = self.on().whole(&a, &shape, what)?;
        let b = self.on().whole(&b, &shape, what)?;
        self.on().write_whole(&mut out, false, what, |out| {
            self.stream.imp.binary(op, a.storage(), b.storage(), out)
        })
    }

    pub(crate) fn unary<T: Float>(
        &self,
        op: Unary,
        x: ArrayView<'_, T>,
        mut out: ArrayViewMut<'_, T>,
    ) -> Result<()> {
        let what = "element-wise op";
        if x.shape() != out.shape() {
            if x.ndim() == 1 && out.ndim() == 1 {
                return check_len(what, out.len(), x.len());
            }
            return Err(Error::Shape {
                what,
                message: format!("the input is {:?}, the output {:?}", x.shape(), out.shape()),
            });
        }
        let shape = x.shape().to_vec();
        let x = self.on().whole(&x, &shape, what)?;
        self.on().write_whole(&mut out, false, what, |out| {
            self.stream.imp.unary(op, x.storage(), out)
        })
    }

    fn reduce<T: Float>(
        &self,
        op: Reduce,
        x: ArrayView<'_, T>,
        y: Option<ArrayView<'_, T>>,
    ) -> Result<T> {
        self.same_backend(&x.array.ctx, "reduction")?;
        if self.stream.is_capturing() {
            return Err(Error::Unsupported {
                backend: self.ctx.backend(),
                what: format!(
                    "{op:?} on a stream that captures a graph: a reduction returns its value \
                     to the host, which a replay cannot; reduce before begin_capture or after \
                     end_capture"
                ),
            });
        }
        let shape = x.shape().to_vec();
        let x = self.on().whole(&x, &shape, "reduction")?;
        let y = match &y {
            // Same length (checked by `dot`): read in the order of `x`'s shape.
            Some(y) => {
                let y = if y.shape() == shape.as_slice() {
                    y.clone()
                } else {
                    y.clone().reshape(shape.clone())?
                };
                Some(self.on().whole(&y, &shape, "reduction")?)
            }
            None => None,
        };
        self.stream
            .imp
            .reduce(op, x.storage(), y.as_ref().map(|y| y.storage()))
    }

    fn on(&self) -> operand::On<'a> {
        operand::On {
            ctx: self.ctx,
            stream: self.stream,
        }
    }

    fn same_backend(&self, other: &Context, what: &'static str) -> Result<()> {
        if self.ctx.same_device(other) {
            Ok(())
        } else {
            Err(Error::ContextMismatch { what })
        }
    }
}
