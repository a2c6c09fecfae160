//! `unigpu.Array`: an array with a shape in a context's memory, of one of
//! the nine element types, or a view of one (numpy's rules: `a.T`,
//! `a[1:, ::2]`, `a.reshape(...)` share the array's memory).

use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PySlice, PyTuple};
use unigpu::binding::{Compare, Handle, UnaryMath};
use unigpu::{AnyArray, AnyView, AnyViewMut, Context, DType, Layout};

use crate::context::PyContext;
use crate::dtype;
use crate::errors::{call_err, err};
use crate::ops::Arith;

/// How a Python `Array` holds its data: shared, so that whatever else
/// needs the array to outlive the Python object (a DLPack capsule) can
/// keep it alive, and behind a lock, because Python threads share objects.
pub(crate) type Shared = unigpu::binding::SharedArray;

/// An array in a context's memory (device memory on CUDA, host memory on
/// the CPU backend), with a shape, or a view of one. Made by
/// `Context.zeros`, `.empty`, `.array`, by ops, or `Array.to_context`;
/// freed when the last reference (views included) goes, after the work
/// pending on it.
#[pyclass(frozen, name = "Array", module = "unigpu")]
pub struct PyArray {
    pub(crate) inner: Shared,
    pub(crate) dtype: DType,
    /// The elements' layout in `inner`'s memory.
    pub(crate) layout: Layout,
    /// Whether this handle is a view (`layout` is not `inner`'s own).
    pub(crate) view: bool,
    pub(crate) ctx: Context,
}

impl std::fmt::Debug for PyArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array({}, shape {:?})", self.dtype, self.layout.shape())
    }
}

impl PyArray {
    pub(crate) fn new(a: AnyArray) -> PyArray {
        PyArray {
            dtype: a.dtype(),
            layout: a.layout().clone(),
            view: false,
            ctx: a.context().clone(),
            inner: Arc::new(RwLock::new(a)),
        }
    }

    /// A view of the same memory with `layout`.
    fn view_with(&self, layout: Layout) -> PyArray {
        PyArray {
            inner: self.inner.clone(),
            dtype: self.dtype,
            layout,
            view: true,
            ctx: self.ctx.clone(),
        }
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        self.layout.len()
    }

    /// The array as the bindings' calls take it (the view's layout, if a
    /// view).
    pub(crate) fn handle(&self) -> Handle<'_> {
        Handle {
            array: &self.inner,
            layout: self.view.then_some(&self.layout),
        }
    }

    /// Runs `f` with this array (or view) read.
    pub(crate) fn with_view<R>(&self, f: impl FnOnce(AnyView<'_>) -> R) -> R {
        let a = self.inner.read().unwrap_or_else(|e| e.into_inner());
        f(AnyView {
            array: &a,
            layout: self.view.then_some(&self.layout),
        })
    }

    /// Runs `f` with this array (or view) written.
    pub(crate) fn with_view_mut<R>(&self, f: impl FnOnce(AnyViewMut<'_>) -> R) -> R {
        let mut a = self.inner.write().unwrap_or_else(|e| e.into_inner());
        f(AnyViewMut {
            array: &mut a,
            layout: self.view.then_some(&self.layout),
        })
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
        let shape = host.shape;
        py.detach(|| {
            let a = if to_bf16 {
                AnyArray::from_bytes(ctx, d, &dtype::f32_bytes_to_bf16(bytes))
            } else {
                AnyArray::from_bytes(ctx, d, bytes)
            }?;
            a.reshape(shape)
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
        let flat = dtype::numpy_from(
            py,
            self.dtype,
            self.len() * self.dtype.size_bytes(),
            |buf| {
                py.detach(|| self.with_view(|v| v.download_bytes(buf)))
                    .map_err(err(py))
            },
        )?;
        flat.call_method1("reshape", (self.shape(py)?,))
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
        if n != self.len() {
            return Err(err(py)(unigpu::Error::SizeMismatch {
                what: "Array.upload",
                expected: self.len(),
                actual: n,
            }));
        }
        let (to_bf16, bytes) = (host.f32_to_bf16, host.bytes.as_bytes());
        py.detach(|| {
            self.with_view_mut(|mut a| {
                if to_bf16 {
                    a.upload_bytes(&dtype::f32_bytes_to_bf16(bytes))
                } else {
                    a.upload_bytes(bytes)
                }
            })
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
        py.detach(|| {
            self.with_view(|v| match v.layout {
                None => v.array.to_context(ctx),
                Some(_) => v.to_contiguous()?.to_context(ctx),
            })
        })
        .map(PyArray::new)
        .map_err(err(py))
    }

    /// A new contiguous array of `dtype` with this one's elements (a
    /// view's included) cast by Rust's `as` rule, the same on every
    /// backend: float → int truncates toward zero and saturates, NaN → 0;
    /// int → int wraps; int → float rounds to nearest even; to f16/bf16
    /// through f32 (docs/guide.md, "Casts").
    fn astype(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        let d = dtype::parse(dtype)?;
        py.detach(|| self.with_view(|v| v.astype(d)))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// A new contiguous array with the same elements and shape.
    fn copy(&self, py: Python<'_>) -> PyResult<PyArray> {
        py.detach(|| self.with_view(|v| v.to_contiguous()))
            .map(PyArray::new)
            .map_err(err(py))
    }

    /// The same elements with `shape` (ints, or one tuple; one extent may
    /// be -1): a view where the strides allow, else (a transposed array
    /// flattened) a contiguous copy, as numpy's `reshape` does.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyArray> {
        let shape: Vec<isize> =
            if shape.len() == 1 && !shape.get_item(0)?.is_instance_of::<pyo3::types::PyInt>() {
                shape.get_item(0)?.extract()?
            } else {
                shape.extract()?
            };
        let shape = unigpu::infer_shape(&shape, self.len()).map_err(shape_err)?;
        match self.layout.reshape(&shape) {
            Ok(layout) => Ok(self.view_with(layout)),
            Err(_) => {
                let copy = self.copy(py)?;
                let layout = copy.layout.reshape(&shape).map_err(shape_err)?;
                Ok(copy.view_with(layout))
            }
        }
    }

    /// Every axis reversed (a matrix transposed): a view.
    #[getter(T)]
    fn transposed(&self) -> PyArray {
        self.view_with(self.layout.transpose())
    }

    /// The axes reordered (all reversed without arguments): a view.
    #[pyo3(signature = (*axes))]
    fn transpose(&self, axes: &Bound<'_, PyTuple>) -> PyResult<PyArray> {
        if axes.is_empty() {
            return Ok(self.transposed());
        }
        let axes: Vec<isize> =
            if axes.len() == 1 && !axes.get_item(0)?.is_instance_of::<pyo3::types::PyInt>() {
                axes.get_item(0)?.extract()?
            } else {
                axes.extract()?
            };
        let n = self.layout.ndim() as isize;
        let axes: Vec<usize> = axes
            .iter()
            .map(|&a| if a < 0 { a + n } else { a })
            .map(|a| usize::try_from(a).unwrap_or(usize::MAX))
            .collect();
        Ok(self.view_with(self.layout.permute(&axes).map_err(shape_err)?))
    }

    /// numpy's basic indexing: ints, slices (any step) and `...`, one per
    /// axis from the first; an int removes its axis. A view, or, when
    /// every axis is indexed by an int, the element as a Python number.
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let layout = index_layout(&self.layout, key)?;
        let v = self.view_with(layout);
        if v.layout.ndim() == 0 {
            let one = v.numpy(py)?;
            return Ok(one.call_method0("item")?.unbind());
        }
        Ok(Bound::new(py, v)?.into_any().unbind())
    }

    /// `a[key] = value`: a number fills the elements `key` names; anything
    /// `numpy.asarray` takes, with as many elements, is copied in (in C
    /// order of the view's shape).
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let v = self.view_with(index_layout(&self.layout, key)?);
        if value.is_instance_of::<pyo3::types::PyInt>()
            || value.is_instance_of::<pyo3::types::PyFloat>()
        {
            let value = dtype::scalar_as(v.dtype, value, &|| "the value".to_string())?;
            let ops = self.ctx.ops();
            return py
                .detach(|| unigpu::binding::fill(ops, v.handle(), value))
                .map_err(crate::errors::call_err(py));
        }
        v.upload(py, value)
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
        self.len()
    }

    /// The extent of each axis.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.layout.shape())
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// Bytes between neighbours along each axis (numpy's `strides`).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let size = self.dtype.size_bytes() as isize;
        PyTuple::new(py, self.layout.strides().iter().map(|s| s * size))
    }

    /// Whether the elements are one row-major run of the memory.
    #[getter]
    fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.len() * self.dtype.size_bytes()
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

    /// `self + other` element-wise (numpy's broadcasting), a new array.
    fn __add__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Add, false)
    }

    /// `self - other` element-wise (numpy's broadcasting), a new array.
    fn __sub__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Sub, false)
    }

    /// `self * other` element-wise (numpy's broadcasting), a new array.
    fn __mul__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Mul, false)
    }

    /// `other + self` for a Python number `other`.
    fn __radd__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Add, true)
    }

    /// `other - self` for a Python number `other`.
    fn __rsub__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Sub, true)
    }

    /// `other * self` for a Python number `other`.
    fn __rmul__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Mul, true)
    }

    /// `self / other` element-wise (an array or a number), a new array.
    fn __truediv__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Div, false)
    }

    /// `other / self` for a Python number `other`.
    fn __rtruediv__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, Arith::Div, true)
    }

    /// `self ** other`: a number exponent by `pow_scalar`, an array one
    /// element-wise (broadcast). No modulo.
    fn __pow__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(PyTypeError::new_err(
                "pow() with a modulo is not supported for unigpu.Array",
            ));
        }
        crate::ops::arith(slf, other, Arith::Pow, false)
    }

    /// `other ** self` for a Python number `other`.
    fn __rpow__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(PyTypeError::new_err(
                "pow() with a modulo is not supported for unigpu.Array",
            ));
        }
        crate::ops::arith(slf, other, Arith::Pow, true)
    }

    /// `-self`, a new array.
    fn __neg__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray>> {
        crate::ops::unary_operator(slf, UnaryMath::Neg)
    }

    /// `abs(self)`, a new array.
    fn __abs__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray>> {
        crate::ops::unary_operator(slf, UnaryMath::Abs)
    }

    /// `self < other` element-wise, a new u8 0/1 mask (numpy's `<` gives
    /// bool).
    fn __lt__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::compare_operator(slf, other, Compare::Lt)
    }

    /// `self <= other`, a u8 mask.
    fn __le__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::compare_operator(slf, other, Compare::Le)
    }

    /// `self > other`, a u8 mask.
    fn __gt__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::compare_operator(slf, other, Compare::Gt)
    }

    /// `self >= other`, a u8 mask.
    fn __ge__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::compare_operator(slf, other, Compare::Ge)
    }

    /// `self == other` element-wise, a u8 mask (an operand neither an
    /// Array nor a number: identity, as Python's default).
    fn __eq__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::compare_operator(slf, other, Compare::Eq)
    }

    /// `self != other`, a u8 mask.
    fn __ne__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::compare_operator(slf, other, Compare::Ne)
    }

    /// Identity, as before `__eq__` was element-wise (a class defining
    /// `__eq__` alone is unhashable): an Array stays usable as a dict key
    /// or in a set, by identity.
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    /// `self @ other` of 2-D arrays or views, a new array.
    fn __matmul__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyArray>,
    ) -> PyResult<Bound<'py, PyArray>> {
        crate::ops::matmul_operator(slf.py(), slf, other)
    }

    /// The extent of the first axis (numpy's rule); a 0-d array has none.
    fn __len__(&self) -> PyResult<usize> {
        self.layout
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d array"))
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Array(dtype='{}', shape={:?}, device='{}:{}'{})",
            self.dtype,
            self.layout.shape(),
            self.ctx.backend_name(),
            self.ctx.device_id(),
            if self.view { ", view" } else { "" }
        )
    }
}

fn shape_err(e: unigpu::ShapeError) -> PyErr {
    PyValueError::new_err(e.0)
}

/// The layout `key` (numpy's basic indexing) names in `layout`.
fn index_layout(layout: &Layout, key: &Bound<'_, PyAny>) -> PyResult<Layout> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let ellipses = items
        .iter()
        .filter(|i| i.is_instance_of::<PyEllipsis>())
        .count();
    if ellipses > 1 {
        return Err(PyIndexError::new_err(
            "an index can only have a single ellipsis ('...')",
        ));
    }
    let named = items.len() - ellipses;
    if named > layout.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices: the array has {} dimensions, {named} were indexed",
            layout.ndim()
        )));
    }
    let mut out = layout.clone();
    // The axis of `out` the next item indexes.
    let mut axis = 0usize;
    for item in &items {
        if item.is_instance_of::<PyEllipsis>() {
            axis += layout.ndim() - named;
        } else if let Ok(s) = item.cast::<PySlice>() {
            let d = out.shape()[axis];
            let ix = s.indices(d as isize)?;
            let (start, stop, step) = (ix.start, ix.stop, ix.step);
            let range = if ix.slicelength == 0 {
                0..0
            } else if step > 0 {
                start as usize..(start + (ix.slicelength as isize - 1) * step + 1) as usize
            } else {
                let last = start + (ix.slicelength as isize - 1) * step;
                let _ = stop;
                last as usize..start as usize + 1
            };
            // A positive step from the range's start, a negative one from
            // its end: exactly the elements Python's slice names.
            let range_step = if range.is_empty() { 1 } else { step };
            out = out.slice(axis, range, range_step).map_err(shape_err)?;
            axis += 1;
        } else if let Ok(i) = item.extract::<isize>() {
            let d = out.shape()[axis] as isize;
            let j = if i < 0 { i + d } else { i };
            if j < 0 || j >= d {
                return Err(PyIndexError::new_err(format!(
                    "index {i} is out of bounds for axis {axis} with size {d}"
                )));
            }
            out = out.index(axis, j as usize).map_err(shape_err)?;
        } else {
            return Err(PyIndexError::new_err(format!(
                "only integers, slices (`:`) and ellipsis (`...`) are valid indices, not {}",
                item.get_type().name()?
            )));
        }
    }
    Ok(out)
}
