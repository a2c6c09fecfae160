//! `ug_generator`: the Philox 4x32-10 generator (docs/random.md) from C,
//! giving the same bits as Rust's and Python's on every backend for the
//! same seed, offset, shape and dtype.

use std::sync::Mutex;

use unigpu::random::Generator;
use unigpu_capi_runtime as runtime;

use crate::array::ug_array;
use crate::context::ug_context;
use crate::status::{OrStatus, Out, Result, ug_status};
use crate::types::dtype_arg;

/// A counter-based random generator: a seed and an offset (where the next
/// call starts in the seed's stream, in 32-bit words). Thread-safe: calls
/// from several threads take turns.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_generator {
    inner: Mutex<Generator>,
}

impl ug_generator {
    fn with<R>(&self, f: impl FnOnce(&mut Generator) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A generator of `seed` at offset 0, into `out`.
///
/// # Safety
///
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_new(seed: u64, out: *mut *mut ug_generator) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        out.write(runtime::into_handle(ug_generator {
            inner: Mutex::new(Generator::new(seed)),
        }));
        Ok(())
    })
}

/// The generator's offset, into `out`.
///
/// # Safety
///
/// `g` is NULL or a live generator; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_offset(g: *const ug_generator, out: *mut u64) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let g = unsafe { runtime::handle_ref(g, "g") }?;
        out.write(g.with(|g| g.offset()));
        Ok(())
    })
}

/// Moves the generator to `offset` (to replay a stream).
///
/// # Safety
///
/// `g` is NULL or a live generator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_set_offset(g: *const ug_generator, offset: u64) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let g = unsafe { runtime::handle_ref(g, "g") }?;
        g.with(|g| g.set_offset(offset));
        Ok(())
    })
}

/// Draws a new array of `shape` with `draw` and hands it out.
///
/// # Safety
///
/// `g`, `ctx` NULL or live; `shape` NULL or valid for `ndim` reads; `out`
/// NULL or valid for writes.
unsafe fn draw(
    g: *const ug_generator,
    ctx: *const ug_context,
    shape: *const usize,
    ndim: usize,
    out: *mut *mut ug_array,
    f: impl FnOnce(&mut Generator, &unigpu::Context, &[usize]) -> Result<unigpu::AnyArray>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let g = unsafe { runtime::handle_ref(g, "g") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        // SAFETY: NULL or valid for `ndim` reads (see # Safety).
        let shape = unsafe { runtime::slice_arg::<_, usize>(shape, ndim, "shape") }?;
        let a = g.with(|g| f(g, &ctx.ctx, shape))?;
        out.write(ug_array::handle(a));
        Ok(())
    })
}

/// A new array of `shape` (`ndim` extents) of numbers uniform in [0, 1),
/// of `dtype` (f32, f64, f16 or bf16), in `ctx`; the offset moves past
/// them.
///
/// # Safety
///
/// `g` and `ctx` are NULL or live; `shape` is NULL or valid for reads of
/// `ndim` values; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_uniform(
    g: *const ug_generator,
    ctx: *const ug_context,
    dtype: u32,
    shape: *const usize,
    ndim: usize,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        draw(g, ctx, shape, ndim, out, |g, c, s| {
            g.uniform_any(c, dtype_arg(dtype, "dtype")?, s).or_status()
        })
    }
}

/// As `ug_generator_uniform`, normal numbers of mean `mean` and standard
/// deviation `std` (Box-Muller).
///
/// # Safety
///
/// As `ug_generator_uniform`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_normal(
    g: *const ug_generator,
    ctx: *const ug_context,
    dtype: u32,
    shape: *const usize,
    ndim: usize,
    mean: f64,
    std: f64,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        draw(g, ctx, shape, ndim, out, |g, c, s| {
            g.normal_any(c, dtype_arg(dtype, "dtype")?, s, mean, std)
                .or_status()
        })
    }
}

/// As `ug_generator_uniform`, integers uniform in [low, high) of `dtype`
/// (i32 or i64).
///
/// # Safety
///
/// As `ug_generator_uniform`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_randint(
    g: *const ug_generator,
    ctx: *const ug_context,
    dtype: u32,
    shape: *const usize,
    ndim: usize,
    low: i64,
    high: i64,
    out: *mut *mut ug_array,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        draw(g, ctx, shape, ndim, out, |g, c, s| {
            g.randint_any(c, dtype_arg(dtype, "dtype")?, s, low, high)
                .or_status()
        })
    }
}

/// Frees a generator. NULL is a no-op.
///
/// # Safety
///
/// `g` is NULL or a generator from this library, not freed before and not
/// in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_generator_free(g: *mut ug_generator) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(g, "ug_generator") }
}
