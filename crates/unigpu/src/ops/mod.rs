//! Built-in ops with one API on every backend: element-wise arithmetic and
//! activations, reductions, and matmul (cuBLAS on CUDA, `matrixmultiply`
//! on the CPU).

use crate::backend::cpu::ops as cpu;
use crate::backend::cuda::ops as cuda;

use num_traits::Float as NumFloat;

use crate::array::Storage;
use crate::stream::check_len;
use crate::{Context, Element, Error, GpuArray, Result, Stream, bf16, f16};

mod sealed {
    pub trait Sealed {}
}

/// Floating-point element types the arithmetic ops take: f32, f64, f16 and
/// bf16. f16/bf16 are computed in f32 and rounded once per result.
pub trait Float: Element + unigpu_cuda_safe::GemmElement + sealed::Sealed {
    /// The type arithmetic is done in: f32, or f64 for f64.
    type Acc: Element + NumFloat + Into<f64> + Send + Sync + cpu::CpuGemm;
    #[doc(hidden)]
    const SUFFIX: &'static str;
    #[doc(hidden)]
    const ACC_SUFFIX: &'static str;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(a: Self::Acc) -> Self;
}

macro_rules! float {
    ($t:ty, $acc:ty, $suffix:literal, $acc_suffix:literal, $to:expr, $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Float for $t {
            type Acc = $acc;
            const SUFFIX: &'static str = $suffix;
            const ACC_SUFFIX: &'static str = $acc_suffix;
            fn to_acc(self) -> $acc {
                $to(self)
            }
            fn from_acc(a: $acc) -> Self {
                $from(a)
            }
        }
    };
}
float!(f32, f32, "f32", "f32", |x| x, |a| a);
float!(f64, f64, "f64", "f64", |x| x, |a| a);
float!(f16, f32, "f16", "f32", f16::to_f32, f16::from_f32);
float!(bf16, f32, "bf16", "f32", bf16::to_f32, bf16::from_f32);

/// The element-wise ops that take two inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binary {
    Add,
    Sub,
    Mul,
}

/// The element-wise ops that take one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unary {
    Relu,
    Sigmoid,
    Tanh,
}

/// The reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduce {
    Sum,
    Max,
    Dot,
}

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
        match &x.storage {
            Storage::Cpu(_) => cpu::fill(self.stream, x, value),
            Storage::Cuda(_) => cuda::fill(self.ctx, self.stream, x, value),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => crate::backend::torch::ops::fill(self.stream, x, value),
        }
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
        match &x.storage {
            Storage::Cpu(_) => cpu::axpy(self.stream, alpha, x, y),
            Storage::Cuda(_) => cuda::axpy(self.ctx, self.stream, alpha, x, y),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => crate::backend::torch::ops::axpy(self.stream, alpha, x, y),
        }
    }

    /// `x = alpha * x`.
    pub fn scale<T: Float>(&self, alpha: T, x: &mut GpuArray<T>) -> Result<()> {
        self.same_backend(&x.ctx, "scale")?;
        match &x.storage {
            Storage::Cpu(_) => cpu::scale(self.stream, alpha, x),
            Storage::Cuda(_) => cuda::scale(self.ctx, self.stream, alpha, x),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => crate::backend::torch::ops::scale(self.stream, alpha, x),
        }
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
        match &a.storage {
            Storage::Cpu(_) => cpu::matmul(self.stream, a, b, c, (m, k, n)),
            Storage::Cuda(_) => cuda::matmul(self.ctx, self.stream, a, b, c, (m, k, n)),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => {
                crate::backend::torch::ops::matmul(self.stream, a, b, c, (m, k, n))
            }
        }
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
        match &a.storage {
            Storage::Cpu(_) => cpu::binary(self.stream, op, a, b, out),
            Storage::Cuda(_) => cuda::binary(self.ctx, self.stream, op, a, b, out),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => crate::backend::torch::ops::binary(self.stream, op, a, b, out),
        }
    }

    fn unary<T: Float>(&self, op: Unary, x: &GpuArray<T>, out: &mut GpuArray<T>) -> Result<()> {
        check_len("element-wise op", out.len(), x.len())?;
        self.same_backend(&x.ctx, "element-wise op")?;
        self.same_backend(&out.ctx, "element-wise op")?;
        match &x.storage {
            Storage::Cpu(_) => cpu::unary(self.stream, op, x, out),
            Storage::Cuda(_) => cuda::unary(self.ctx, self.stream, op, x, out),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => crate::backend::torch::ops::unary(self.stream, op, x, out),
        }
    }

    fn reduce<T: Float>(&self, op: Reduce, x: &GpuArray<T>, y: Option<&GpuArray<T>>) -> Result<T> {
        self.same_backend(&x.ctx, "reduction")?;
        if let Some(y) = y {
            self.same_backend(&y.ctx, "reduction")?;
        }
        match &x.storage {
            Storage::Cpu(_) => cpu::reduce(self.stream, op, x, y),
            Storage::Cuda(_) => cuda::reduce(self.ctx, self.stream, op, x, y),
            #[cfg(feature = "torch")]
            Storage::Torch(_) => crate::backend::torch::ops::reduce(self.stream, op, x, y),
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
