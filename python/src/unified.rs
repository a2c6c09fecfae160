//! Unified (managed) memory from Python: `Context.alloc_unified`,
//! `Array.host_view` (a numpy array over the array's own memory, no copy)
//! and `Stream.prefetch`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use unigpu::{AnyArray, Location};

use crate::array::{PyArray, Shared};
use crate::dtype::{numpy, numpy_name};
use crate::errors::err;

/// The host memory of a unified array as numpy sees it (through
/// `__array_interface__`): the base of `Array.host_view()`'s result,
/// holding the array so that its memory outlives every view.
#[pyclass(frozen, name = "_HostMemory", module = "unigpu")]
#[derive(Debug)]
pub struct PyHostMemory {
    _array: Shared,
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
    let np = numpy(py)?;
    let dtype = np.getattr("dtype")?.call1((numpy_name(array.dtype),))?;
    if array.len == 0 {
        // No memory to point at: an empty array of the dtype.
        return np.getattr("empty")?.call1((0, dtype));
    }
    let memory = PyHostMemory {
        _array: inner.clone(),
        ptr,
        len: array.len,
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
