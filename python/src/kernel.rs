//! `unigpu.Module`, `unigpu.Kernel`, launches, and kernels whose CPU
//! implementation is a Python function.

use std::path::PathBuf;
use std::sync::RwLock;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyTuple};
use unigpu::binding::{self, BoundModule, ImageKind, Operand, View};
use unigpu::kernel::{Origin, ParamKind};
use unigpu::{
    AnyArray, Arg, CompileOptions, Context, CpuArgs, DType, Element, Grid, Kernel, Scalar, Stream,
};

use crate::array::PyArray;
use crate::context::PyContext;
use crate::dtype;
use crate::errors::{call_err, err, kernel_args};
use crate::pending;

/// Compiled kernels (on the CPU backend: the kernels the source declares),
/// or precompiled code loaded with `Module.load`.
#[pyclass(frozen, name = "Module", module = "unigpu")]
#[derive(Debug)]
pub struct PyModule_ {
    module: BoundModule,
}

#[pymethods]
impl PyModule_ {
    /// Loads precompiled code on `ctx`'s device: `kind` is "ptx", "cubin",
    /// "fatbin" (cuda and torch contexts) or "spirv" (vulkan); `data` the
    /// code (bytes, or str for PTX). `declare` maps kernel names to their
    /// parameters (`["f32", "const f32*", "f32*", "u32"]`, or by width:
    /// `"32-bit integer"`, `"8-byte value"`), checked against the code
    /// now; undeclared kernels take what the code says (PTX's lists, a
    /// CUBIN's parameter sizes, a shader's bindings). CUDA code on another
    /// backend, or SPIR-V off vulkan, raises `UnsupportedError`; code that
    /// is not what `kind` says raises `ImageError` (CUDA) or `CompileError`
    /// (SPIR-V).
    #[staticmethod]
    #[pyo3(signature = (ctx, data, kind, declare=None))]
    fn load(
        py: Python<'_>,
        ctx: &Bound<'_, PyContext>,
        data: &Bound<'_, PyAny>,
        kind: &str,
        declare: Option<std::collections::BTreeMap<String, Vec<String>>>,
    ) -> PyResult<PyModule_> {
        let kind = ImageKind::from_name(kind).ok_or_else(|| {
            PyValueError::new_err(format!(
                "Module.load: kind {kind:?} is not one of \"ptx\", \"cubin\", \"fatbin\", \"spirv\""
            ))
        })?;
        let bytes: Vec<u8> = if data.is_instance_of::<pyo3::types::PyString>() {
            data.extract::<String>()?.into_bytes()
        } else if let Ok(b) = data.cast::<pyo3::types::PyBytes>() {
            b.as_bytes().to_vec()
        } else if let Ok(b) = data.cast::<PyByteArray>() {
            b.to_vec()
        } else {
            return Err(PyTypeError::new_err(format!(
                "Module.load: data must be bytes, bytearray or str, got {}",
                data.get_type().name()?
            )));
        };
        let mut declared = Vec::new();
        for (name, params) in declare.unwrap_or_default() {
            let params = params
                .iter()
                .map(|p| parse_param(p))
                .collect::<PyResult<Vec<_>>>()?;
            declared.push((name, params));
        }
        let ctx = ctx.get().ctx.clone();
        py.detach(|| binding::load_module(&ctx, kind, &bytes, declared))
            .map(|module| PyModule_ { module })
            .map_err(err(py))
    }

    /// The kernel called `name`: its source name; in precompiled CUDA code
    /// its symbol (the mangled name unless `extern "C"`); in SPIR-V its
    /// entry point.
    fn kernel(&self, py: Python<'_>, name: &str) -> PyResult<PyKernel> {
        self.module
            .kernel(name)
            .map(|kernel| PyKernel {
                kernel,
                python_cpu: false,
            })
            .map_err(err(py))
    }

    /// The `__global__` functions found in the source; for precompiled
    /// code, PTX's kernels and the declared ones.
    #[getter]
    fn kernel_names(&self) -> Vec<String> {
        self.module
            .kernel_names()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// Where the machine code came from: "compiled", "memory_cache",
    /// "disk_cache", "not_compiled" (CPU backend), or "precompiled"
    /// (`Module.load`).
    #[getter]
    fn origin(&self) -> &'static str {
        match self.module.origin() {
            Some(Origin::Compiled) => "compiled",
            Some(Origin::MemoryCache) => "memory_cache",
            Some(Origin::DiskCache) => "disk_cache",
            Some(Origin::NotCompiled) => "not_compiled",
            Some(Origin::Precompiled(_)) | None => "precompiled",
        }
    }

    /// Compiler warnings, if any.
    #[getter]
    fn log(&self) -> &str {
        self.module.log()
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Module(kernels={:?}, origin='{}')",
            self.module.kernel_names(),
            self.origin()
        )
    }
}

/// One kernel, ready to launch with `ctx.launch` or `stream.launch`.
#[pyclass(frozen, name = "Kernel", module = "unigpu")]
#[derive(Debug)]
pub struct PyKernel {
    pub(crate) kernel: Kernel,
    /// Its CPU implementation is a Python function (which needs the GIL on
    /// the stream's worker thread).
    pub(crate) python_cpu: bool,
}

#[pymethods]
impl PyKernel {
    /// The same kernel with `fn` as its CPU implementation, used on the CPU
    /// backend. `fn(*args)` gets the launch's arguments in order: numbers
    /// as Python ints/floats, arrays as numpy arrays (bf16 as uint16 bits);
    /// what it writes into the arrays the kernel writes is copied back.
    /// It runs on the stream's worker thread, in stream order.
    #[pyo3(name = "with_cpu")]
    fn with_cpu_impl(&self, f: &Bound<'_, PyAny>) -> PyResult<PyKernel> {
        let f = callable(f)?;
        Ok(PyKernel {
            kernel: self.kernel.clone().with_cpu(python_impl(f)),
            python_cpu: true,
        })
    }

    /// A kernel with only a Python CPU implementation (no CUDA code).
    /// `params`, when given, declares the parameters like a CUDA signature
    /// and is checked at every launch: e.g. `["f32", "const f32*", "f32*",
    /// "u32"]` (`T*` is written, `const T*` only read, `void*` any dtype).
    #[staticmethod]
    #[pyo3(signature = (name, f, params=None))]
    fn cpu_only(
        name: &str,
        f: &Bound<'_, PyAny>,
        params: Option<Vec<String>>,
    ) -> PyResult<PyKernel> {
        let f = callable(f)?;
        let params = params
            .map(|p| {
                p.iter()
                    .map(|s| parse_param(s))
                    .collect::<PyResult<Vec<_>>>()
            })
            .transpose()?;
        Ok(PyKernel {
            kernel: Kernel::cpu_only(name, params, python_impl(f)),
            python_cpu: true,
        })
    }

    #[getter]
    fn name(&self) -> &str {
        self.kernel.name()
    }

    /// The declared parameter types (`"f32"`, `"const f32*"`, `"f32*"`,
    /// `"void*"`), or None when the declaration could not be read.
    #[getter]
    fn params(&self) -> Option<Vec<String>> {
        self.kernel
            .params()
            .map(|p| p.iter().map(ToString::to_string).collect())
    }

    #[getter]
    fn has_cpu_impl(&self) -> bool {
        self.kernel.has_cpu_impl()
    }

    fn __repr__(&self) -> String {
        let params = match self.params() {
            Some(p) => format!("{p:?}"),
            None => "None".into(),
        };
        let cpu = if self.kernel.has_cpu_impl() {
            "True"
        } else {
            "False"
        };
        format!(
            "unigpu.Kernel(name='{}', params={params}, has_cpu_impl={cpu})",
            self.kernel.name()
        )
    }
}

fn callable(f: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if !f.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "a kernel's CPU implementation must be callable, got {}",
            f.get_type().name()?
        )));
    }
    Ok(f.clone().unbind())
}

/// `"f32"`, `"f32*"`, `"const f32*"`, `"void*"`, `"const void*"`, and
/// the width-only kinds of precompiled code as `Kernel.params` writes them
/// (`"32-bit integer"`, `"64-bit integer or pointer"`, `"4-byte value"`,
/// `"8-byte value or pointer"`).
fn parse_param(s: &str) -> PyResult<ParamKind> {
    let t = s.trim();
    let bad = || {
        PyValueError::new_err(format!(
            "bad kernel parameter {s:?}: expected a dtype (\"f32\"), a written pointer (\"f32*\"), a read-only pointer (\"const f32*\"), \"void*\", \"N-bit integer\" or \"N-byte value\""
        ))
    };
    let width = t.strip_suffix(" or pointer").unwrap_or(t);
    if let Some(bits) = width.strip_suffix("-bit integer") {
        return match bits.parse::<usize>() {
            Ok(b @ (8 | 16 | 32 | 64)) => Ok(ParamKind::Integer { bytes: b / 8 }),
            _ => Err(bad()),
        };
    }
    if let Some(bytes) = width.strip_suffix("-byte value") {
        return match bytes.parse::<usize>() {
            Ok(b @ 1..=4096) => Ok(ParamKind::Bytes { bytes: b }),
            _ => Err(bad()),
        };
    }
    let (writable, t) = match t.strip_prefix("const ") {
        Some(rest) => (false, rest.trim()),
        None => (true, t),
    };
    match t.strip_suffix('*') {
        Some(name) => {
            let name = name.trim();
            let dtype = match name {
                "void" => None,
                _ => Some(dtype::from_name(name).ok_or_else(bad)?),
            };
            Ok(ParamKind::Pointer { dtype, writable })
        }
        None if writable => dtype::from_name(t).map(ParamKind::Scalar).ok_or_else(bad),
        None => Err(bad()),
    }
}

/// `unigpu.blocks_for(n, block=256)`: blocks for one thread per element
/// (at least 1). A block of 0 threads, or more blocks than a launch takes
/// (2^31 - 1), is a `ValueError` rather than a grid that covers something
/// else (the Rust `Grid::for_elems_with_block` takes 0 as 1 and caps the
/// count).
#[pyfunction]
#[pyo3(signature = (n, block=256))]
pub(crate) fn blocks_for(n: usize, block: u32) -> PyResult<u32> {
    if block == 0 {
        return Err(PyValueError::new_err(
            "blocks_for: block must be at least 1 thread, got 0",
        ));
    }
    let blocks = n.div_ceil(block as usize).max(1);
    if blocks > i32::MAX as usize {
        return Err(PyValueError::new_err(format!(
            "blocks_for: {n} elements in blocks of {block} need {blocks} blocks, \
             more than a launch takes ({})",
            i32::MAX
        )));
    }
    Ok(Grid::for_elems_with_block(n, block).grid.0)
}

pub(crate) fn compile(
    py: Python<'_>,
    ctx: &Context,
    source: &str,
    include: Option<Vec<PathBuf>>,
    define: Option<std::collections::BTreeMap<String, Option<String>>>,
    arch: Option<(i32, i32)>,
    options: Option<Vec<String>>,
) -> PyResult<PyModule_> {
    let mut o = CompileOptions::default();
    for path in include.unwrap_or_default() {
        o = o.include(path);
    }
    for (name, value) in define.unwrap_or_default() {
        o = o.define(&name, value.as_deref());
    }
    if let Some((major, minor)) = arch {
        o = o.arch(major, minor);
    }
    for option in options.unwrap_or_default() {
        o = o.option(&option);
    }
    py.detach(|| ctx.compile_with(source, &o))
        .map(|module| PyModule_ {
            module: module.into(),
        })
        .map_err(err(py))
}

/// A grid or block size: an int or a tuple of 1 to 3 ints, each >= 1.
fn dims(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(u32, u32, u32)> {
    let v: Vec<u32> = match obj.extract::<u32>() {
        Ok(x) => vec![x],
        Err(_) => obj.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be an int or a tuple of 1 to 3 ints in 1..2**32"
            ))
        })?,
    };
    if v.is_empty() || v.len() > 3 || v.contains(&0) {
        return Err(PyValueError::new_err(format!(
            "{what} must be 1 to 3 dimensions, each >= 1; got {v:?}"
        )));
    }
    Ok((
        v[0],
        v.get(1).copied().unwrap_or(1),
        v.get(2).copied().unwrap_or(1),
    ))
}

/// One launch argument, checked and converted with the GIL held.
enum LaunchArg {
    Scalar(Scalar),
    /// The next of the call's array uses.
    Array,
}

/// Launches `k` on `stream` of `ctx`. Arrays are written when the kernel's
/// declaration says so (`T*`) and read when it says `const T*`; without a
/// declaration every array counts as written.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    py: Python<'_>,
    ctx: &Context,
    k: &PyKernel,
    stream: &Stream,
    grid: &Bound<'_, PyAny>,
    block: &Bound<'_, PyAny>,
    args: &Bound<'_, PyAny>,
    shared_mem: u32,
) -> PyResult<()> {
    let grid = Grid::new(dims(grid, "grid")?, dims(block, "block")?).with_shared_mem(shared_mem);
    let kernel = &k.kernel;
    let params = kernel.params();
    let items: Vec<Bound<'_, PyAny>> = args
        .try_iter()
        .map_err(|_| PyTypeError::new_err("args must be a list or tuple of Arrays and numbers"))?
        .collect::<PyResult<_>>()?;
    let mut list = Vec::with_capacity(items.len());
    let mut uses: Vec<(&RwLock<AnyArray>, bool)> = Vec::new();
    let mut names = Vec::new();
    for (i, obj) in items.iter().enumerate() {
        let declared = params.and_then(|p| p.get(i));
        if let Ok(a) = obj.cast::<PyArray>() {
            let a = a.get();
            if a.view {
                // A kernel indexes the whole buffer from its start.
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "kernel `{}` argument {i} is a view (shape {:?}): kernels take whole arrays; pass a.copy()",
                    kernel.name(),
                    a.layout.shape()
                )));
            }
            let writes = !matches!(
                declared,
                Some(ParamKind::Pointer {
                    writable: false,
                    ..
                })
            );
            uses.push((a.lock(), writes));
            names.push(format!("args[{i}]"));
            list.push(LaunchArg::Array);
        } else {
            let what = || format!("kernel `{}` argument {i}", kernel.name());
            let s = match declared {
                Some(ParamKind::Scalar(d)) => dtype::scalar_as(*d, obj, &what)?,
                Some(ParamKind::Integer { bytes } | ParamKind::Bytes { bytes }) => {
                    dtype::scalar_sized(*bytes, obj, &what)?
                }
                _ => dtype::scalar_untyped(obj, &what)?,
            };
            list.push(LaunchArg::Scalar(s));
        }
    }
    // The bindings' one rule (unigpu::binding, as in C): an array both
    // read (`const T*`) and written (`T*`) is read from a copy taken
    // first; one written twice is refused (ValueError).
    let operands: Vec<Operand<'_>> = uses
        .iter()
        .zip(&names)
        .map(|(&(a, writes), name)| {
            if writes {
                Operand::write(a, name)
            } else {
                Operand::read(a, name)
            }
        })
        .collect();
    let python_work = k.python_cpu && ctx.backend() == unigpu::Backend::Cpu;
    py.detach(|| {
        binding::with_arrays(&operands, |views| {
            let mut views = views.into_iter();
            let mut out = Vec::with_capacity(list.len());
            for a in &list {
                match a {
                    LaunchArg::Scalar(s) => out.push(Arg::Scalar(*s)),
                    LaunchArg::Array => match views.next() {
                        Some(View::Read(r)) => out.push(r.as_arg()),
                        Some(View::Write(w)) => out.push(w.as_arg_mut()),
                        None => {
                            return Err(kernel_args(
                                kernel.name(),
                                "internal: lost an array".into(),
                            ));
                        }
                    },
                }
            }
            stream.launch(kernel, grid, out)
        })?;
        if python_work {
            pending::note(stream);
        }
        Ok(())
    })
    .map_err(call_err(py))
}

/// The CPU implementation that calls the Python function `f`.
fn python_impl(f: Py<PyAny>) -> impl Fn(&CpuArgs) -> unigpu::Result<()> + Send + Sync + 'static {
    move |args: &CpuArgs| {
        Python::try_attach(|py| call_python(py, &f, args)).unwrap_or_else(|| {
            Err(unigpu::Error::StreamWork {
                message: "the Python interpreter is not running (shutting down?)".into(),
            })
        })
    }
}

/// A launch argument as the Python function sees it.
enum CpuValue<'py> {
    Scalar(Scalar),
    Array {
        bytes: Bound<'py, PyByteArray>,
        dtype: DType,
        writable: bool,
    },
}

fn scalar_arg<T: Element>(args: &CpuArgs, i: usize) -> Option<Scalar> {
    args.scalar::<T>(i).ok().map(Scalar::new)
}

/// Argument `i` as a copy of its elements, if it is an array of `T`s.
fn array_arg<'py, T: Element>(py: Python<'py>, args: &CpuArgs, i: usize) -> Option<CpuValue<'py>> {
    let bytes = {
        let data = args.input::<T>(i).ok()?;
        PyByteArray::new(py, bytemuck::cast_slice::<T, u8>(&data))
    };
    // `output` refuses arrays passed read-only without locking them.
    let writable = args.output::<T>(i).is_ok();
    Some(CpuValue::Array {
        bytes,
        dtype: T::DTYPE,
        writable,
    })
}

fn write_back<T: Element>(args: &CpuArgs, i: usize, bytes: &[u8]) -> unigpu::Result<()> {
    let mut data = args.output::<T>(i)?;
    let dst = bytemuck::cast_slice_mut::<T, u8>(&mut data);
    if dst.len() != bytes.len() {
        return Err(unigpu::Error::SizeMismatch {
            what: "Python CPU implementation (array written back, bytes)",
            expected: dst.len(),
            actual: bytes.len(),
        });
    }
    dst.copy_from_slice(bytes);
    Ok(())
}

/// Argument `i` of a CPU launch, whatever its type. `CpuArgs` is typed, so
/// each element type is tried in turn.
fn cpu_value<'py>(py: Python<'py>, args: &CpuArgs, i: usize) -> Option<CpuValue<'py>> {
    macro_rules! each {
        ($($t:ty),*) => {$(
            if let Some(s) = scalar_arg::<$t>(args, i) {
                return Some(CpuValue::Scalar(s));
            }
            if let Some(a) = array_arg::<$t>(py, args, i) {
                return Some(a);
            }
        )*};
    }
    each!(f32, f64, half::f16, half::bf16, i32, u32, i64, u64, u8);
    None
}

fn stream_work(message: String) -> unigpu::Error {
    unigpu::Error::StreamWork { message }
}

fn call_python(py: Python<'_>, f: &Py<PyAny>, args: &CpuArgs) -> unigpu::Result<()> {
    let py_err = |e: PyErr| {
        let traceback = py
            .import("traceback")
            .and_then(|tb| {
                tb.call_method1(
                    "format_exception",
                    (e.get_type(py), e.value(py), e.traceback(py)),
                )
            })
            .and_then(|lines| {
                lines
                    .try_iter()?
                    .map(|l| l?.extract::<String>())
                    .collect::<PyResult<String>>()
            })
            .unwrap_or_else(|_| format!("{e}\n"));
        stream_work(format!(
            "the Python CPU implementation raised {e}\n{}",
            traceback.trim_end()
        ))
    };
    let np = dtype::numpy(py).map_err(py_err)?;
    let mut call_args = Vec::with_capacity(args.len());
    let mut written = Vec::new();
    for i in 0..args.len() {
        match cpu_value(py, args, i) {
            Some(CpuValue::Scalar(s)) => {
                call_args.push(dtype::scalar_to_py(py, s).map_err(py_err)?);
            }
            Some(CpuValue::Array {
                bytes,
                dtype: d,
                writable,
            }) => {
                let arr = np
                    .getattr("frombuffer")
                    .and_then(|fb| fb.call1((&bytes, dtype::numpy_name(d))))
                    .map_err(py_err)?;
                if !writable {
                    arr.getattr("flags")
                        .and_then(|fl| fl.setattr("writeable", false))
                        .map_err(py_err)?;
                } else {
                    written.push((i, d, bytes));
                }
                call_args.push(arr);
            }
            None => {
                return Err(stream_work(format!(
                    "argument {i} has a type the Python binding does not know"
                )));
            }
        }
    }
    let tuple = PyTuple::new(py, call_args).map_err(py_err)?;
    f.bind(py).call1(tuple).map_err(py_err)?;
    for (i, d, bytes) in written {
        let bytes = bytes.to_vec();
        macro_rules! back {
            ($($v:ident => $t:ty),*) => {
                match d { $(DType::$v => write_back::<$t>(args, i, &bytes)?,)* }
            };
        }
        back!(F32 => f32, F64 => f64, F16 => half::f16, BF16 => half::bf16, I32 => i32,
              U32 => u32, I64 => i64, U64 => u64, U8 => u8);
    }
    Ok(())
}
