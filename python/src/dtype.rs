//! Element types from Python (names, numpy dtypes, numpy scalar types,
//! ml_dtypes' bfloat16), numpy conversions, and Python numbers as typed
//! scalars.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyFloat, PyInt, PyString};
use unigpu::{DType, Scalar};

/// The names `dtype=` accepts besides numpy's, and unigpu's own names.
const ALIASES: &[(&str, DType)] = &[
    ("f32", DType::F32),
    ("float32", DType::F32),
    ("f64", DType::F64),
    ("float64", DType::F64),
    ("f16", DType::F16),
    ("float16", DType::F16),
    ("bf16", DType::BF16),
    ("bfloat16", DType::BF16),
    ("i32", DType::I32),
    ("int32", DType::I32),
    ("u32", DType::U32),
    ("uint32", DType::U32),
    ("i64", DType::I64),
    ("int64", DType::I64),
    ("u64", DType::U64),
    ("uint64", DType::U64),
    ("u8", DType::U8),
    ("uint8", DType::U8),
];

/// A dtype by unigpu's or numpy's name ("f32", "float32").
pub(crate) fn from_name(name: &str) -> Option<DType> {
    ALIASES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// numpy's name for the dtype an array of `d` comes back as: bf16 has no
/// numpy dtype, so it comes back as its uint16 bit patterns.
pub(crate) fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::F16 => "float16",
        DType::BF16 => "uint16",
        DType::I32 => "int32",
        DType::U32 => "uint32",
        DType::I64 => "int64",
        DType::U64 => "uint64",
        DType::U8 => "uint8",
    }
}

static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The numpy module, imported once.
pub(crate) fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))
        .map(|m| m.bind(py))
}

fn unsupported(obj: &Bound<'_, PyAny>) -> PyErr {
    let shown = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!(
        "unsupported dtype {shown}: unigpu arrays hold f32, f64, f16, bf16, i32, u32, i64, u64 and u8"
    ))
}

/// A dtype from a name (`"f32"`, `"float32"`, `"bf16"`), a numpy dtype or
/// scalar type (`numpy.float32`), or ml_dtypes' `bfloat16`.
pub(crate) fn parse(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s.to_cow()?;
        if let Some((_, d)) = ALIASES.iter().find(|(n, _)| *n == s.as_ref()) {
            return Ok(*d);
        }
    }
    let py = obj.py();
    let np_dtype = numpy(py)?
        .getattr("dtype")?
        .call1((obj,))
        .map_err(|_| unsupported(obj))?;
    from_numpy_dtype(&np_dtype).ok_or_else(|| unsupported(obj))
}

/// The unigpu dtype of a numpy dtype object, if it is one of the nine in
/// native byte order (ml_dtypes' bfloat16 counts as bf16).
pub(crate) fn from_numpy_dtype(np_dtype: &Bound<'_, PyAny>) -> Option<DType> {
    let name: String = np_dtype.getattr("name").ok()?.extract().ok()?;
    let native: bool = np_dtype.getattr("isnative").ok()?.extract().ok()?;
    if !native {
        return None;
    }
    ALIASES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// `unigpu.dtypes()`: the nine dtype names.
#[pyfunction]
pub(crate) fn dtypes() -> Vec<&'static str> {
    DType::ALL.iter().map(|d| d.name()).collect()
}

/// A numpy array of `d` over `bytes` (a new, writable array that owns its
/// memory through a bytearray). `fill` writes the bytes.
pub(crate) fn numpy_from<'py>(
    py: Python<'py>,
    d: DType,
    nbytes: usize,
    fill: impl FnOnce(&mut [u8]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyAny>> {
    let buf = PyByteArray::new_with(py, nbytes, fill)?;
    numpy(py)?
        .getattr("frombuffer")?
        .call1((buf, numpy_name(d)))
}

/// The host data of `obj` (anything `numpy.asarray` takes) as native-order
/// bytes of `target` (or of its own dtype when `target` is `None`), flattened
/// in C order, with the dtype they hold.
///
/// bf16: ml_dtypes' bfloat16 and uint16 arrays are taken as bit patterns;
/// any other array is converted to float32 here and rounded to bf16 (to
/// nearest even) by [`f32_bytes_to_bf16`].
pub(crate) struct HostData<'py> {
    pub dtype: DType,
    pub bytes: Bound<'py, pyo3::types::PyBytes>,
    /// The bytes hold f32 values to be rounded to bf16.
    pub f32_to_bf16: bool,
    /// The data's numpy shape (the bytes are in C order of it).
    pub shape: Vec<usize>,
}

/// Refuses to convert `arr` to integer dtype `t` when a value does not fit:
/// numpy's `astype` wraps (300 → 44 in u8, -1 → 255) and turns NaN and
/// infinities into arbitrary integers, silently (issue 25). An
/// `OverflowError` names the value and the dtype, as a scalar out of
/// range does. Float dtypes take anything (rounded, or inf beyond range).
fn check_fits(arr: &Bound<'_, PyAny>, t: DType) -> PyResult<()> {
    if !t.is_integer() || arr.getattr("size")?.extract::<usize>()? == 0 {
        return Ok(());
    }
    let py = arr.py();
    let info = numpy(py)?.getattr("iinfo")?.call1((numpy_name(t),))?;
    let (min, max) = (info.getattr("min")?, info.getattr("max")?);
    // The extremes as Python numbers, compared exactly with the bounds
    // (a numpy comparison of a float64 with 2^64 - 1 would round it).
    for (value, fits) in [
        (arr.call_method0("min")?.call_method0("item")?, "ge"),
        (arr.call_method0("max")?.call_method0("item")?, "le"),
    ] {
        let bound = if fits == "ge" { &min } else { &max };
        // NaN compares false with everything, so it fails here too.
        let ok = if fits == "ge" {
            value.ge(bound)?
        } else {
            value.le(bound)?
        };
        if !ok {
            return Err(PyOverflowError::new_err(format!(
                "{} does not fit in {t} (its range is {}..={}); convert it explicitly \
                 (numpy's astype wraps) if that is what you want",
                value.repr()?,
                min,
                max
            )));
        }
    }
    Ok(())
}

pub(crate) fn host_data<'py>(
    obj: &Bound<'py, PyAny>,
    target: Option<DType>,
) -> PyResult<HostData<'py>> {
    let py = obj.py();
    let np = numpy(py)?;
    let arr = match target {
        // Python numbers (a list, a tuple) into an integer dtype: numpy
        // converts them itself, exactly, and refuses one out of range
        // (as asarray(obj) would not: it makes [0, 2**64 - 1] float64,
        // rounding the value before any check could see it).
        Some(t) if t.is_integer() && !obj.is_instance(&np.getattr("ndarray")?)? => np
            .getattr("asarray")?
            .call1((obj, numpy_name(t)))
            .map_err(|e| {
                if e.is_instance_of::<PyOverflowError>(py)
                    || e.is_instance_of::<pyo3::exceptions::PyValueError>(py)
                {
                    PyOverflowError::new_err(format!("a value does not fit in {t}: {e}"))
                } else {
                    e
                }
            })?,
        _ => np.getattr("asarray")?.call1((obj,))?,
    };
    let src_dtype = arr.getattr("dtype")?;
    let src = from_numpy_dtype(&src_dtype);
    let (dtype, convert_to, f32_to_bf16) = match (target, src) {
        (None, Some(s)) => (s, None, false),
        (None, None) => return Err(unsupported(&src_dtype)),
        (Some(t), Some(s)) if t == s => (t, None, false),
        (Some(DType::BF16), _) => {
            let name: String = src_dtype.getattr("name")?.extract()?;
            if name == "uint16" {
                (DType::BF16, None, false)
            } else {
                (DType::BF16, Some("float32"), true)
            }
        }
        (Some(t), _) => (t, Some(numpy_name(t)), false),
    };
    if let (Some(_), Some(t)) = (convert_to, target) {
        check_fits(&arr, t)?;
    }
    let arr = match convert_to {
        Some(name) => arr.call_method1("astype", (name,))?,
        None => arr,
    };
    // tobytes() is C order whatever the strides, and native order because
    // the dtype is native (from_numpy_dtype checked, astype made it so).
    let bytes = arr
        .call_method1("tobytes", ("C",))?
        .cast_into::<pyo3::types::PyBytes>()?;
    let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
    Ok(HostData {
        dtype,
        bytes,
        f32_to_bf16,
        shape,
    })
}

/// f32 values (native-order bytes) rounded to bf16, as bf16 bytes.
pub(crate) fn f32_bytes_to_bf16(bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks_exact(4)
        .flat_map(|c| {
            let v = f32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
            half::bf16::from_f32(v).to_bits().to_ne_bytes()
        })
        .collect()
}

static GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// True for numpy scalars (`numpy.float32(2.0)`), which keep their type.
fn is_numpy_scalar(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = obj.py();
    let generic =
        GENERIC.get_or_try_init(py, || numpy(py)?.getattr("generic").map(Bound::unbind))?;
    obj.is_instance(generic.bind(py))
}

fn int_scalar(d: DType, obj: &Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<Scalar> {
    // __index__ semantics: ints, bools and numpy integers; floats refused.
    let v: i128 = match obj.extract::<i64>() {
        Ok(v) => v.into(),
        Err(e) => match obj.extract::<u64>() {
            Ok(v) => v.into(),
            Err(_) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                return Err(PyOverflowError::new_err(format!(
                    "{}: {} does not fit in {d}",
                    what(),
                    obj.repr()?
                )));
            }
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "{}: expected an integer for {d}, got {}",
                    what(),
                    obj.get_type().name()?
                )));
            }
        },
    };
    let out = match d {
        DType::I32 => i32::try_from(v).ok().map(Scalar::new),
        DType::U32 => u32::try_from(v).ok().map(Scalar::new),
        DType::I64 => i64::try_from(v).ok().map(Scalar::new),
        DType::U64 => u64::try_from(v).ok().map(Scalar::new),
        DType::U8 => u8::try_from(v).ok().map(Scalar::new),
        // Integers for float dtypes: rounded like any float.
        _ => Some(Scalar::from_f64(d, v as f64)),
    };
    out.ok_or_else(|| PyOverflowError::new_err(format!("{}: {v} does not fit in {d}", what())))
}

/// `obj` (a Python or numpy number) as a scalar of `d`. Integer dtypes
/// take integers only (exact, range-checked); float dtypes take any real
/// number, rounded to nearest.
pub(crate) fn scalar_as(
    d: DType,
    obj: &Bound<'_, PyAny>,
    what: &dyn Fn() -> String,
) -> PyResult<Scalar> {
    match d {
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            let v: f64 = obj.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{}: expected a real number for {d}, got {}",
                    what(),
                    obj.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            Ok(Scalar::from_f64(d, v))
        }
        _ => int_scalar(d, obj, what),
    }
}

/// A kernel argument for a parameter known only by its width (`bytes`;
/// precompiled code's `Integer` and `Bytes` kinds): a numpy scalar keeps
/// its dtype; a Python float is the float of that width (f16, f32, f64); a
/// Python int the integer of that width, signed when negative (u8, i32 or
/// u32, i64 or u64). Anything else as [`scalar_untyped`].
pub(crate) fn scalar_sized(
    bytes: usize,
    obj: &Bound<'_, PyAny>,
    what: &dyn Fn() -> String,
) -> PyResult<Scalar> {
    if obj.is_instance_of::<PyBool>() || is_numpy_scalar(obj)? {
        return scalar_untyped(obj, what);
    }
    if obj.is_instance_of::<PyFloat>() {
        let d = match bytes {
            2 => DType::F16,
            4 => DType::F32,
            8 => DType::F64,
            _ => return scalar_untyped(obj, what),
        };
        return scalar_as(d, obj, what);
    }
    if obj.is_instance_of::<PyInt>() {
        let negative = obj.lt(0)?;
        let d = match (bytes, negative) {
            (1, false) => DType::U8,
            (4, true) => DType::I32,
            (4, false) => DType::U32,
            (8, true) => DType::I64,
            (8, false) => DType::U64,
            _ => return scalar_untyped(obj, what),
        };
        return int_scalar(d, obj, what);
    }
    scalar_untyped(obj, what)
}

/// A kernel argument with no declared type: numpy scalars keep their
/// dtype; Python numbers become what numpy would make of them (int → i64,
/// float → f64, bool → u8).
pub(crate) fn scalar_untyped(
    obj: &Bound<'_, PyAny>,
    what: &dyn Fn() -> String,
) -> PyResult<Scalar> {
    if obj.is_exact_instance_of::<PyFloat>() {
        return Ok(Scalar::new(obj.extract::<f64>()?));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Scalar::new(u8::from(obj.extract::<bool>()?)));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return int_scalar(DType::I64, obj, what);
    }
    if is_numpy_scalar(obj)? {
        let d = parse(&obj.getattr("dtype")?)?;
        if d == DType::BF16 {
            // ml_dtypes bfloat16 scalar: its value as a float.
            return scalar_as(d, &obj.call_method0("__float__")?, what);
        }
        return scalar_as(d, &obj.call_method0("item")?, what);
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Scalar::new(obj.extract::<f64>()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return int_scalar(DType::I64, obj, what);
    }
    Err(PyTypeError::new_err(format!(
        "{}: expected a unigpu.Array or a number, got {}",
        what(),
        obj.get_type().name()?
    )))
}

/// A scalar as the Python number it holds: float for float dtypes, int
/// (exact) for integer dtypes.
pub(crate) fn scalar_to_py<'py>(py: Python<'py>, s: Scalar) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s.dtype() {
        DType::I64 => s
            .get::<i64>()
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        DType::U64 => s
            .get::<u64>()
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        DType::I32 | DType::U32 | DType::U8 => (s.to_f64() as i64).into_pyobject(py)?.into_any(),
        _ => s.to_f64().into_pyobject(py)?.into_any(),
    })
}
