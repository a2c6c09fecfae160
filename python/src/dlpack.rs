//! DLPack in Python, as the array API standard defines the protocol:
//! `Array.__dlpack__`, `Array.__dlpack_device__` and `unigpu.from_dlpack`.
//!
//! Capsules are raw CPython objects, so this is the one module of the crate
//! with `unsafe`. The rules it follows:
//! - a capsule named `dltensor_versioned` holds a `DLManagedTensorVersioned`,
//!   `dltensor` a legacy `DLManagedTensor` (what a consumer gets when it
//!   passes no `max_version`);
//! - a consumer renames the capsule to `used_dltensor[_versioned]` when it
//!   takes the tensor; the capsule's destructor calls the tensor's deleter
//!   only if nobody took it;
//! - the producer orders its pending work before the consumer's `stream`
//!   (CUDA: `None` and 1 the legacy default stream, 2 the per-thread one,
//!   a larger number a `cudaStream_t`, -1 no ordering, 0 invalid; CPU: only
//!   `None`).
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{CStr, c_void};
use std::sync::Mutex;

use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use unigpu::dlpack::DlpackTensor;
use unigpu::{AnyArray, Backend, Context, DlpackSync};
use unigpu_core::dlpack::ffi::{self, DLManagedTensor, DLManagedTensorVersioned};
use unigpu_cuda_safe::{CudaDevice, ForeignStream};

use crate::array::PyArray;
use crate::context::PyContext;
use crate::errors::err;

const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

/// Runs when a capsule is collected: deletes the tensor unless a consumer
/// took it (and renamed the capsule).
unsafe extern "C" fn capsule_destructor(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: CPython calls this with a live capsule and the GIL held;
    // IsValid/GetPointer only read it, and a pointer stored under one of
    // our names is the tensor that `capsule` owns (made in `into_capsule`).
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                .cast::<DLManagedTensorVersioned>();
            if let Some(deleter) = p.as_ref().and_then(|t| t.deleter) {
                deleter(p);
            }
        } else if pyo3::ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p =
                pyo3::ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if let Some(deleter) = p.as_ref().and_then(|t| t.deleter) {
                deleter(p);
            }
        }
    }
}

/// Wraps an exported tensor in a capsule, versioned or legacy.
fn into_capsule(py: Python<'_>, tensor: DlpackTensor, versioned: bool) -> PyResult<Py<PyAny>> {
    let (ptr, name) = if versioned {
        let p = tensor
            .into_raw_versioned()
            .map_err(|_| PyBufferError::new_err("this tensor has no versioned form"))?;
        (p.cast::<c_void>(), VERSIONED)
    } else {
        let p = tensor
            .into_raw_legacy()
            .map_err(|_| PyBufferError::new_err("this tensor has no legacy form"))?;
        (p.cast::<c_void>(), LEGACY)
    };
    // SAFETY: `ptr` is a tensor we own (just released from its
    // ManagedTensor), `name` is 'static, and the destructor deletes the
    // tensor unless a consumer takes it.
    let capsule = unsafe { pyo3::ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if capsule.is_null() {
        // No capsule owns the tensor: delete it here.
        // SAFETY: `ptr` is still ours and of the kind `versioned` says.
        unsafe {
            if versioned {
                let p = ptr.cast::<DLManagedTensorVersioned>();
                if let Some(d) = (*p).deleter {
                    d(p)
                }
            } else {
                let p = ptr.cast::<DLManagedTensor>();
                if let Some(d) = (*p).deleter {
                    d(p)
                }
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new, non-NULL reference.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
}

/// Takes the tensor out of a producer's capsule and marks it used.
fn from_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<DlpackTensor> {
    let raw = capsule.as_ptr();
    for (name, used, versioned) in [
        (VERSIONED, USED_VERSIONED, true),
        (LEGACY, USED_LEGACY, false),
    ] {
        // SAFETY: `raw` is a live object (borrowed from `capsule`);
        // IsValid checks it is a capsule of this name without raising.
        if unsafe { pyo3::ffi::PyCapsule_IsValid(raw, name.as_ptr()) } != 1 {
            continue;
        }
        // SAFETY: a valid capsule of this name; the names are 'static.
        let ptr = unsafe { pyo3::ffi::PyCapsule_GetPointer(raw, name.as_ptr()) };
        // SAFETY: as above; renaming is how a consumer takes the tensor.
        if unsafe { pyo3::ffi::PyCapsule_SetName(raw, used.as_ptr()) } != 0 {
            return Err(PyErr::fetch(capsule.py()));
        }
        // SAFETY: the producer put a tensor of this kind under this name,
        // following the DLPack contract, and by renaming the capsule we
        // are now its only owner.
        let tensor = unsafe {
            if versioned {
                DlpackTensor::from_raw_versioned(ptr.cast())
            } else {
                DlpackTensor::from_raw_legacy(ptr.cast())
            }
        };
        return tensor.map_err(|e| err(capsule.py())(e.into()));
    }
    Err(PyTypeError::new_err(
        "__dlpack__ did not return an unused DLPack capsule (dltensor or dltensor_versioned)",
    ))
}

/// The consumer's `stream` argument as an ordering for an array of `ctx`.
fn consumer_sync(
    py: Python<'_>,
    ctx: &Context,
    stream: Option<i64>,
) -> PyResult<(Option<ForeignStream>, bool)> {
    let on_host = ctx.backend() == Backend::Cpu;
    match stream {
        Some(-1) => Ok((None, false)),
        None if on_host => Ok((None, true)),
        Some(s) if on_host => Err(PyValueError::new_err(format!(
            "stream={s} for a CPU array: a CPU consumer passes stream=None (or -1)"
        ))),
        Some(0) => Err(PyValueError::new_err(
            "stream=0 is ambiguous in DLPack: pass 1 (legacy default stream), 2 (per-thread default stream) or a stream handle",
        )),
        Some(s) if s < -1 => Err(PyValueError::new_err(format!(
            "stream={s} is not a CUDA stream"
        ))),
        // None: the legacy default stream, which CU_STREAM_LEGACY (1) names.
        s => {
            let raw = s.unwrap_or(1) as u64;
            let device = CudaDevice::open(ctx.device_id()).map_err(|e| err(py)(e.into()))?;
            // SAFETY: 1 and 2 are the driver's legacy and per-thread default
            // streams; any other value is the consumer's stream, which the
            // protocol has it pass for exactly this use, live on this device
            // during the call (the ForeignStream does not outlive it).
            Ok((
                Some(unsafe { ForeignStream::from_raw(&device, raw) }),
                false,
            ))
        }
    }
}

/// `Array.__dlpack__`: see its docstring in array.rs.
pub(crate) fn export(
    array: &PyArray,
    py: Python<'_>,
    stream: Option<i64>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Py<PyAny>> {
    let ours = array.ctx.dlpack_device();
    let versioned = max_version.is_some_and(|(major, _)| major >= ffi::DLPACK_MAJOR_VERSION);
    let to_host = match dl_device {
        None => false,
        Some(d) if d == ours => false,
        Some((ffi::kDLCPU, 0)) if copy != Some(false) => true,
        Some(d) => {
            return Err(PyBufferError::new_err(format!(
                "cannot export a {} array to DLPack device {d:?}{}",
                array.ctx.backend(),
                if copy == Some(false) {
                    " without a copy (copy=False)"
                } else {
                    ""
                }
            )));
        }
    };
    if to_host || copy == Some(true) {
        let target = if to_host {
            cpu_context(py)?
        } else {
            array.ctx.clone()
        };
        let mut copied = py
            .detach(|| {
                array.with_view(|v| match v.layout {
                    None => v.array.to_context(&target),
                    Some(_) => v.to_contiguous()?.to_context(&target),
                })
            })
            .map_err(err(py))?;
        let sync = if to_host {
            None
        } else {
            consumer_sync(py, &array.ctx, stream)?.0
        };
        let tensor = py
            .detach(|| copied.to_dlpack(sync.as_ref().map_or(DlpackSync::Host, DlpackSync::Stream)))
            .map_err(err(py))?;
        return into_capsule(py, tensor, versioned);
    }
    let (consumer, host) = consumer_sync(py, &array.ctx, stream)?;
    let tensor = py
        .detach(|| {
            let sync = match (&consumer, host) {
                (Some(s), _) => DlpackSync::Stream(s),
                (None, true) => DlpackSync::Host,
                (None, false) => DlpackSync::Unordered,
            };
            // A view exports its own shape, strides and first element.
            array.with_view_mut(|mut v| v.to_dlpack(sync))
        })
        .map_err(err(py))?;
    into_capsule(py, tensor, versioned)
}

/// `Array.data_ptr`.
pub(crate) fn data_ptr(array: &PyArray, py: Python<'_>) -> PyResult<u64> {
    py.detach(|| {
        let tensor = array.with_view_mut(|mut v| v.to_dlpack(DlpackSync::Unordered))?;
        Ok(tensor.view()?.data)
    })
    .map_err(err(py))
}

/// One context per DLPack device for imports that name none, made once.
fn context_for(py: Python<'_>, device: (i32, i32)) -> PyResult<Context> {
    static CONTEXTS: Mutex<Option<HashMap<(i32, i32), Context>>> = Mutex::new(None);
    let (backend, id) = match device {
        (ffi::kDLCPU | ffi::kDLCUDAHost | ffi::kDLCUDAManaged, _) => (Backend::Cpu, 0),
        (ffi::kDLCUDA, id) if id >= 0 => (Backend::Cuda, id as usize),
        (t, id) => {
            return Err(PyBufferError::new_err(format!(
                "unigpu has no backend for DLPack device ({t}, {id}) (CPU 1 and CUDA 2 are supported)"
            )));
        }
    };
    let key = (backend as i32, id as i32);
    let mut cache = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = cache.get_or_insert_with(HashMap::new).get(&key) {
        return Ok(ctx.clone());
    }
    let ctx = py.detach(|| Context::new(backend, id)).map_err(err(py))?;
    cache
        .get_or_insert_with(HashMap::new)
        .insert(key, ctx.clone());
    Ok(ctx)
}

fn cpu_context(py: Python<'_>) -> PyResult<Context> {
    context_for(py, (ffi::kDLCPU, 0))
}

/// Imports any object with `__dlpack__` (numpy, torch, CuPy, unigpu
/// arrays) as a `unigpu.Array` sharing its memory, without a copy. The
/// context is `context` when given, else one for the object's device (the
/// CPU backend for host memory, the cuda backend for a CUDA device). The
/// producer orders its work before the context's default stream. Any
/// shape is flattened; the object must be contiguous and writable.
#[pyfunction]
#[pyo3(signature = (obj, /, *, context=None))]
pub(crate) fn from_dlpack(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    context: Option<PyRef<'_, PyContext>>,
) -> PyResult<PyArray> {
    if !obj.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "{} does not support DLPack (no __dlpack__ method)",
            obj.get_type().name()?
        )));
    }
    let ctx = match context {
        Some(c) => c.ctx.clone(),
        None => {
            let device: (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
            context_for(py, device)?
        }
    };
    // The consumer's stream: the context's default stream on CUDA (a NULL
    // handle is the legacy default stream, which DLPack calls 1).
    let stream: Option<i64> = ctx
        .default_stream()
        .cuda_handle()
        .map(|h| if h == 0 { 1 } else { h as i64 });
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream)?;
    kwargs.set_item(
        "max_version",
        (ffi::DLPACK_MAJOR_VERSION, ffi::DLPACK_MINOR_VERSION),
    )?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        // Producers older than DLPack 1.0 take no `max_version`.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let tensor = from_capsule(&capsule)?;
    let array: AnyArray = py.detach(|| ctx.from_dlpack(tensor)).map_err(err(py))?;
    Ok(PyArray::new(array))
}
