//! `unigpu.PinnedBuffer`: host memory that stream copies read and write
//! without staging (page-locked on CUDA), seen from Python as numpy views.

use std::sync::{Arc, RwLock};

use pyo3::prelude::*;
use unigpu::{AnyPinned, Context, DType};

use crate::errors::err;

/// `n` elements of host memory that `Stream.upload_pinned` and
/// `Stream.download_pinned` copy without staging: page-locked on CUDA
/// (the copies return at once), ordinary memory on the CPU and torch
/// backends. Made by `Context.pinned`; `view()` shows the contents as a
/// numpy array without a copy. Page-locked memory is scarce: keep a few
/// buffers and reuse them.
#[pyclass(frozen, name = "PinnedBuffer", module = "unigpu")]
#[derive(Debug)]
pub struct PyPinned {
    pub(crate) inner: Arc<RwLock<AnyPinned>>,
    dtype: DType,
    len: usize,
    ctx: Context,
}

impl PyPinned {
    pub(crate) fn new(ctx: &Context, py: Python<'_>, n: usize, dtype: DType) -> PyResult<PyPinned> {
        let p = py
            .detach(|| AnyPinned::new(ctx, dtype, n))
            .map_err(err(py))?;
        Ok(PyPinned {
            inner: Arc::new(RwLock::new(p)),
            dtype,
            len: n,
            ctx: ctx.clone(),
        })
    }
}

#[pymethods]
impl PyPinned {
    /// The contents as a numpy array over the buffer's memory, without a
    /// copy: waits for the downloads pending into the buffer (with
    /// `writable=True`, for every copy from or into it) and returns a
    /// read-only (writable) view, which keeps the memory alive. It is up
    /// to date until another copy into (or, for writing, from or into) the
    /// buffer is enqueued: call `view` again after such a copy to wait for
    /// it. bf16 elements are numpy.uint16 bit patterns.
    #[pyo3(signature = (writable = false))]
    fn view<'py>(&self, py: Python<'py>, writable: bool) -> PyResult<Bound<'py, PyAny>> {
        let inner = &self.inner;
        let ptr = py
            .detach(|| {
                if writable {
                    let mut p = inner.write().unwrap_or_else(|e| e.into_inner());
                    p.with_bytes_mut(|b| b.as_mut_ptr() as usize)
                } else {
                    let p = inner.read().unwrap_or_else(|e| e.into_inner());
                    p.with_bytes(|b| b.as_ptr() as usize)
                }
            })
            .map_err(err(py))?;
        crate::unified::numpy_view(
            py,
            Box::new(inner.clone()),
            ptr,
            self.len,
            self.dtype,
            writable,
        )
    }

    /// The element type's name.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// The number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.len
    }

    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.PinnedBuffer(dtype='{}', len={}, device='{}:{}')",
            self.dtype,
            self.len,
            self.ctx.backend_name(),
            self.ctx.device_id()
        )
    }
}
