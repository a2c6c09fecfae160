//! Modules and kernels: compile CUDA C++ source, look kernels up by name,
//! launch them with a typed argument array.

use std::ffi::c_char;

use unigpu::binding::{self, BoundModule, Operand, View};
use unigpu::{Arg, CompileOptions, Grid, Kernel};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::array::ug_array;
use crate::context::ug_context;
use crate::locks;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::stream::ug_stream;
use crate::types::{scalar_arg, ug_arg_kind, ug_scalar};

/// A compiled program (NVRTC on CUDA, cached in memory and on disk; on the
/// CPU backend, the list of kernels read from the source), or precompiled
/// code loaded with `ug_module_load`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_module {
    pub(crate) module: BoundModule,
}

/// One kernel, ready to launch with `ug_kernel_launch`. Thread-safe.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_kernel {
    pub(crate) kernel: Kernel,
}

/// Launch geometry: blocks per grid, threads per block, dynamic shared
/// memory per block. Every dimension must be at least 1.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ug_grid {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem_bytes: u32,
}

impl ug_grid {
    pub(crate) fn from_facade(g: Grid) -> ug_grid {
        ug_grid {
            grid: [g.grid.0, g.grid.1, g.grid.2],
            block: [g.block.0, g.block.1, g.block.2],
            shared_mem_bytes: g.shared_mem_bytes,
        }
    }

    fn to_facade(self) -> Result<Grid> {
        if self.grid.contains(&0) || self.block.contains(&0) {
            return Err(Failure::invalid_argument(format!(
                "`grid` has a zero dimension (grid {:?}, block {:?}); every dimension must be at least 1",
                self.grid, self.block
            )));
        }
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        Ok(Grid::new((gx, gy, gz), (bx, by, bz)).with_shared_mem(self.shared_mem_bytes))
    }
}

/// One thread per element, 256 threads a block, at least one block (so a
/// kernel that checks `i < n` may be launched for `n = 0`).
#[unsafe(no_mangle)]
pub extern "C" fn ug_grid_for_elems(n: usize) -> ug_grid {
    ug_grid::from_facade(Grid::for_elems(n))
}

/// One kernel argument: a scalar, or an array the kernel reads or writes.
/// Make them with `ug_arg_scalar`, `ug_arg_in` and `ug_arg_out`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ug_arg {
    /// A `ug_arg_kind` value.
    pub kind: u32,
    /// The value, when `kind` is `UG_ARG_KIND_SCALAR`.
    pub scalar: ug_scalar,
    /// The array, when `kind` is `UG_ARG_KIND_ARRAY_IN` or `_ARRAY_OUT`.
    pub array: *mut ug_array,
}

/// A scalar argument.
#[unsafe(no_mangle)]
pub extern "C" fn ug_arg_scalar(value: ug_scalar) -> ug_arg {
    ug_arg {
        kind: ug_arg_kind::Scalar as u32,
        scalar: value,
        array: std::ptr::null_mut(),
    }
}

/// An array the kernel reads (`const T*` in the kernel).
#[unsafe(no_mangle)]
pub extern "C" fn ug_arg_in(array: *const ug_array) -> ug_arg {
    ug_arg {
        kind: ug_arg_kind::ArrayIn as u32,
        scalar: crate::types::ug_scalar_u64(0),
        array: array.cast_mut(),
    }
}

/// An array the kernel writes, and may read (`T*` in the kernel).
#[unsafe(no_mangle)]
pub extern "C" fn ug_arg_out(array: *mut ug_array) -> ug_arg {
    ug_arg {
        kind: ug_arg_kind::ArrayOut as u32,
        scalar: crate::types::ug_scalar_u64(0),
        array,
    }
}

/// Compiles `source` (CUDA C++, UTF-8) for `ctx`'s device. On CUDA,
/// `UG_COMPILE` carries NVRTC's log in the last error message; on the CPU
/// backend nothing is compiled and the module lists the kernels read from
/// the source, which run once they carry a CPU implementation
/// (`ug_kernel_with_cpu`).
///
/// # Safety
///
/// `ctx` is NULL or a live context; `source` is NULL or a NUL-terminated
/// string; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_module_compile(
    ctx: *const ug_context,
    source: *const c_char,
    out: *mut *mut ug_module,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety); no options.
    unsafe { ug_module_compile_with(ctx, source, std::ptr::null(), 0, out) }
}

/// Like `ug_module_compile`, with NVRTC options (`"-DTILE=32"`,
/// `"-Ikernels"`, `"--use_fast_math"`, ...) passed through. `options` may
/// be NULL when `n_options` is 0.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `source` is NULL or a NUL-terminated
/// string; `options` is NULL or valid for reads of `n_options` pointers,
/// each NULL or a NUL-terminated string; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_module_compile_with(
    ctx: *const ug_context,
    source: *const c_char,
    options: *const *const c_char,
    n_options: usize,
    out: *mut *mut ug_module,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        // SAFETY: NULL or NUL-terminated (see # Safety).
        let source = unsafe { runtime::str_arg(source, "source") }?;
        // SAFETY: NULL or valid for `n_options` reads (see # Safety).
        let options = unsafe { runtime::slice_arg(options, n_options, "options") }?;
        let mut opts = CompileOptions::default();
        for (i, o) in options.iter().enumerate() {
            // SAFETY: each option is NULL or NUL-terminated (see # Safety).
            let o = unsafe { runtime::str_arg(*o, &format!("options[{i}]")) }?;
            opts = opts.option(o);
        }
        let module = ctx.ctx.compile_with(source, &opts).or_status()?;
        out.write(runtime::into_handle(ug_module {
            module: module.into(),
        }));
        Ok(())
    })
}

/// The kernel called `name` in `module`: its source name in compiled
/// source; in precompiled CUDA code its symbol (the mangled `_Z...` name
/// unless the kernel is `extern "C"`); in SPIR-V its entry point (or the
/// module's only one).
/// `UG_KERNEL_ARGS` naming the kernels found when there is none.
///
/// # Safety
///
/// `module` is NULL or a live module; `name` is NULL or a NUL-terminated
/// string; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_module_kernel(
    module: *const ug_module,
    name: *const c_char,
    out: *mut *mut ug_kernel,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let module = unsafe { runtime::handle_ref(module, "module") }?;
        // SAFETY: NULL or NUL-terminated (see # Safety).
        let name = unsafe { runtime::str_arg(name, "name") }?;
        let kernel = module.module.kernel(name).or_status()?;
        out.write(runtime::into_handle(ug_kernel { kernel }));
        Ok(())
    })
}

/// Frees a module. NULL is a no-op. Kernels taken from it stay usable.
///
/// # Safety
///
/// `module` is NULL or a module from this library, not freed before and
/// not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_module_free(module: *mut ug_module) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(module, "ug_module") }
}

/// Frees a kernel. NULL is a no-op. Launches already queued still run.
///
/// # Safety
///
/// `kernel` is NULL or a kernel from this library, not freed before and
/// not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_kernel_free(kernel: *mut ug_kernel) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(kernel, "ug_kernel") }
}

/// Launches `kernel` on `stream`, or on `ctx`'s default stream when
/// `stream` is NULL (`ctx` may be NULL when `stream` is not), with `n_args` arguments. When the kernel's declaration
/// could be read from its source, the count, kinds and dtypes are checked
/// first (`UG_KERNEL_ARGS`: "parameter 0 is declared `f32` but a f64 value
/// was passed"). Arrays are ordered against their other uses on any stream.
/// A fault inside the kernel, or a failed CPU implementation, is returned by
/// the next sync (`UG_STREAM_WORK` on CPU). An array may appear several
/// times as `UG_ARG_KIND_ARRAY_IN`, but a written one only once
/// (`UG_INVALID_ARGUMENT`).
///
/// # Safety
///
/// `kernel`, `ctx` and `stream` are NULL or live handles; `grid` is NULL or
/// points to a `ug_grid`; `args` is NULL (with `n_args` 0) or valid for
/// reads of `n_args` arguments whose array handles are NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_kernel_launch(
    kernel: *const ug_kernel,
    ctx: *const ug_context,
    stream: *const ug_stream,
    grid: *const ug_grid,
    args: *const ug_arg,
    n_args: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let kernel = unsafe { runtime::handle_ref(kernel, "kernel") }?;
        // SAFETY: NULL or live (see # Safety).
        let stream = match unsafe { stream.as_ref() } {
            Some(s) => s.stream.clone(),
            // SAFETY: NULL or live (see # Safety).
            None => unsafe { runtime::handle_ref(ctx, "ctx") }?
                .ctx
                .default_stream()
                .clone(),
        };
        // SAFETY: NULL or a ug_grid (see # Safety).
        let grid = unsafe { runtime::handle_ref(grid, "grid") }?.to_facade()?;
        // SAFETY: NULL or valid for `n_args` reads (see # Safety).
        let args = unsafe { runtime::slice_arg(args, n_args, "args") }?;

        // Check every argument, then lock the arrays.
        let mut arrays = Vec::new();
        let names: Vec<String> = (0..args.len()).map(|i| format!("args[{i}]")).collect();
        for (i, a) in args.iter().enumerate() {
            let use_ = match a.kind {
                k if k == ug_arg_kind::Scalar as u32 => {
                    scalar_arg(&a.scalar, &format!("args[{i}].scalar.dtype"))?;
                    continue;
                }
                k if k == ug_arg_kind::ArrayIn as u32 => false,
                k if k == ug_arg_kind::ArrayOut as u32 => true,
                k => {
                    return Err(Failure::invalid_argument(format!(
                        "`args[{i}].kind` is {k}, not a ug_arg_kind value (UG_ARG_KIND_SCALAR 0, UG_ARG_KIND_ARRAY_IN 1, UG_ARG_KIND_ARRAY_OUT 2)"
                    )));
                }
            };
            let what = format!("args[{i}].array");
            // SAFETY: NULL or live (see # Safety).
            let array: &ug_array = unsafe { runtime::handle_ref(a.array, &what) }?;
            if array.view {
                // A kernel indexes the whole buffer from its start.
                return Err(Failure::invalid_argument(format!(
                    "`{what}` is a view (shape {:?}, strides {:?}): kernels take whole arrays; pass a contiguous copy (ug_array_contiguous)",
                    array.layout.shape(),
                    array.layout.strides()
                )));
            }
            arrays.push(if use_ {
                Operand::write(&array.inner, names[i].as_str())
            } else {
                Operand::read(&array.inner, names[i].as_str())
            });
        }
        // The bindings' one rule (unigpu::binding): an array both
        // `UG_ARG_KIND_ARRAY_IN` and `_OUT` is read from a copy taken
        // first; one passed twice as `_OUT` is refused.
        let mut locked = binding::lock(&arrays).map_err(locks::fail_call)?;
        let mut refs = locked.views().into_iter();
        let mut launch_args = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            if a.kind == ug_arg_kind::Scalar as u32 {
                launch_args.push(Arg::Scalar(scalar_arg(&a.scalar, "scalar")?));
                continue;
            }
            let arg = match refs.next() {
                Some(View::Read(x)) => x.as_arg(),
                Some(View::Write(x)) => x.as_arg_mut(),
                None => {
                    return Err(Failure::invalid_argument(format!(
                        "internal: no lock for args[{i}]"
                    )));
                }
            };
            launch_args.push(arg);
        }
        stream.launch(&kernel.kernel, grid, launch_args).or_status()
    })
}
