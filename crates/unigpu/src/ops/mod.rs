//! Built-in ops with one API on every backend: element-wise arithmetic and
//! activations, reductions, and matmul (cuBLAS on CUDA, faer on the
//! CPU).

pub(crate) mod kinds;

pub use kinds::Float;
pub(crate) use kinds::{Binary, Reduce, Unary};

use crate::stream::check_len;
use crate::{Context, Element, Error, GpuArray, Result, Stream};

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

    /// Sets every element of `x` to `value`.
    pub fn fill<T: Element>(&self, x: &mut GpuArray<T>, value: T) -> Result<()> {
        self.same_backend(&x.ctx, "fill")?;
        self.stream.imp.fill(&mut x.storage, value)
    }

    /// `dst = src`.
    pub fn copy<T: Element>(&self, src: &GpuArray<T>, dst: &mut GpuArray<T>) -> Result<()> {
        self.stream.copy(src, dst)
    }

    /// `out = a + b`, element-wise.
    pub fn add<T: Float>(
        &self,
        a: &GpuArray<T>,
        b: &GpuArray<T>,
        out: &mut GpuArray<T>,
    ) -> Result<()> {
        self.binary(Binary::Add, a, b, out)
    }

    /// `out = a - b`, element-wise.
    pub fn sub<T: Float>(
        &self,
        a: &GpuArray<T>,
        b: &GpuArray<T>,
        out: &mut GpuArray<T>,
    ) -> Result<()> {
        self.binary(Binary::Sub, a, b, out)
    }

    /// `out = a * b`, element-wise.
    pub fn mul<T: Float>(
        &self,
        a: &GpuArray<T>,
        b: &GpuArray<T>,
        out: &mut GpuArray<T>,
    ) -> Result<()> {
        self.binary(Binary::Mul, a, b, out)
    }

    /// `y = alpha * x + y`.
    pub fn axpy<T: Float>(&self, alpha: T, x: &GpuArray<T>, y: &mut GpuArray<T>) -> Result<()> {
        check_len("axpy", y.len(), x.len())?;
        self.same_backend(&x.ctx, "axpy")?;
        self.same_backend(&y.ctx, "axpy")?;
        self.stream.imp.axpy(alpha, &x.storage, &mut y.storage)
    }

    /// `x = alpha * x`.
    pub fn scale<T: Float>(&self, alpha: T, x: &mut GpuArray<T>) -> Result<()> {
        self.same_backend(&x.ctx, "scale")?;
        self.stream.imp.scale(alpha, &mut x.storage)
    }

    /// `out = max(x, 0)`; a NaN stays NaN (as in torch and numpy), on
    /// every backend.
    pub fn relu<T: Float>(&self, x: &GpuArray<T>, out: &mut GpuArray<T>) -> Result<()> {
        self.unary(Unary::Relu, x, out)
    }

    /// `out = 1 / (1 + e^-x)`.
    pub fn sigmoid<T: Float>(&self, x: &GpuArray<T>, out: &mut GpuArray<T>) -> Result<()> {
        self.unary(Unary::Sigmoid, x, out)
    }

    /// `out = tanh(x)`.
    pub fn tanh<T: Float>(&self, x: &GpuArray<T>, out: &mut GpuArray<T>) -> Result<()> {
        self.unary(Unary::Tanh, x, out)
    }

    /// The sum of all elements (0 for an empty array), accumulated in
    /// `T::Acc` by a tree reduction.
    pub fn sum<T: Float>(&self, x: &GpuArray<T>) -> Result<T> {
        self.reduce(Reduce::Sum, x, None)
    }

    /// The largest element; NaNs are ignored unless every element is NaN.
    /// An empty array is an error.
    pub fn max<T: Float>(&self, x: &GpuArray<T>) -> Result<T> {
        if x.is_empty() {
            return Err(Error::SizeMismatch {
                what: "max of an empty array",
                expected: 1,
                actual: 0,
            });
        }
        self.reduce(Reduce::Max, x, None)
    }

    /// `sum(x[i] * y[i])`.
    pub fn dot<T: Float>(&self, x: &GpuArray<T>, y: &GpuArray<T>) -> Result<T> {
        check_len("dot", x.len(), y.len())?;
        self.reduce(Reduce::Dot, x, Some(y))
    }

    /// `c = a · b` for row-major `a` (m×k), `b` (k×n) and `c` (m×n).
    pub fn matmul<T: Float>(
        &self,
        a: &GpuArray<T>,
        b: &GpuArray<T>,
        c: &mut GpuArray<T>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        for (what, arr, rows, cols) in [
            ("matmul a", a.len(), m, k),
            ("matmul b", b.len(), k, n),
            ("matmul c", c.len(), m, n),
        ] {
            let expected = rows.saturating_mul(cols);
            check_len(what, expected, arr)?;
        }
        for arr in [&a.ctx, &b.ctx, &c.ctx] {
            self.same_backend(arr, "matmul")?;
        }
        self.stream
            .imp
            .matmul(&a.storage, &b.storage, &mut c.storage, (m, k, n))
    }

    fn binary<T: Float>(
        &self,
        op: Binary,
        a: &GpuArray<T>,
        b: &GpuArray<T>,
        out: &mut GpuArray<T>,
    ) -> Result<()> {
        check_len("element-wise op", out.len(), a.len())?;
        check_len("element-wise op", out.len(), b.len())?;
        for c in [&a.ctx, &b.ctx, &out.ctx] {
            self.same_backend(c, "element-wise op")?;
        }
        self.stream
            .imp
            .binary(op, &a.storage, &b.storage, &mut out.storage)
    }

    fn unary<T: Float>(&self, op: Unary, x: &GpuArray<T>, out: &mut GpuArray<T>) -> Result<()> {
        check_len("element-wise op", out.len(), x.len())?;
        self.same_backend(&x.ctx, "element-wise op")?;
        self.same_backend(&out.ctx, "element-wise op")?;
        self.stream.imp.unary(op, &x.storage, &mut out.storage)
    }

    fn reduce<T: Float>(&self, op: Reduce, x: &GpuArray<T>, y: Option<&GpuArray<T>>) -> Result<T> {
        self.same_backend(&x.ctx, "reduction")?;
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
        if let Some(y) = y {
            self.same_backend(&y.ctx, "reduction")?;
        }
        self.stream
            .imp
            .reduce(op, &x.storage, y.map(|y| &y.storage))
    }

    fn same_backend(&self, other: &Context, what: &'static str) -> Result<()> {
        if self.ctx.same_device(other) {
            Ok(())
        } else {
            Err(Error::ContextMismatch { what })
        }
    }
}
