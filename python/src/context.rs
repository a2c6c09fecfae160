//! `unigpu.Context`, `unigpu.devices()`, `unigpu.backends()`.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use unigpu::{AnyArray, Backend, Context, DType, Outcome};

use crate::array::PyArray;
use crate::dtype;
use crate::errors::err;
use crate::kernel::{self, PyKernel, PyModule_};
use crate::ops::PyOps;
use crate::stream::{PyEvent, PyStream};

fn backend_of(name: &str) -> PyResult<Backend> {
    name.parse().map_err(|()| {
        PyValueError::new_err(format!(
            "unknown backend {name:?}; expected one of: {}",
            Backend::ALL.map(|b| b.name()).join(", ")
        ))
    })
}

fn length(n: i64) -> PyResult<usize> {
    usize::try_from(n)
        .map_err(|_| PyValueError::new_err(format!("array length must be >= 0, got {n}")))
}

/// A shape argument: an int (a 1-D array of that length) or a sequence of
/// ints, each >= 0.
fn shape_of(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if let Ok(n) = shape.extract::<i64>() {
        return Ok(vec![length(n)?]);
    }
    let dims: Vec<i64> = shape.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "a shape is an int or a sequence of ints, not {}",
            shape.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    dims.into_iter().map(length).collect()
}

/// A device plus its default stream. `Context()` picks the backend as
/// unigpu.toml / UNIGPU_BACKEND / UNIGPU_DEVICE say, else torch → cuda →
/// vulkan → cpu; `Context.new("cuda", 1)` takes exactly that device.
#[pyclass(frozen, name = "Context", module = "unigpu")]
#[derive(Debug)]
pub struct PyContext {
    pub(crate) ctx: Context,
}

#[pymethods]
impl PyContext {
    /// The default context: the config file and environment first, then
    /// the first backend of torch → cuda → vulkan → cpu that opens.
    #[new]
    fn py_new(py: Python<'_>) -> PyResult<Self> {
        py.detach(Context::default)
            .map(|ctx| PyContext { ctx })
            .map_err(err(py))
    }

    /// Exactly `backend` ("cuda", "vulkan", "cpu", "torch"), device `device`; no
    /// fallback.
    #[staticmethod]
    #[pyo3(name = "new", signature = (backend, device=0))]
    fn new_exact(py: Python<'_>, backend: &str, device: usize) -> PyResult<Self> {
        let backend = backend_of(backend)?;
        py.detach(|| Context::new(backend, device))
            .map(|ctx| PyContext { ctx })
            .map_err(err(py))
    }

    /// The CPU backend, which is always available.
    #[staticmethod]
    fn cpu(py: Python<'_>) -> PyResult<Self> {
        py.detach(Context::host)
            .map(|ctx| PyContext { ctx })
            .map_err(err(py))
    }

    /// A context from a unigpu.toml at `path` (UNIGPU_BACKEND and
    /// UNIGPU_DEVICE still override it).
    #[staticmethod]
    fn from_config(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        py.detach(|| Context::from_config_file(&path))
            .map(|ctx| PyContext { ctx })
            .map_err(err(py))
    }

    /// "cpu", "cuda", "vulkan" or "torch".
    #[getter]
    fn backend(&self) -> &'static str {
        self.ctx.backend_name()
    }

    #[getter]
    fn device_id(&self) -> usize {
        self.ctx.device_id()
    }

    /// The default element type from the config ("f32" unless set).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.ctx.dtype().name()
    }

    /// Why each backend was chosen or passed over: a list of
    /// `(backend, outcome, reason)` with outcome "chosen", "skipped" (reason
    /// says why) or "not tried" (reason None).
    #[getter]
    fn fallback_chain(&self) -> Vec<(&'static str, &'static str, Option<String>)> {
        self.ctx
            .fallback_chain()
            .iter()
            .map(|a| match &a.outcome {
                Outcome::Chosen => (a.backend.name(), "chosen", None),
                Outcome::Skipped(reason) => (a.backend.name(), "skipped", Some(reason.clone())),
                Outcome::NotTried => (a.backend.name(), "not tried", None),
            })
            .collect()
    }

    /// `(free, total)` bytes of the device (system RAM on the CPU backend).
    fn memory_info(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        py.detach(|| self.ctx.memory_info())
            .map(|m| (m.free, m.total))
            .map_err(err(py))
    }

    /// This context's device.
    fn device_info(&self, py: Python<'_>) -> PyResult<PyDeviceInfo> {
        py.detach(|| self.ctx.device_info())
            .map(PyDeviceInfo::from)
            .map_err(err(py))
    }

    /// Waits for all work on every stream of the context; raises the first
    /// error any of it hit.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.ctx.sync()).map_err(err(py))
    }

    /// A new stream.
    fn stream(&self, py: Python<'_>) -> PyResult<PyStream> {
        py.detach(|| self.ctx.create_stream())
            .map(|s| PyStream::new(&self.ctx, s))
            .map_err(err(py))
    }

    /// The stream that calls without `stream=` use.
    #[getter]
    fn default_stream(&self) -> PyStream {
        PyStream::new(&self.ctx, self.ctx.default_stream().clone())
    }

    /// A new event (record it with `event.record(stream)`); untimed
    /// unless `timing=True`, which `elapsed_ms` needs.
    #[pyo3(signature = (timing = false))]
    fn event(&self, py: Python<'_>, timing: bool) -> PyResult<PyEvent> {
        py.detach(|| {
            if timing {
                self.ctx.create_timing_event()
            } else {
                self.ctx.create_event()
            }
        })
        .map(PyEvent::new)
        .map_err(err(py))
    }

    /// Zeros of `shape` (an int, or a tuple of ints) and `dtype` (the
    /// config's default dtype when None).
    #[pyo3(signature = (shape, dtype=None))]
    fn zeros(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (shape, d) = (shape_of(shape)?, self.dtype_or_default(dtype)?);
        let n = unigpu::Layout::contiguous(&shape).len();
        py.detach(|| AnyArray::zeros(&self.ctx, d, n)?.reshape(shape))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// `n` zeros of `dtype` in unified memory: an ordinary Array (every
    /// op, kernel and copy takes it) that the host also reads and writes in
    /// place through `Array.host_view()`; `Stream.prefetch` moves it ahead
    /// of use. Managed memory on CUDA, never more than the device has free
    /// (OutOfMemoryError, with the free bytes); host memory on the CPU
    /// backend; UnsupportedError on torch.
    #[pyo3(signature = (n, dtype=None))]
    fn alloc_unified(
        &self,
        py: Python<'_>,
        n: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (n, d) = (length(n)?, self.dtype_or_default(dtype)?);
        crate::unified::alloc(&self.ctx, py, n, d)
    }

    /// `n` zeroed elements of `dtype` of pinned host memory for this
    /// context's device (a `PinnedBuffer`): page-locked on CUDA, so that
    /// `Stream.upload_pinned` / `download_pinned` run at the DMA engine's
    /// rate and return at once.
    #[pyo3(signature = (n, dtype=None))]
    fn pinned(
        &self,
        py: Python<'_>,
        n: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::pinned::PyPinned> {
        let (n, d) = (length(n)?, self.dtype_or_default(dtype)?);
        crate::pinned::PyPinned::new(&self.ctx, py, n, d)
    }

    /// An array of `shape` (an int, or a tuple of ints) and `dtype` with
    /// unspecified contents.
    #[pyo3(signature = (shape, dtype=None))]
    fn empty(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (shape, d) = (shape_of(shape)?, self.dtype_or_default(dtype)?);
        let n = unigpu::Layout::contiguous(&shape).len();
        py.detach(|| AnyArray::alloc(&self.ctx, d, n)?.reshape(shape))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// A new array with a copy of `data` (a numpy array or anything
    /// `numpy.asarray` takes; flattened in C order), of `dtype` or of the
    /// data's own dtype. For bf16, ml_dtypes.bfloat16 and uint16 data are
    /// taken as bit patterns and other data is rounded from float32.
    #[pyo3(signature = (data, dtype=None))]
    fn array(
        &self,
        data: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let d = dtype.map(dtype::parse).transpose()?;
        PyArray::from_host(&self.ctx, data, d)
    }

    /// An array of `shape` and `dtype` (the config's default dtype when
    /// None) holding ones (numpy's `ones`).
    #[pyo3(signature = (shape, dtype=None))]
    fn ones(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let one = 1i64.into_pyobject(py)?.into_any();
        self.full(py, shape, &one, dtype)
    }

    /// An array of `shape` with every element `fill_value`, of `dtype`
    /// (the config's default when None): an integer dtype takes an int
    /// that fits it (else OverflowError/TypeError), a float dtype any
    /// real number, rounded to nearest (numpy's `full`).
    #[pyo3(signature = (shape, fill_value, dtype=None))]
    fn full(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        fill_value: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let (shape, d) = (shape_of(shape)?, self.dtype_or_default(dtype)?);
        let value = dtype::scalar_as(d, fill_value, &|| "fill_value".to_string())?;
        py.detach(|| AnyArray::full(&self.ctx, shape, value))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// numpy's `arange`: `arange(stop)`, `arange(start, stop[, step])`;
    /// `ceil((stop - start) / step)` elements, element `i` is
    /// `i * step + start` in float64, then cast to `dtype` (default: int64
    /// when every argument is an int, else float64) as `astype` casts.
    /// ValueError-like errors (UnigpuError) for a step of 0 or a NaN.
    #[pyo3(signature = (start, stop=None, step=None, dtype=None))]
    fn arange(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: Option<&Bound<'_, PyAny>>,
        step: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let ints = [Some(start), stop, step]
            .iter()
            .flatten()
            .all(|x| x.is_instance_of::<pyo3::types::PyInt>());
        let d = match dtype {
            Some(d) => dtype::parse(d)?,
            None if ints => DType::I64,
            None => DType::F64,
        };
        let (start, stop): (f64, f64) = match stop {
            Some(stop) => (start.extract()?, stop.extract()?),
            None => (0.0, start.extract()?),
        };
        let step: f64 = step.map(|s| s.extract()).transpose()?.unwrap_or(1.0);
        py.detach(|| AnyArray::arange(&self.ctx, d, start, stop, step))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// numpy's `linspace(start, stop, num=50)`, endpoint included: element
    /// `i` is `i * step + start` with `step = (stop - start) / (num - 1)`
    /// in float64, the last is `stop`; cast to `dtype` (default float64),
    /// integer dtypes floored first (as numpy 2).
    #[pyo3(signature = (start, stop, num=50, dtype=None))]
    fn linspace(
        &self,
        py: Python<'_>,
        start: f64,
        stop: f64,
        num: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let d = dtype.map(dtype::parse).transpose()?.unwrap_or(DType::F64);
        let num = length(num)?;
        py.detach(|| AnyArray::linspace(&self.ctx, d, start, stop, num))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// numpy's `eye(N, M=None)`: ones on the main diagonal of an N×M
    /// (N×N) array of `dtype` (the config's default when None).
    #[pyo3(signature = (n, m=None, dtype=None))]
    fn eye(
        &self,
        py: Python<'_>,
        n: i64,
        m: Option<i64>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let d = self.dtype_or_default(dtype)?;
        let rows = length(n)?;
        let cols = m.map(length).transpose()?.unwrap_or(rows);
        py.detach(|| AnyArray::eye(&self.ctx, d, rows, cols))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// Same as `array`.
    #[pyo3(signature = (data, dtype=None))]
    fn upload(
        &self,
        data: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        self.array(data, dtype)
    }

    /// Compiles CUDA C++ (NVRTC, cached). On the CPU backend nothing is
    /// compiled: the module lists the source's kernels, which run there
    /// once they have a CPU implementation (`Kernel.with_cpu`).
    #[pyo3(signature = (source, *, include=None, define=None, arch=None, options=None))]
    fn compile(
        &self,
        py: Python<'_>,
        source: &str,
        include: Option<Vec<PathBuf>>,
        define: Option<std::collections::BTreeMap<String, Option<String>>>,
        arch: Option<(i32, i32)>,
        options: Option<Vec<String>>,
    ) -> PyResult<PyModule_> {
        kernel::compile(py, &self.ctx, source, include, define, arch, options)
    }

    /// Launches `kernel` on `stream` (default: the default stream) with
    /// `grid` blocks of `block` threads (ints or tuples of up to 3) and
    /// `args` (Arrays and numbers; see docs/python.md for scalar types).
    #[pyo3(signature = (kernel, grid, block, args, *, stream=None, shared_mem=0))]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        kernel: &Bound<'_, PyKernel>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyStream>>,
        shared_mem: u32,
    ) -> PyResult<()> {
        let stream = match stream {
            Some(s) => s.get().stream.clone(),
            None => self.ctx.default_stream().clone(),
        };
        kernel::launch(
            py,
            &self.ctx,
            kernel.get(),
            &stream,
            grid,
            block,
            args,
            shared_mem,
        )
    }

    /// The built-in ops on the default stream.
    #[getter]
    fn ops(&self) -> PyOps {
        PyOps::new(self.ctx.clone(), None)
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Context(backend='{}', device={})",
            self.ctx.backend_name(),
            self.ctx.device_id()
        )
    }
}

impl PyContext {
    fn dtype_or_default(&self, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<DType> {
        match dtype {
            Some(d) => dtype::parse(d),
            None => Ok(self.ctx.dtype()),
        }
    }
}

/// One device, as `unigpu.devices(backend)` lists it.
#[pyclass(frozen, get_all, name = "DeviceInfo", module = "unigpu")]
#[derive(Debug)]
pub struct PyDeviceInfo {
    backend: &'static str,
    ordinal: usize,
    name: String,
    /// `(major, minor)` for CUDA devices, None for the CPU and Vulkan.
    compute_capability: Option<(i32, i32)>,
    memory_free: usize,
    memory_total: usize,
    /// `(name, value)` pairs: a Vulkan adapter's type, driver, features
    /// and limits; empty for other backends.
    details: Vec<(String, String)>,
}

impl From<unigpu::DeviceInfo> for PyDeviceInfo {
    fn from(d: unigpu::DeviceInfo) -> Self {
        PyDeviceInfo {
            backend: d.backend.name(),
            ordinal: d.ordinal,
            name: d.name,
            compute_capability: d.compute_capability,
            memory_free: d.memory.free,
            memory_total: d.memory.total,
            details: d.details,
        }
    }
}

#[pymethods]
impl PyDeviceInfo {
    fn __repr__(&self) -> String {
        let cc = self
            .compute_capability
            .map(|(a, b)| format!(", compute_capability=({a}, {b})"))
            .unwrap_or_default();
        format!(
            "unigpu.DeviceInfo(backend='{}', ordinal={}, name={:?}{cc}, memory_free={}, memory_total={})",
            self.backend, self.ordinal, self.name, self.memory_free, self.memory_total
        )
    }
}

/// Every device `backend` can use here; raises BackendUnavailableError
/// saying why when the backend cannot run.
#[pyfunction]
pub(crate) fn devices(py: Python<'_>, backend: &str) -> PyResult<Vec<PyDeviceInfo>> {
    let backend = backend_of(backend)?;
    py.detach(|| unigpu::list_devices(backend))
        .map(|v| v.into_iter().map(PyDeviceInfo::from).collect())
        .map_err(err(py))
}

/// The backends, in the order `Context()` tries them.
#[pyfunction]
pub(crate) fn backends() -> Vec<&'static str> {
    Backend::ALL.map(|b| b.name()).to_vec()
}
