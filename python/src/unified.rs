//! Unified (managed) memory from Python: `Context.alloc_unified`,
//! `Array.host_view` (a numpy array over the array's own memory, no copy)
//! and `Stream.prefetch`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use unigpu::{AnyArray, Location};

use crate::array::PyArray;
use crate::dtype::{numpy, numpy_name};
use crate::errors::err;

/// Host memory as numpy sees it (through `__array_interface__`): the base
/// of the numpy arrays `Array.host_view()` and `PinnedBuffer.view()`
/// return, holding the array or buffer so that its memory outlives every
/// view.
#[pyclass(frozen, name = "_HostMemory", module = "unigpu")]
#[derive(Debug)]
pub struct PyHostMemory {
    _owner: Box<dyn std::any::Any + Send + Sync>,
    ptr: usize,
    len: usize,
    typestr: String,
    readonly: bool,
}

#[pymethods]
impl PyHostMemory {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", (self.len,))?;
        d.set_item("typestr", &self.typestr)?;
        d.set_item("data", (self.ptr, self.readonly))?;
        Ok(d)
    }
}

/// `array`'s elements as a numpy array over its memory, after its pending
/// writes (every pending use when `writable`).
pub(crate) fn host_view<'py>(
    array: &PyArray,
    py: Python<'py>,
    writable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let inner = &array.inner;
    let ptr = py
        .detach(|| {
            if writable {
                let mut a = inner.write().unwrap_or_else(|e| e.into_inner());
                a.with_host_bytes_mut(|b| b.as_mut_ptr() as usize)
            } else {
                let a = inner.read().unwrap_or_else(|e| e.into_inner());
                a.with_host_bytes(|b| b.as_ptr() as usize)
            }
        })
        .map_err(err(py))?;
    numpy_view(
        py,
        Box::new(inner.clone()),
        ptr,
        array.len(),
        array.dtype,
        writable,
    )
}

/// A numpy array of `len` elements of `dtype` at `ptr`, kept alive by
/// `owner` (what owns the memory).
pub(crate) fn numpy_view<'py>(
    py: Python<'py>,
    owner: Box<dyn std::any::Any + Send + Sync>,
    ptr: usize,
    len: usize,
    dtype: unigpu::DType,
    writable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let np = numpy(py)?;
    let dtype = np.getattr("dtype")?.call1((numpy_name(dtype),))?;
    if len == 0 {
        // No memory to point at: an empty array of the dtype.
        return np.getattr("empty")?.call1((0, dtype));
    }
    let memory = PyHostMemory {
        _owner: owner,
        ptr,
        len,
        typestr: dtype.getattr("str")?.extract()?,
        readonly: !writable,
    };
    np.getattr("asarray")?.call1((Py::new(py, memory)?,))
}

/// A `to` argument of `Stream.prefetch`.
pub(crate) fn location(to: &str) -> PyResult<Location> {
    match to {
        "device" => Ok(Location::Device),
        "host" => Ok(Location::Host),
        other => Err(PyValueError::new_err(format!(
            "prefetch to {other:?}: expected \"device\" or \"host\""
        ))),
    }
}

/// `n` zeros of `dtype` in unified memory, for `Context.alloc_unified`.
pub(crate) fn alloc(
    ctx: &unigpu::Context,
    py: Python<'_>,
    n: usize,
    dtype: unigpu::DType,
) -> PyResult<PyArray> {
    py.detach(|| AnyArray::alloc_unified(ctx, dtype, n))
        .map(PyArray::new)
        .map_err(err(py))
}
