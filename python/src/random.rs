//! `unigpu.Generator`: the Philox 4x32-10 generator (docs/random.md) from
//! Python, bit-identical to Rust's and to every backend's for the same
//! seed, offset, shape and dtype.

use std::sync::Mutex;

use pyo3::prelude::*;
use unigpu::random::Generator;

use crate::array::PyArray;
use crate::context::PyContext;
use crate::dtype;
use crate::errors::err;

/// A counter-based random generator: `Generator(seed)`. Each call draws
/// the next numbers of the seed's stream (the offset moves past them), so
/// calls never overlap; `offset` may be read and set to replay a stream.
#[pyclass(frozen, name = "Generator", module = "unigpu")]
#[derive(Debug)]
pub struct PyGenerator {
    inner: Mutex<Generator>,
}

/// A shape argument: an int or a sequence of ints.
fn shape_of(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if let Ok(n) = shape.extract::<usize>() {
        return Ok(vec![n]);
    }
    shape.extract()
}

/// `dtype` parsed as the other calls parse it, or `default`.
fn dtype_or(dtype: Option<&Bound<'_, PyAny>>, default: unigpu::DType) -> PyResult<unigpu::DType> {
    dtype
        .map(dtype::parse)
        .transpose()
        .map(|d| d.unwrap_or(default))
}

impl PyGenerator {
    fn with<R>(&self, f: impl FnOnce(&mut Generator) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[pymethods]
impl PyGenerator {
    #[new]
    fn new(seed: u64) -> PyGenerator {
        PyGenerator {
            inner: Mutex::new(Generator::new(seed)),
        }
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.with(|g| g.seed())
    }

    /// Where the next call starts in the seed's stream (in 32-bit words).
    #[getter]
    fn offset(&self) -> u64 {
        self.with(|g| g.offset())
    }

    #[setter]
    fn set_offset(&self, offset: u64) {
        self.with(|g| g.set_offset(offset))
    }

    /// An array of `shape` of numbers uniform in [0, 1), of `dtype`
    /// (f32, f64, f16, bf16; f32 when None) in `ctx`.
    #[pyo3(signature = (ctx, shape, dtype=None))]
    fn uniform(
        &self,
        py: Python<'_>,
        ctx: &Bound<'_, PyContext>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (shape, d) = (shape_of(shape)?, dtype_or(dtype, unigpu::DType::F32)?);
        let ctx = &ctx.get().ctx;
        py.detach(|| self.with(|g| g.uniform_any(ctx, d, &shape)))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// An array of `shape` of normal numbers of mean `mean` and standard
    /// deviation `std` (Box-Muller), of `dtype` in `ctx`.
    #[pyo3(signature = (ctx, shape, mean=0.0, std=1.0, dtype=None))]
    fn normal(
        &self,
        py: Python<'_>,
        ctx: &Bound<'_, PyContext>,
        shape: &Bound<'_, PyAny>,
        mean: f64,
        std: f64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (shape, d) = (shape_of(shape)?, dtype_or(dtype, unigpu::DType::F32)?);
        let ctx = &ctx.get().ctx;
        py.detach(|| self.with(|g| g.normal_any(ctx, d, &shape, mean, std)))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// An array of `shape` of integers uniform in [low, high), of `dtype`
    /// (i32 or i64; i32 when None) in `ctx`.
    #[pyo3(signature = (ctx, shape, low, high, dtype=None))]
    fn randint(
        &self,
        py: Python<'_>,
        ctx: &Bound<'_, PyContext>,
        shape: &Bound<'_, PyAny>,
        low: i64,
        high: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (shape, d) = (shape_of(shape)?, dtype_or(dtype, unigpu::DType::I32)?);
        let ctx = &ctx.get().ctx;
        py.detach(|| self.with(|g| g.randint_any(ctx, d, &shape, low, high)))
            .map(PyArray::new)
            .map_err(err(py))
    }

    fn __repr__(&self) -> String {
        self.with(|g| format!("unigpu.Generator(seed={}, offset={})", g.seed(), g.offset()))
    }
}
