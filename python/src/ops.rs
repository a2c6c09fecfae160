//! The built-in ops: `ctx.ops.add(a, b)`, `stream.ops.add(a, b)` and
//! `unigpu.add(a, b, stream=s)`. Element-wise ops and matmul return their
//! output (a new array unless `out=` is given); reductions return a float.
//! The arrays are locked and aliased by the bindings' one rule
//! (`unigpu::binding`, as in C): an output may be one of the inputs
//! (`add(x, y, out=x)`), that input read from a copy taken first.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use unigpu::binding::{self, Binary, BinaryMath, CallError, Compare, Reduce, Unary, UnaryMath};
use unigpu::{AnyArray, Context, DType, Ops, Scalar, Stream};

use crate::array::PyArray;
use crate::dtype;
use crate::errors::{call_err, err};
use crate::stream::PyStream;

/// Where an op runs.
#[derive(Clone, Copy)]
struct On<'a> {
    ctx: &'a Context,
    stream: Option<&'a Stream>,
}

impl On<'_> {
    /// Runs `f` with the GIL released.
    fn run<R: Send>(
        self,
        py: Python<'_>,
        f: impl FnOnce(Ops<'_>) -> Result<R, CallError> + Send,
    ) -> PyResult<R> {
        py.detach(|| {
            f(match self.stream {
                Some(s) => self.ctx.ops_on(s),
                None => self.ctx.ops(),
            })
        })
        .map_err(call_err(py))
    }

    /// `out`, or a new array of `shape` of `like`'s dtype.
    fn output<'py>(
        self,
        py: Python<'py>,
        out: Option<Bound<'py, PyArray>>,
        like: &PyArray,
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyArray>> {
        self.output_of(py, out, like.dtype, shape)
    }

    /// `out`, or a new array of `shape` of dtype `d`.
    fn output_of<'py>(
        self,
        py: Python<'py>,
        out: Option<Bound<'py, PyArray>>,
        d: DType,
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyArray>> {
        match out {
            Some(o) => Ok(o),
            None => {
                let ctx = self.ctx;
                let len = unigpu::Layout::contiguous(shape).len();
                let a = py
                    .detach(|| AnyArray::alloc(ctx, d, len)?.reshape(shape.to_vec()))
                    .map_err(err(py))?;
                Bound::new(py, PyArray::new(a))
            }
        }
    }
}

fn binary<'py>(
    py: Python<'py>,
    on: On<'_>,
    op: Binary,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyArray>> {
    let (a, b) = (a.get(), b.get());
    // A new output has the shape the inputs broadcast to (a mismatch is
    // the call's error, below).
    let shape = unigpu::broadcast_shapes(a.layout.shape(), b.layout.shape())
        .unwrap_or_else(|_| a.layout.shape().to_vec());
    let out = on.output(py, out, a, &shape)?;
    let o = out.get();
    on.run(py, |ops| {
        binding::binary(
            ops,
            op,
            [a.handle(), b.handle(), o.handle()],
            ["a", "b", "out"],
        )
    })?;
    Ok(out)
}

fn unary<'py>(
    py: Python<'py>,
    on: On<'_>,
    op: Unary,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyArray>> {
    let x = x.get();
    let out = on.output(py, out, x, x.layout.shape())?;
    let o = out.get();
    on.run(py, |ops| {
        binding::unary(ops, op, [x.handle(), o.handle()], ["x", "out"])
    })?;
    Ok(out)
}

fn reduce(py: Python<'_>, on: On<'_>, op: Reduce, x: &PyArray) -> PyResult<Py<PyAny>> {
    let s = on.run(py, |ops| {
        binding::reduce(ops, op, [x.handle(), x.handle()], ["x", "x"])
    })?;
    Ok(dtype::scalar_to_py(py, s)?.unbind())
}

fn fill<'py>(
    py: Python<'py>,
    on: On<'_>,
    x: Bound<'py, PyArray>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray>> {
    let a = x.get();
    let value = dtype::scalar_as(a.dtype, value, &|| "fill value".to_string())?;
    on.run(py, |ops| binding::fill(ops, a.handle(), value))?;
    Ok(x)
}

fn copy<'py>(
    py: Python<'py>,
    on: On<'_>,
    src: &Bound<'py, PyArray>,
    dst: Bound<'py, PyArray>,
) -> PyResult<Bound<'py, PyArray>> {
    let (s, d) = (src.get(), dst.get());
    on.run(py, |ops| {
        binding::copy(ops, [s.handle(), d.handle()], ["src", "dst"])
    })?;
    Ok(dst)
}

fn axpy<'py>(
    py: Python<'py>,
    on: On<'_>,
    alpha: &Bound<'py, PyAny>,
    x: &Bound<'py, PyArray>,
    y: Bound<'py, PyArray>,
) -> PyResult<Bound<'py, PyArray>> {
    let (xa, ya) = (x.get(), y.get());
    let alpha = dtype::scalar_as(ya.dtype, alpha, &|| "axpy alpha".to_string())?;
    on.run(py, |ops| {
        binding::axpy(ops, alpha, [xa.handle(), ya.handle()], ["x", "y"])
    })?;
    Ok(y)
}

fn scale<'py>(
    py: Python<'py>,
    on: On<'_>,
    alpha: &Bound<'py, PyAny>,
    x: Bound<'py, PyArray>,
) -> PyResult<Bound<'py, PyArray>> {
    let a = x.get();
    let alpha = dtype::scalar_as(a.dtype, alpha, &|| "scale alpha".to_string())?;
    on.run(py, |ops| binding::scale(ops, alpha, a.handle()))?;
    Ok(x)
}

fn dot(py: Python<'_>, on: On<'_>, x: &PyArray, y: &PyArray) -> PyResult<Py<PyAny>> {
    let s = on.run(py, |ops| {
        binding::reduce(ops, Reduce::Dot, [x.handle(), y.handle()], ["x", "y"])
    })?;
    Ok(dtype::scalar_to_py(py, s)?.unbind())
}

#[allow(clippy::too_many_arguments)]
fn matmul<'py>(
    py: Python<'py>,
    on: On<'_>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    m: usize,
    k: usize,
    n: usize,
    out: Option<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyArray>> {
    let (aa, ba) = (a.get(), b.get());
    let len = m
        .checked_mul(n)
        .ok_or_else(|| PyValueError::new_err(format!("matmul: m*n = {m}*{n} overflows")))?;
    let out = on.output(py, out, aa, &[len])?;
    let o = out.get();
    on.run(py, |ops| {
        binding::matmul(
            ops,
            [aa.handle(), ba.handle(), o.handle()],
            ["a", "b", "out"],
            (m, k, n),
        )
    })?;
    Ok(out)
}

/// `a @ b` of 2-D arrays (or views such as `b.T`, read in place), the
/// sizes from their shapes, into `out` (a new `(m, n)` array when None);
/// with a 3-D operand, a batched product into `(batch, m, n)`.
fn mm<'py>(
    py: Python<'py>,
    on: On<'_>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyArray>> {
    let (aa, ba) = (a.get(), b.get());
    let shape = match (aa.layout.shape(), ba.layout.shape()) {
        (&[m, _], &[_, n]) => vec![m, n],
        // A batched product: the batch of the 3-D operand (the larger,
        // where one has a single matrix to broadcast).
        (&[g, m, _], &[_, n]) => vec![g, m, n],
        (&[m, _], &[g, _, n]) => vec![g, m, n],
        (&[g, m, _], &[h, _, n]) => vec![g.max(h), m, n],
        // The call names the shapes in its error.
        _ => vec![0],
    };
    let out = on.output(py, out, aa, &shape)?;
    let o = out.get();
    on.run(py, |ops| {
        binding::mm(
            ops,
            [aa.handle(), ba.handle(), o.handle()],
            ["a", "b", "out"],
        )
    })?;
    Ok(out)
}

/// The built-in ops on one stream: `ctx.ops` (the default stream) or
/// `stream.ops`. Every method also takes `stream=` to run elsewhere.
#[pyclass(frozen, name = "Ops", module = "unigpu")]
#[derive(Debug)]
pub struct PyOps {
    ctx: Context,
    stream: Option<Stream>,
}

impl PyOps {
    pub(crate) fn new(ctx: Context, stream: Option<Stream>) -> PyOps {
        PyOps { ctx, stream }
    }

    fn on<'a>(&'a self, stream: &'a Option<Bound<'_, PyStream>>) -> On<'a> {
        On {
            ctx: &self.ctx,
            stream: stream
                .as_ref()
                .map(|s| &s.get().stream)
                .or(self.stream.as_ref()),
        }
    }
}

/// Where a module-level op runs: the first array's context.
fn on_array<'a>(x: &'a PyArray, stream: &'a Option<Bound<'_, PyStream>>) -> On<'a> {
    On {
        ctx: &x.ctx,
        stream: stream.as_ref().map(|s| &s.get().stream),
    }
}

#[pymethods]
impl PyOps {
    /// Sets every element of `x` to `value`; returns `x`.
    #[pyo3(signature = (x, value, *, stream=None))]
    fn fill<'py>(
        &self,
        py: Python<'py>,
        x: Bound<'py, PyArray>,
        value: &Bound<'py, PyAny>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        fill(py, self.on(&stream), x, value)
    }

    /// `dst[:] = src`; returns `dst`.
    #[pyo3(signature = (src, dst, *, stream=None))]
    fn copy<'py>(
        &self,
        py: Python<'py>,
        src: &Bound<'py, PyArray>,
        dst: Bound<'py, PyArray>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        copy(py, self.on(&stream), src, dst)
    }

    /// `a + b` into `out` (a new array when None); returns `out`.
    #[pyo3(signature = (a, b, out=None, *, stream=None))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyArray>,
        b: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        binary(py, self.on(&stream), Binary::Add, a, b, out)
    }

    /// `a - b`.
    #[pyo3(signature = (a, b, out=None, *, stream=None))]
    fn sub<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyArray>,
        b: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        binary(py, self.on(&stream), Binary::Sub, a, b, out)
    }

    /// `a * b` (element-wise).
    #[pyo3(signature = (a, b, out=None, *, stream=None))]
    fn mul<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyArray>,
        b: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        binary(py, self.on(&stream), Binary::Mul, a, b, out)
    }

    /// `y = alpha * x + y` (one fused multiply-add); returns `y`.
    #[pyo3(signature = (alpha, x, y, *, stream=None))]
    fn axpy<'py>(
        &self,
        py: Python<'py>,
        alpha: &Bound<'py, PyAny>,
        x: &Bound<'py, PyArray>,
        y: Bound<'py, PyArray>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        axpy(py, self.on(&stream), alpha, x, y)
    }

    /// `x *= alpha`; returns `x`.
    #[pyo3(signature = (alpha, x, *, stream=None))]
    fn scale<'py>(
        &self,
        py: Python<'py>,
        alpha: &Bound<'py, PyAny>,
        x: Bound<'py, PyArray>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        scale(py, self.on(&stream), alpha, x)
    }

    /// `max(x, 0)`.
    #[pyo3(signature = (x, out=None, *, stream=None))]
    fn relu<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        unary(py, self.on(&stream), Unary::Relu, x, out)
    }

    /// `1 / (1 + exp(-x))`.
    #[pyo3(signature = (x, out=None, *, stream=None))]
    fn sigmoid<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        unary(py, self.on(&stream), Unary::Sigmoid, x, out)
    }

    /// `tanh(x)`.
    #[pyo3(signature = (x, out=None, *, stream=None))]
    fn tanh<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        unary(py, self.on(&stream), Unary::Tanh, x, out)
    }

    /// The sum of the elements (waits for it).
    #[pyo3(signature = (x, *, stream=None))]
    fn sum(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyArray>,
        stream: Option<Bound<'_, PyStream>>,
    ) -> PyResult<Py<PyAny>> {
        reduce(py, self.on(&stream), Reduce::Sum, x.get())
    }

    /// The largest element (waits for it); an error for an empty array.
    #[pyo3(signature = (x, *, stream=None))]
    fn max(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyArray>,
        stream: Option<Bound<'_, PyStream>>,
    ) -> PyResult<Py<PyAny>> {
        reduce(py, self.on(&stream), Reduce::Max, x.get())
    }

    /// The dot product (waits for it).
    #[pyo3(signature = (x, y, *, stream=None))]
    fn dot(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyArray>,
        y: &Bound<'_, PyArray>,
        stream: Option<Bound<'_, PyStream>>,
    ) -> PyResult<Py<PyAny>> {
        dot(py, self.on(&stream), x.get(), y.get())
    }

    /// Row-major `(m×k) @ (k×n)` into `out` (m*n elements; new when
    /// None); without `m, k, n`, `mm`: the sizes from 2-D or 3-D shapes.
    #[pyo3(signature = (a, b, m=None, k=None, n=None, out=None, *, stream=None))]
    #[allow(clippy::too_many_arguments)]
    fn matmul<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyArray>,
        b: &Bound<'py, PyArray>,
        m: Option<usize>,
        k: Option<usize>,
        n: Option<usize>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        matmul_or_mm(py, self.on(&stream), a, b, (m, k, n), out)
    }

    /// `a @ b` of 2-D arrays or views (`b.T`), the sizes from their
    /// shapes, into `out` (a new `(m, n)` array when None); returns `out`.
    #[pyo3(signature = (a, b, out=None, *, stream=None))]
    fn mm<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyArray>,
        b: &Bound<'py, PyArray>,
        out: Option<Bound<'py, PyArray>>,
        stream: Option<Bound<'py, PyStream>>,
    ) -> PyResult<Bound<'py, PyArray>> {
        mm(py, self.on(&stream), a, b, out)
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Ops(device='{}:{}', stream={})",
            self.ctx.backend_name(),
            self.ctx.device_id(),
            if self.stream.is_some() {
                "yes"
            } else {
                "default"
            }
        )
    }
}

// Module-level ops: run in the first array's context.

/// Sets every element of `x` to `value`; returns `x`.
#[pyfunction(name = "fill")]
#[pyo3(signature = (x, value, *, stream=None))]
fn m_fill<'py>(
    py: Python<'py>,
    x: Bound<'py, PyArray>,
    value: &Bound<'py, PyAny>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    let xa = x.clone();
    fill(py, on_array(xa.get(), &stream), x, value)
}

/// `dst[:] = src`; returns `dst`.
#[pyfunction(name = "copy")]
#[pyo3(signature = (src, dst, *, stream=None))]
fn m_copy<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyArray>,
    dst: Bound<'py, PyArray>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    copy(py, on_array(src.get(), &stream), src, dst)
}

/// `a + b` into `out` (a new array when None); returns `out`.
#[pyfunction(name = "add")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_add<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    binary(py, on_array(a.get(), &stream), Binary::Add, a, b, out)
}

/// `a - b`.
#[pyfunction(name = "sub")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_sub<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    binary(py, on_array(a.get(), &stream), Binary::Sub, a, b, out)
}

/// `a * b` (element-wise).
#[pyfunction(name = "mul")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_mul<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    binary(py, on_array(a.get(), &stream), Binary::Mul, a, b, out)
}

/// `y = alpha * x + y`; returns `y`.
#[pyfunction(name = "axpy")]
#[pyo3(signature = (alpha, x, y, *, stream=None))]
fn m_axpy<'py>(
    py: Python<'py>,
    alpha: &Bound<'py, PyAny>,
    x: &Bound<'py, PyArray>,
    y: Bound<'py, PyArray>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    axpy(py, on_array(x.get(), &stream), alpha, x, y)
}

/// `x *= alpha`; returns `x`.
#[pyfunction(name = "scale")]
#[pyo3(signature = (alpha, x, *, stream=None))]
fn m_scale<'py>(
    py: Python<'py>,
    alpha: &Bound<'py, PyAny>,
    x: Bound<'py, PyArray>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    let xa = x.clone();
    scale(py, on_array(xa.get(), &stream), alpha, x)
}

/// `max(x, 0)`.
#[pyfunction(name = "relu")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_relu<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    unary(py, on_array(x.get(), &stream), Unary::Relu, x, out)
}

/// `1 / (1 + exp(-x))`.
#[pyfunction(name = "sigmoid")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_sigmoid<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    unary(py, on_array(x.get(), &stream), Unary::Sigmoid, x, out)
}

/// `tanh(x)`.
#[pyfunction(name = "tanh")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_tanh<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    unary(py, on_array(x.get(), &stream), Unary::Tanh, x, out)
}

/// The sum of the elements, a number; with `axis` (an int or a tuple of
/// ints, negative from the end) or `keepdims`, the sums over those axes as
/// a new array (numpy's `sum(axis=, keepdims=)`).
#[pyfunction(name = "sum")]
#[pyo3(signature = (x, axis=None, keepdims=false, *, stream=None))]
fn m_sum(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    let on = on_array(x.get(), &stream);
    if axis.is_none() && !keepdims {
        return reduce(py, on, Reduce::Sum, x.get());
    }
    over_axes(py, on, x.get(), axis, keepdims, AxesOp::Sum)
}

/// The largest element, a number (NaN ignored unless every element is
/// NaN); with `axis` or `keepdims`, the largest over those axes as a new
/// array, where a NaN propagates (numpy's `max(axis=)`).
#[pyfunction(name = "max")]
#[pyo3(signature = (x, axis=None, keepdims=false, *, stream=None))]
fn m_max(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    let on = on_array(x.get(), &stream);
    if axis.is_none() && !keepdims {
        return reduce(py, on, Reduce::Max, x.get());
    }
    over_axes(py, on, x.get(), axis, keepdims, AxesOp::Max)
}

/// The smallest over `axis` (all axes by default), a new array; NaN
/// propagates.
#[pyfunction(name = "min")]
#[pyo3(signature = (x, axis=None, keepdims=false, *, stream=None))]
fn m_min(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    over_axes(
        py,
        on_array(x.get(), &stream),
        x.get(),
        axis,
        keepdims,
        AxesOp::Min,
    )
}

/// The mean over `axis` (all axes by default), a new array.
#[pyfunction(name = "mean")]
#[pyo3(signature = (x, axis=None, keepdims=false, *, stream=None))]
fn m_mean(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    over_axes(
        py,
        on_array(x.get(), &stream),
        x.get(),
        axis,
        keepdims,
        AxesOp::Mean,
    )
}

/// The index of the largest element along `axis` (of the flattened
/// array when None): a u32 array, the first of equal ones, a NaN's when
/// there is one.
#[pyfunction(name = "argmax")]
#[pyo3(signature = (x, axis=None, keepdims=false, *, stream=None))]
fn m_argmax(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    over_axes(
        py,
        on_array(x.get(), &stream),
        x.get(),
        axis,
        keepdims,
        AxesOp::ArgMax,
    )
}

/// As `argmax`, the smallest.
#[pyfunction(name = "argmin")]
#[pyo3(signature = (x, axis=None, keepdims=false, *, stream=None))]
fn m_argmin(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    over_axes(
        py,
        on_array(x.get(), &stream),
        x.get(),
        axis,
        keepdims,
        AxesOp::ArgMin,
    )
}

/// `softmax(x)` along `axis` (default the last) into `out` (a new array
/// when None).
#[pyfunction(name = "softmax")]
#[pyo3(signature = (x, axis=-1, out=None, *, stream=None))]
fn m_softmax<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    axis: isize,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    softmax(py, on_array(x.get(), &stream), x, axis, out, false)
}

/// `log_softmax(x)` along `axis` (default the last) into `out`.
#[pyfunction(name = "log_softmax")]
#[pyo3(signature = (x, axis=-1, out=None, *, stream=None))]
fn m_log_softmax<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    axis: isize,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    softmax(py, on_array(x.get(), &stream), x, axis, out, true)
}

/// The reductions over axes.
#[derive(Clone, Copy)]
enum AxesOp {
    Sum,
    Mean,
    Max,
    Min,
    ArgMax,
    ArgMin,
}

/// An axis given from Python (negative from the end) as an index.
fn axis_index(axis: isize, ndim: usize) -> PyResult<usize> {
    let a = if axis < 0 { axis + ndim as isize } else { axis };
    usize::try_from(a)
        .ok()
        .filter(|&a| a < ndim)
        .ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "axis {axis} is out of bounds for an array of {ndim} dimensions"
            ))
        })
}

fn over_axes(
    py: Python<'_>,
    on: On<'_>,
    x: &PyArray,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    op: AxesOp,
) -> PyResult<Py<PyAny>> {
    let ndim = x.layout.ndim();
    let axes: Option<Vec<usize>> = match axis {
        None => None,
        Some(a) => {
            let list: Vec<isize> = match a.extract::<isize>() {
                Ok(one) => vec![one],
                Err(_) => a.extract()?,
            };
            Some(
                list.into_iter()
                    .map(|a| axis_index(a, ndim))
                    .collect::<PyResult<_>>()?,
            )
        }
    };
    let single = match (&axes, op) {
        (Some(a), AxesOp::ArgMax | AxesOp::ArgMin) if a.len() != 1 => {
            return Err(PyValueError::new_err("argmax and argmin take one axis"));
        }
        (Some(a), _) => a.first().copied(),
        (None, _) => None,
    };
    let result = py
        .detach(|| {
            x.with_view(|v| {
                let ops = match on.stream {
                    Some(s) => on.ctx.ops_on(s),
                    None => on.ctx.ops(),
                };
                let axes = axes.as_deref();
                match op {
                    AxesOp::Sum => ops.sum_axes_any(v, axes, keepdims),
                    AxesOp::Mean => ops.mean_axes_any(v, axes, keepdims),
                    AxesOp::Max => ops.max_axes_any(v, axes, keepdims),
                    AxesOp::Min => ops.min_axes_any(v, axes, keepdims),
                    AxesOp::ArgMax => ops.arg_extreme_any(v, single, keepdims, true),
                    AxesOp::ArgMin => ops.arg_extreme_any(v, single, keepdims, false),
                }
            })
        })
        .map_err(err(py))?;
    Ok(Bound::new(py, PyArray::new(result))?.into_any().unbind())
}

fn softmax<'py>(
    py: Python<'py>,
    on: On<'_>,
    x: &Bound<'py, PyArray>,
    axis: isize,
    out: Option<Bound<'py, PyArray>>,
    log: bool,
) -> PyResult<Bound<'py, PyArray>> {
    let xa = x.get();
    let axis = axis_index(axis, xa.layout.ndim())?;
    let out = on.output(py, out, xa, xa.layout.shape())?;
    let o = out.get();
    on.run(py, |ops| {
        binding::softmax(ops, [xa.handle(), o.handle()], ["x", "out"], axis, log)
    })?;
    Ok(out)
}

/// The dot product.
#[pyfunction(name = "dot")]
#[pyo3(signature = (x, y, *, stream=None))]
fn m_dot(
    py: Python<'_>,
    x: &Bound<'_, PyArray>,
    y: &Bound<'_, PyArray>,
    stream: Option<Bound<'_, PyStream>>,
) -> PyResult<Py<PyAny>> {
    dot(py, on_array(x.get(), &stream), x.get(), y.get())
}

/// Row-major `(m×k) @ (k×n)` with the sizes given, or, without them,
/// `mm` (2-D or batched 3-D, the sizes from the shapes).
#[pyfunction(name = "matmul")]
#[pyo3(signature = (a, b, m=None, k=None, n=None, out=None, *, stream=None))]
#[allow(clippy::too_many_arguments)]
fn m_matmul<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    m: Option<usize>,
    k: Option<usize>,
    n: Option<usize>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    matmul_or_mm(py, on_array(a.get(), &stream), a, b, (m, k, n), out)
}

/// `matmul` with all three sizes, `mm` with none; some is an error.
fn matmul_or_mm<'py>(
    py: Python<'py>,
    on: On<'_>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    mkn: (Option<usize>, Option<usize>, Option<usize>),
    out: Option<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyArray>> {
    match mkn {
        (Some(m), Some(k), Some(n)) => matmul(py, on, a, b, m, k, n, out),
        (None, None, None) => mm(py, on, a, b, out),
        _ => Err(PyValueError::new_err(
            "matmul: give all of m, k and n (flat arrays), or none (the sizes from 2-D or 3-D shapes)",
        )),
    }
}

/// `unigpu.mm(a, b, out=None, stream=None)`: see `Ops.mm`.
#[pyfunction(name = "mm")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_mm<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    mm(py, on_array(a.get(), &stream), a, b, out)
}

// ---- The element-wise math ops, comparisons and `where` (numpy's names).

/// The operands of a call that may be Python numbers (numpy's scalar
/// broadcasting): each Array as it is, each number a 0-d array of the
/// first Array's dtype on its context.
fn operands<'py, const N: usize>(
    py: Python<'py>,
    objs: [&Bound<'py, PyAny>; N],
    names: [&str; N],
) -> PyResult<[Bound<'py, PyArray>; N]> {
    let arrays: Vec<Option<Bound<'py, PyArray>>> = objs
        .iter()
        .map(|o| o.extract::<Bound<'py, PyArray>>().ok())
        .collect();
    let like = arrays.iter().flatten().next().ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{}: expected at least one unigpu.Array",
            names.join(", ")
        ))
    })?;
    let (ctx, d) = (like.get().ctx.clone(), like.get().dtype);
    let mut out = Vec::with_capacity(N);
    for ((a, o), name) in arrays.iter().zip(objs).zip(names) {
        out.push(match a {
            Some(a) => a.clone(),
            None => {
                let s = dtype::scalar_as(d, o, &|| name.to_string())?;
                let a = py
                    .detach(|| {
                        AnyArray::from_bytes(&ctx, d, s.bytes())?.reshape(Vec::<usize>::new())
                    })
                    .map_err(err(py))?;
                Bound::new(py, PyArray::new(a))?
            }
        });
    }
    Ok(out
        .try_into()
        .unwrap_or_else(|_| unreachable!("one array per operand")))
}

/// The shape `shapes` broadcast to (a mismatch is the call's error, so the
/// first shape stands in for it here).
fn broadcast(shapes: &[&[usize]]) -> Vec<usize> {
    let mut s = shapes[0].to_vec();
    for t in &shapes[1..] {
        match unigpu::broadcast_shapes(&s, t) {
            Ok(b) => s = b,
            Err(_) => return shapes[0].to_vec(),
        }
    }
    s
}

fn unary_math<'py>(
    py: Python<'py>,
    on: On<'_>,
    op: UnaryMath,
    params: [Scalar; 2],
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyArray>> {
    let x = x.get();
    let out = on.output(py, out, x, x.layout.shape())?;
    let o = out.get();
    on.run(py, |ops| {
        binding::unary_math(ops, op, params, [x.handle(), o.handle()], ["x", "out"])
    })?;
    Ok(out)
}

/// `x`, `out` and `stream` of a module-level math op of one input.
fn m_unary<'py>(
    py: Python<'py>,
    op: UnaryMath,
    params: [Scalar; 2],
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    unary_math(py, on_array(x.get(), &stream), op, params, x, out)
}

fn no_params(x: &Bound<'_, PyArray>) -> [Scalar; 2] {
    [Scalar::from_f64(x.get().dtype, 0.0); 2]
}

fn binary_math<'py>(
    py: Python<'py>,
    op: BinaryMath,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: &Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    let [a, b] = operands(py, [a, b], ["a", "b"])?;
    let (a, b) = (a.get(), b.get());
    let on = on_array(a, stream);
    let shape = broadcast(&[a.layout.shape(), b.layout.shape()]);
    let out = on.output(py, out, a, &shape)?;
    let o = out.get();
    on.run(py, |ops| {
        binding::binary_math(
            ops,
            op,
            [a.handle(), b.handle(), o.handle()],
            ["a", "b", "out"],
        )
    })?;
    Ok(out)
}

pub(crate) fn compare<'py>(
    py: Python<'py>,
    op: Compare,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: &Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    let [a, b] = operands(py, [a, b], ["a", "b"])?;
    let (a, b) = (a.get(), b.get());
    let on = on_array(a, stream);
    let shape = broadcast(&[a.layout.shape(), b.layout.shape()]);
    let out = on.output_of(py, out, DType::U8, &shape)?;
    let o = out.get();
    on.run(py, |ops| {
        binding::compare(
            ops,
            op,
            [a.handle(), b.handle(), o.handle()],
            ["a", "b", "out"],
        )
    })?;
    Ok(out)
}

/// `x ** p`: `pow_scalar` for a number `p`, else the element-wise `pow`.
pub(crate) fn power<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    p: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: &Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    if let (Ok(xa), Err(_)) = (
        x.extract::<Bound<'py, PyArray>>(),
        p.extract::<Bound<'py, PyArray>>(),
    ) {
        let d = xa.get().dtype;
        let p = dtype::scalar_as(d, p, &|| "power exponent".to_string())?;
        let params = [p, Scalar::from_f64(d, 0.0)];
        return unary_math(
            py,
            on_array(xa.get(), stream),
            UnaryMath::PowScalar,
            params,
            &xa,
            out,
        );
    }
    binary_math(py, BinaryMath::Pow, x, p, out, stream)
}

/// `-x`.
#[pyfunction(name = "negative")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_negative<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Neg, no_params(x), x, out, stream)
}

/// `x` clamped to `[lo, hi]` (numbers; NaN stays NaN).
#[pyfunction(name = "clip")]
#[pyo3(signature = (x, lo, hi, out=None, *, stream=None))]
fn m_clip<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    lo: &Bound<'py, PyAny>,
    hi: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    let d = x.get().dtype;
    let params = [
        dtype::scalar_as(d, lo, &|| "clip lo".to_string())?,
        dtype::scalar_as(d, hi, &|| "clip hi".to_string())?,
    ];
    m_unary(py, UnaryMath::Clamp, params, x, out, stream)
}

/// `x ** p`, `p` a number or an array (broadcast).
#[pyfunction(name = "power")]
#[pyo3(signature = (x, p, out=None, *, stream=None))]
fn m_power<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    p: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    power(py, x, p, out, &stream)
}

/// `out = a if mask else b` element-wise (`mask` a u8 array; `a`, `b`
/// arrays or numbers), the three broadcast.
#[pyfunction(name = "where")]
#[pyo3(signature = (mask, a, b, out=None, *, stream=None))]
fn m_where<'py>(
    py: Python<'py>,
    mask: &Bound<'py, PyArray>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    let [a, b] = operands(py, [a, b], ["a", "b"])?;
    let (m, a, b) = (mask.get(), a.get(), b.get());
    let on = on_array(a, &stream);
    let shape = broadcast(&[m.layout.shape(), a.layout.shape(), b.layout.shape()]);
    let out = on.output(py, out, a, &shape)?;
    let o = out.get();
    on.run(py, |ops| {
        binding::where_(
            ops,
            [m.handle(), a.handle(), b.handle(), o.handle()],
            ["mask", "a", "b", "out"],
        )
    })?;
    Ok(out)
}

/// `|x|`.
#[pyfunction(name = "abs")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_abs<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Abs, no_params(x), x, out, stream)
}

/// `floor(x)`.
#[pyfunction(name = "floor")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_floor<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Floor, no_params(x), x, out, stream)
}

/// `ceil(x)`.
#[pyfunction(name = "ceil")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_ceil<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Ceil, no_params(x), x, out, stream)
}

/// `x` rounded to the nearest integer, halves to even (numpy's).
#[pyfunction(name = "round")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_round<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Round, no_params(x), x, out, stream)
}

/// `e**x`.
#[pyfunction(name = "exp")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_exp<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Exp, no_params(x), x, out, stream)
}

/// The natural log.
#[pyfunction(name = "log")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_log<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Log, no_params(x), x, out, stream)
}

/// `sqrt(x)`.
#[pyfunction(name = "sqrt")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_sqrt<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Sqrt, no_params(x), x, out, stream)
}

/// `1 / sqrt(x)`.
#[pyfunction(name = "rsqrt")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_rsqrt<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Rsqrt, no_params(x), x, out, stream)
}

/// `sin(x)`.
#[pyfunction(name = "sin")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_sin<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Sin, no_params(x), x, out, stream)
}

/// `cos(x)`.
#[pyfunction(name = "cos")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_cos<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Cos, no_params(x), x, out, stream)
}

/// GELU in its tanh form (torch's `approximate="tanh"`).
#[pyfunction(name = "gelu")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_gelu<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Gelu, no_params(x), x, out, stream)
}

/// SiLU, `x * sigmoid(x)`.
#[pyfunction(name = "silu")]
#[pyo3(signature = (x, out=None, *, stream=None))]
fn m_silu<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyArray>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    m_unary(py, UnaryMath::Silu, no_params(x), x, out, stream)
}

/// `a / b`, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "divide")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_divide<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    binary_math(py, BinaryMath::Div, a, b, out, &stream)
}

/// The smaller of `a` and `b` (NaN if either is), broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "minimum")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_minimum<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    binary_math(py, BinaryMath::Minimum, a, b, out, &stream)
}

/// The larger of `a` and `b` (NaN if either is), broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "maximum")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_maximum<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    binary_math(py, BinaryMath::Maximum, a, b, out, &stream)
}

/// `a < b` as a u8 0/1 mask, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "less")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_less<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    compare(py, Compare::Lt, a, b, out, &stream)
}

/// `a <= b` as a u8 0/1 mask, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "less_equal")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_less_equal<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    compare(py, Compare::Le, a, b, out, &stream)
}

/// `a > b` as a u8 0/1 mask, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "greater")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_greater<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    compare(py, Compare::Gt, a, b, out, &stream)
}

/// `a >= b` as a u8 0/1 mask, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "greater_equal")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_greater_equal<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    compare(py, Compare::Ge, a, b, out, &stream)
}

/// `a == b` as a u8 0/1 mask, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "equal")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_equal<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    compare(py, Compare::Eq, a, b, out, &stream)
}

/// `a != b` as a u8 0/1 mask, broadcast; `a`, `b` arrays or numbers.
#[pyfunction(name = "not_equal")]
#[pyo3(signature = (a, b, out=None, *, stream=None))]
fn m_not_equal<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyArray>>,
    stream: Option<Bound<'py, PyStream>>,
) -> PyResult<Bound<'py, PyArray>> {
    compare(py, Compare::Ne, a, b, out, &stream)
}

/// `a ∘ b` for the Array operators (`a + b`): a new array on `a`'s
/// context's default stream.
pub(crate) fn operator<'py>(
    py: Python<'py>,
    op: Binary,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
) -> PyResult<Bound<'py, PyArray>> {
    binary(py, on_array(a.get(), &None), op, a, b, None)
}

/// `a @ b` for the Array operator.
pub(crate) fn matmul_operator<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyArray>,
    b: &Bound<'py, PyArray>,
) -> PyResult<Bound<'py, PyArray>> {
    mm(py, on_array(a.get(), &None), a, b, None)
}

/// The arithmetic the Array operators do (`a + b`, `2.0 / a`, `a ** 2`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

/// `other` for an Array operator: an Array, a Python number (a 0-d array
/// of `slf`'s dtype), or None for anything else, for which the operator
/// returns NotImplemented (so Python tries the other operand, and `==`
/// falls back to identity).
fn other_operand<'py>(
    slf: &Bound<'py, PyArray>,
    other: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyArray>>> {
    if let Ok(a) = other.extract::<Bound<'py, PyArray>>() {
        return Ok(Some(a));
    }
    if other.extract::<f64>().is_err() {
        return Ok(None);
    }
    let [_, o] = operands(slf.py(), [slf.as_any(), other], ["self", "other"])?;
    Ok(Some(o))
}

/// `slf ∘ other` (`reflected`: `other ∘ slf`) for the Array operators: a
/// new array on `slf`'s context's default stream.
pub(crate) fn arith<'py>(
    slf: &Bound<'py, PyArray>,
    other: &Bound<'py, PyAny>,
    op: Arith,
    reflected: bool,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let Some(o) = other_operand(slf, other)? else {
        return Ok(py.NotImplemented());
    };
    let is_number = !other.is_instance_of::<PyArray>();
    let (a, b) = if reflected {
        (o, slf.clone())
    } else {
        (slf.clone(), o)
    };
    let r = match op {
        Arith::Add => operator(py, Binary::Add, &a, &b)?,
        Arith::Sub => operator(py, Binary::Sub, &a, &b)?,
        Arith::Mul => operator(py, Binary::Mul, &a, &b)?,
        Arith::Div => binary_math(py, BinaryMath::Div, a.as_any(), b.as_any(), None, &None)?,
        // `a ** 2.0` by `pow_scalar`, exact for small integer powers as
        // numpy's.
        Arith::Pow if is_number && !reflected => power(py, slf.as_any(), other, None, &None)?,
        Arith::Pow => binary_math(py, BinaryMath::Pow, a.as_any(), b.as_any(), None, &None)?,
    };
    Ok(r.into_any().unbind())
}

/// `slf < other` (...) for the Array operators: a u8 0/1 mask.
pub(crate) fn compare_operator<'py>(
    slf: &Bound<'py, PyArray>,
    other: &Bound<'py, PyAny>,
    op: Compare,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let Some(o) = other_operand(slf, other)? else {
        return Ok(py.NotImplemented());
    };
    Ok(compare(py, op, slf.as_any(), o.as_any(), None, &None)?
        .into_any()
        .unbind())
}

/// `-slf`, `abs(slf)` for the Array operators.
pub(crate) fn unary_operator<'py>(
    slf: &Bound<'py, PyArray>,
    op: UnaryMath,
) -> PyResult<Bound<'py, PyArray>> {
    unary_math(
        slf.py(),
        on_array(slf.get(), &None),
        op,
        no_params(slf),
        slf,
        None,
    )
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(m_min, m)?)?;
    m.add_function(wrap_pyfunction!(m_mean, m)?)?;
    m.add_function(wrap_pyfunction!(m_argmax, m)?)?;
    m.add_function(wrap_pyfunction!(m_argmin, m)?)?;
    m.add_function(wrap_pyfunction!(m_softmax, m)?)?;
    m.add_function(wrap_pyfunction!(m_log_softmax, m)?)?;
    m.add_function(wrap_pyfunction!(m_mm, m)?)?;
    m.add_function(wrap_pyfunction!(m_fill, m)?)?;
    m.add_function(wrap_pyfunction!(m_copy, m)?)?;
    m.add_function(wrap_pyfunction!(m_add, m)?)?;
    m.add_function(wrap_pyfunction!(m_sub, m)?)?;
    m.add_function(wrap_pyfunction!(m_mul, m)?)?;
    m.add_function(wrap_pyfunction!(m_axpy, m)?)?;
    m.add_function(wrap_pyfunction!(m_scale, m)?)?;
    m.add_function(wrap_pyfunction!(m_relu, m)?)?;
    m.add_function(wrap_pyfunction!(m_sigmoid, m)?)?;
    m.add_function(wrap_pyfunction!(m_tanh, m)?)?;
    m.add_function(wrap_pyfunction!(m_sum, m)?)?;
    m.add_function(wrap_pyfunction!(m_max, m)?)?;
    m.add_function(wrap_pyfunction!(m_dot, m)?)?;
    m.add_function(wrap_pyfunction!(m_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(m_negative, m)?)?;
    m.add_function(wrap_pyfunction!(m_clip, m)?)?;
    m.add_function(wrap_pyfunction!(m_power, m)?)?;
    m.add_function(wrap_pyfunction!(m_where, m)?)?;
    m.add_function(wrap_pyfunction!(m_abs, m)?)?;
    m.add_function(wrap_pyfunction!(m_floor, m)?)?;
    m.add_function(wrap_pyfunction!(m_ceil, m)?)?;
    m.add_function(wrap_pyfunction!(m_round, m)?)?;
    m.add_function(wrap_pyfunction!(m_exp, m)?)?;
    m.add_function(wrap_pyfunction!(m_log, m)?)?;
    m.add_function(wrap_pyfunction!(m_sqrt, m)?)?;
    m.add_function(wrap_pyfunction!(m_rsqrt, m)?)?;
    m.add_function(wrap_pyfunction!(m_sin, m)?)?;
    m.add_function(wrap_pyfunction!(m_cos, m)?)?;
    m.add_function(wrap_pyfunction!(m_gelu, m)?)?;
    m.add_function(wrap_pyfunction!(m_silu, m)?)?;
    m.add_function(wrap_pyfunction!(m_divide, m)?)?;
    m.add_function(wrap_pyfunction!(m_minimum, m)?)?;
    m.add_function(wrap_pyfunction!(m_maximum, m)?)?;
    m.add_function(wrap_pyfunction!(m_less, m)?)?;
    m.add_function(wrap_pyfunction!(m_less_equal, m)?)?;
    m.add_function(wrap_pyfunction!(m_greater, m)?)?;
    m.add_function(wrap_pyfunction!(m_greater_equal, m)?)?;
    m.add_function(wrap_pyfunction!(m_equal, m)?)?;
    m.add_function(wrap_pyfunction!(m_not_equal, m)?)?;
    Ok(())
}
