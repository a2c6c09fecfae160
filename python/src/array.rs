//! `unigpu.Array`: a one-dimensional array in a context's memory, of one of
//! the nine element types.

use std::sync::{Arc, RwLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use unigpu::{AnyArray, Context, DType};

use crate::context::PyContext;
use crate::dtype;
use crate::errors::{call_err, err};

/// How a Python `Array` holds its data: shared, so that whatever else
/// needs the array to outlive the Python object (a DLPack capsule) can
/// keep it alive, and behind a lock, because Python threads share objects.
pub(crate) type Shared = unigpu::binding::SharedArray;

/// A one-dimensional array in a context's memory (device memory on CUDA,
/// host memory on the CPU backend). Made by `Context.zeros`, `.empty`,
/// `.array`, by ops, or `Array.to_context`; freed when the last reference
/// goes (after the work pending on it).
#[pyclass(frozen, name = "Array", module = "unigpu")]
pub struct PyArray {
    pub(crate) inner: Shared,
    pub(crate) dtype: DType,
    pub(crate) len: usize,
    pub(crate) ctx: Context,
}

impl std::fmt::Debug for PyArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array({}, len {})", self.dtype, self.len)
    }
}

impl PyArray {
    pub(crate) fn new(a: AnyArray) -> PyArray {
        PyArray {
            dtype: a.dtype(),
            len: a.len(),
            ctx: a.context().clone(),
            inner: Arc::new(RwLock::new(a)),
        }
    }

    pub(crate) fn lock(&self) -> &RwLock<AnyArray> {
        &self.inner
    }

    /// A new array holding a copy of `obj` (anything `numpy.asarray`
    /// takes), of `dtype` or of `obj`'s own dtype.
    pub(crate) fn from_host(
        ctx: &Context,
        obj: &Bound<'_, PyAny>,
        dtype: Option<DType>,
    ) -> PyResult<PyArray> {
        let py = obj.py();
        let host = dtype::host_data(obj, dtype)?;
        let (d, to_bf16, bytes) = (host.dtype, host.f32_to_bf16, host.bytes.as_bytes());
        py.detach(|| {
            if to_bf16 {
                AnyArray::from_bytes(ctx, d, &dtype::f32_bytes_to_bf16(bytes))
            } else {
                AnyArray::from_bytes(ctx, d, bytes)
            }
        })
        .map(PyArray::new)
        .map_err(err(py))
    }
}

#[pymethods]
impl PyArray {
    /// Exports the array as a DLPack capsule sharing its memory (the array
    /// API standard's `__dlpack__`). `stream` is the consumer's stream:
    /// the array's pending work is ordered before it (CUDA: None or 1 the
    /// legacy default stream, 2 the per-thread one, a larger number a
    /// `cudaStream_t`, -1 no ordering; CPU arrays take None only).
    /// `max_version=None` gives a legacy `dltensor` capsule, `(1, x)` a
    /// versioned one. A `dl_device` other than the array's own (CPU only)
    /// or `copy=True` export a copy; `copy=False` never copies.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        crate::dlpack::export(self, py, stream, max_version, dl_device, copy)
    }

    /// `(device_type, device_id)` in DLPack's numbering: CPU 1, CUDA 2.
    fn __dlpack_device__(&self) -> (i32, i32) {
        self.ctx.dlpack_device()
    }

    /// The address of the first element (a device address on CUDA), as a
    /// DLPack export reports it: equal addresses mean shared memory.
    fn data_ptr(&self, py: Python<'_>) -> PyResult<u64> {
        crate::dlpack::data_ptr(self, py)
    }

    /// A new numpy array with a copy of the elements (waits for the work
    /// pending on the array). bf16 arrays come back as numpy.uint16 bit
    /// patterns (numpy has no bfloat16): `unigpu.bf16_to_float32(bits)`
    /// converts, or `.view(ml_dtypes.bfloat16)` reinterprets.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = &self.inner;
        dtype::numpy_from(py, self.dtype, self.len * self.dtype.size_bytes(), |buf| {
            py.detach(|| {
                inner
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .download_bytes(buf)
            })
            .map_err(err(py))
        })
    }

    /// A numpy array over the elements' own memory, without a copy, for an
    /// array made by `Context.alloc_unified`: waits for the work that
    /// writes the array (with `writable=True`, for every use of it) and
    /// returns a read-only (writable) view. The view keeps the memory
    /// alive; it is up to date until work that writes the array (or, for
    /// writing, uses it) is enqueued: call `host_view` again after such
    /// work to wait for it. bf16 elements are numpy.uint16 bit patterns.
    /// Raises UnsupportedError for an array not made by `alloc_unified`.
    #[pyo3(signature = (writable = false))]
    fn host_view<'py>(&self, py: Python<'py>, writable: bool) -> PyResult<Bound<'py, PyAny>> {
        crate::unified::host_view(self, py, writable)
    }

    /// True for an array made by `Context.alloc_unified` (managed memory
    /// on CUDA, host memory on the CPU backend).
    #[getter]
    fn is_unified(&self, py: Python<'_>) -> bool {
        py.detach(|| {
            self.inner
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .is_unified()
        })
    }

    /// numpy's conversion hook (`numpy.asarray(a)`): always a copy.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "a unigpu.Array cannot be viewed as a numpy array without a copy; use copy=None or True (or numpy.from_dlpack)",
            ));
        }
        let a = self.numpy(py)?;
        match dtype {
            Some(d) => a.call_method1("astype", (d,)),
            None => Ok(a),
        }
    }

    /// Overwrites the elements with `data` (anything `numpy.asarray` takes,
    /// with exactly `len(self)` elements; converted to this array's dtype).
    fn upload(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let host = dtype::host_data(data, Some(self.dtype))?;
        let src_elem = if host.f32_to_bf16 {
            4
        } else {
            self.dtype.size_bytes()
        };
        let n = host.bytes.as_bytes().len() / src_elem;
        if n != self.len {
            return Err(err(py)(unigpu::Error::SizeMismatch {
                what: "Array.upload",
                expected: self.len,
                actual: n,
            }));
        }
        let (to_bf16, bytes, inner) = (host.f32_to_bf16, host.bytes.as_bytes(), &self.inner);
        py.detach(|| {
            let mut a = inner.write().unwrap_or_else(|e| e.into_inner());
            if to_bf16 {
                a.upload_bytes(&dtype::f32_bytes_to_bf16(bytes))
            } else {
                a.upload_bytes(bytes)
            }
        })
        .map_err(err(py))
    }

    /// Copies this array into `dst` (same dtype and length), ordered after
    /// the work pending on both.
    fn copy_to(&self, py: Python<'_>, dst: &Bound<'_, PyArray>) -> PyResult<()> {
        let dst = dst.get();
        py.detach(|| unigpu::binding::copy_to([self.lock(), dst.lock()], ["self", "dst"]))
            .map_err(call_err(py))
    }

    /// A copy of this array in `ctx` (another device or backend).
    fn to_context(&self, py: Python<'_>, ctx: &Bound<'_, PyContext>) -> PyResult<PyArray> {
        let ctx = &ctx.get().ctx;
        let inner = &self.inner;
        py.detach(|| {
            inner
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .to_context(ctx)
        })
        .map(PyArray::new)
        .map_err(err(py))
    }

    /// The element type's name: "f32", "f64", "f16", "bf16", "i32", "u32",
    /// "i64", "u64" or "u8".
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// The number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.len
    }

    /// `(len,)`: arrays are one-dimensional.
    #[getter]
    fn shape(&self) -> (usize,) {
        (self.len,)
    }

    #[getter]
    fn ndim(&self) -> usize {
        1
    }

    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size_bytes()
    }

    /// The context that owns the array.
    #[getter]
    fn context(&self) -> PyContext {
        PyContext {
            ctx: self.ctx.clone(),
        }
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Array(dtype='{}', len={}, device='{}:{}')",
            self.dtype,
            self.len,
            self.ctx.backend_name(),
            self.ctx.device_id()
        )
    }
}
