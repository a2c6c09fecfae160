//! `unigpu.Error` → Python exceptions: one base class, `UnigpuError`, and a
//! subclass per facade variant. The message is the Rust `Display` message;
//! the variant's fields are attributes of the exception.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// (Python name, docstring) of every exception class; index 0 is the base.
const CLASSES: &[(&str, &str)] = &[
    (
        "UnigpuError",
        "Base class of every error unigpu raises for a failed GPU or backend call.",
    ),
    (
        "OutOfMemoryError",
        "The device could not hold an allocation (attributes `requested`, `free`, in bytes). The context stays usable.",
    ),
    (
        "InvalidDeviceError",
        "A device id past the end of the backend's device list (attributes `backend`, `asked`, `available`).",
    ),
    (
        "BackendUnavailableError",
        "The backend cannot run here (attributes `backend`, `reason`).",
    ),
    (
        "CompileError",
        "Kernel source that did not compile (attribute `log`, the compiler's log).",
    ),
    (
        "KernelArgsError",
        "Launch arguments that do not fit the kernel (attribute `kernel`).",
    ),
    (
        "UnsupportedError",
        "The backend cannot do this, e.g. a kernel without a CPU implementation on the CPU backend (attribute `backend`).",
    ),
    (
        "SizeMismatchError",
        "Operands of different lengths (attributes `expected`, `actual`).",
    ),
    (
        "DTypeMismatchError",
        "An operand of another element type than the call needs (attributes `expected`, `actual`).",
    ),
    (
        "ContextMismatchError",
        "Arrays, streams or events of different contexts or backends mixed in one call.",
    ),
    (
        "ConfigError",
        "A bad unigpu.toml or UNIGPU_* environment variable.",
    ),
    (
        "StreamWorkError",
        "Work on a stream failed (a failing kernel CPU implementation, a host function); raised by the next sync.",
    ),
    ("TorchError", "A torch error not covered by another class."),
    (
        "DriverError",
        "A CUDA driver status not covered by another class (attributes `call`, `code`, `name`).",
    ),
    (
        "DlpackError",
        "A DLPack tensor that cannot be imported, or an array that cannot be exported as asked.",
    ),
    (
        "ImageError",
        "Precompiled code (Module.load) that is not what its kind says, is truncated, or has no code this device runs (attribute `format`).",
    ),
    (
        "CollectiveError",
        "A collective or a communicator wait that failed in the library that runs it (NCCL) or passed its deadline; the communicator was aborted.",
    ),
];

/// The classes, created once when the module is imported.
static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn types(py: Python<'_>) -> PyResult<&Vec<Py<PyType>>> {
    TYPES.get_or_try_init(py, || {
        let mut out: Vec<Py<PyType>> = Vec::with_capacity(CLASSES.len());
        for (i, (name, doc)) in CLASSES.iter().enumerate() {
            let base = match out.first() {
                Some(base) if i > 0 => base.bind(py).clone(),
                _ => py.get_type::<PyException>(),
            };
            let full = std::ffi::CString::new(format!("unigpu.{name}"))
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
            let doc = std::ffi::CString::new(*doc)
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
            out.push(PyErr::new_type(
                py,
                &full,
                Some(&doc),
                Some(&base),
                // No dict: pyo3 0.30.1 drops the one it is given before
                // the call that uses it. `unigpu.X` sets `__module__`.
                None,
            )?);
        }
        Ok(out)
    })
}

/// Adds the classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for ((name, _), ty) in CLASSES.iter().zip(types(py)?) {
        m.add(*name, ty.bind(py))?;
    }
    Ok(())
}

/// The class (index into [`CLASSES`]) of each error kind: a table over
/// the kinds the bindings share (`unigpu::binding::ErrorKind`; the C
/// status codes are the other table). `InvalidArgument` (a refusal of
/// the binding layer) is a `ValueError` instead, see [`call_err`].
fn class_of(e: &unigpu::Error) -> usize {
    use unigpu::binding::ErrorKind as K;
    match K::of(e) {
        K::OutOfMemory => 1,
        K::InvalidDevice => 2,
        K::BackendUnavailable => 3,
        K::Compile => 4,
        K::KernelArgs => 5,
        K::Unsupported => 6,
        K::SizeMismatch => 7,
        K::DTypeMismatch => 8,
        K::ContextMismatch => 9,
        K::Config => 10,
        K::StreamWork => 11,
        K::Torch => 12,
        K::Driver => 13,
        K::Dlpack => 14,
        K::Image => 15,
        K::Collective => 16,
        _ => 0,
    }
}

fn set_attrs(py: Python<'_>, value: &Bound<'_, PyAny>, e: &unigpu::Error) -> PyResult<()> {
    use unigpu::Error as E;
    let set = |k: &str, v: Bound<'_, PyAny>| value.setattr(k, v);
    if let Some(kernel) = e.kernel() {
        set("kernel", kernel.into_pyobject(py)?.into_any())?;
    }
    match e.root() {
        E::OutOfMemory { requested, free } => {
            set("requested", requested.into_pyobject(py)?.into_any())?;
            set("free", free.into_pyobject(py)?.into_any())?;
        }
        E::InvalidDevice {
            backend,
            asked,
            available,
        } => {
            set("backend", backend.name().into_pyobject(py)?.into_any())?;
            set("asked", asked.into_pyobject(py)?.into_any())?;
            set("available", available.into_pyobject(py)?.into_any())?;
        }
        E::BackendUnavailable { backend, reason } => {
            set("backend", backend.name().into_pyobject(py)?.into_any())?;
            set("reason", reason.into_pyobject(py)?.into_any())?;
        }
        E::Compile { log } => set("log", log.into_pyobject(py)?.into_any())?,
        E::Unsupported { backend, .. } => {
            set("backend", backend.name().into_pyobject(py)?.into_any())?
        }
        E::Image { format, .. } => set("format", format.to_string().into_pyobject(py)?.into_any())?,
        E::SizeMismatch {
            expected, actual, ..
        } => {
            set("expected", expected.into_pyobject(py)?.into_any())?;
            set("actual", actual.into_pyobject(py)?.into_any())?;
        }
        E::DTypeMismatch {
            expected, actual, ..
        } => {
            set("expected", expected.name().into_pyobject(py)?.into_any())?;
            set("actual", actual.name().into_pyobject(py)?.into_any())?;
        }
        E::Driver {
            backend,
            call,
            code,
            name,
            ..
        } => {
            set("backend", backend.name().into_pyobject(py)?.into_any())?;
            set("call", call.into_pyobject(py)?.into_any())?;
            set("code", code.into_pyobject(py)?.into_any())?;
            set("name", name.into_pyobject(py)?.into_any())?;
        }
        _ => {}
    }
    Ok(())
}

/// The Python exception for a facade error.
pub(crate) fn to_py(py: Python<'_>, e: unigpu::Error) -> PyErr {
    let message = e.to_string();
    let Ok(types) = types(py) else {
        return PyException::new_err(message);
    };
    let ty = types
        .get(class_of(&e))
        .or(types.first())
        .map(|t| t.bind(py).clone());
    let Some(ty) = ty else {
        return PyException::new_err(message);
    };
    let err = PyErr::from_type(ty, message);
    // Attributes are a convenience: the message alone already says it all.
    let _ = set_attrs(py, err.value(py).as_any(), &e);
    err
}

/// `.map_err(err(py))` on a facade result.
pub(crate) fn err(py: Python<'_>) -> impl Fn(unigpu::Error) -> PyErr + '_ {
    move |e| to_py(py, e)
}

/// The `KernelArgs` error for a launch argument the binding rejects before
/// calling the facade (same class and message shape as the facade's).
pub(crate) fn kernel_args(kernel: &str, message: String) -> unigpu::Error {
    unigpu::Error::KernelArgs {
        kernel: kernel.to_string(),
        message,
    }
}

/// `.map_err(call_err(py))` on a result of the shared binding layer: its
/// refusals (`ErrorKind::InvalidArgument`, C's `UG_INVALID_ARGUMENT`) are
/// `ValueError`s with the same message as C's, facade errors as [`err`].
pub(crate) fn call_err(py: Python<'_>) -> impl Fn(unigpu::binding::CallError) -> PyErr + '_ {
    move |e| match e {
        unigpu::binding::CallError::Refused { message } => {
            pyo3::exceptions::PyValueError::new_err(message)
        }
        unigpu::binding::CallError::Failed(e) => to_py(py, e),
    }
}
