//! `ug_context`: a backend and device, chosen by the config or by name.

use std::ffi::c_char;

use unigpu::Context;
use unigpu_capi_runtime as runtime;

use crate::event::ug_event;
use crate::info::ug_fallback_chain;
use crate::status::{OrStatus, Out, ug_status, write_string};
use crate::stream::ug_stream;
use crate::types::{backend_arg, ug_backend};

/// A device plus its default stream. Thread-safe: one context may be used
/// from many threads at once. Arrays, streams and events made from it keep
/// the device alive after `ug_context_free`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_context {
    pub(crate) ctx: Context,
}

/// Opens a context with `make` and hands it out through `out`.
///
/// # Safety
///
/// `out` is NULL or valid for writes.
unsafe fn new_context(
    out: *mut *mut ug_context,
    make: impl FnOnce() -> crate::status::Result<Context>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        let ctx = make()?;
        out.write(runtime::into_handle(ug_context { ctx }));
        Ok(())
    })
}

/// The context a program gets when it does not choose: the config file
/// (`$UNIGPU_CONFIG`, else the first `unigpu.toml` in the working directory
/// or a parent) and `UNIGPU_BACKEND` / `UNIGPU_DEVICE`, then torch, cuda,
/// vulkan (a hardware adapter; a software one is passed over), cpu.
/// `ug_context_fallback_chain` says why each backend was chosen or
/// skipped. Fails with `UG_CONFIG` for a bad config, or with the named
/// backend's error when the config requires one that cannot open.
///
/// # Safety
///
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_default(out: *mut *mut ug_context) -> ug_status {
    // SAFETY: the caller's promise about `out` (see # Safety).
    unsafe { new_context(out, || Context::default().or_status()) }
}

/// Exactly `backend` (a `ug_backend`), device `device`; no fallback.
/// `UG_INVALID_DEVICE` for a device past the end (`cpu` has device 0 only),
/// `UG_BACKEND_UNAVAILABLE` with the reason when the backend cannot run
/// here, `UG_INVALID_ARGUMENT` for an unknown backend value.
///
/// # Safety
///
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_new(
    backend: u32,
    device: usize,
    out: *mut *mut ug_context,
) -> ug_status {
    // SAFETY: the caller's promise about `out` (see # Safety).
    unsafe {
        new_context(out, || {
            Context::new(backend_arg(backend)?, device).or_status()
        })
    }
}

/// A context from the `unigpu.toml` at `path` (UTF-8); the environment
/// overrides still apply. `UG_CONFIG` for a missing or bad file, with the
/// file, line, column, key and allowed values in the message.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_from_config_file(
    path: *const c_char,
    out: *mut *mut ug_context,
) -> ug_status {
    let make = || {
        // SAFETY: NULL or NUL-terminated (see # Safety).
        let path = unsafe { runtime::str_arg(path, "path") }?;
        Context::from_config_file(path).or_status()
    };
    // SAFETY: the caller's promise about `out` (see # Safety).
    unsafe { new_context(out, make) }
}

/// Frees a context handle. NULL is a no-op. Arrays, streams and events made
/// from it stay usable.
///
/// # Safety
///
/// `ctx` is NULL or a context from this library, not freed before and not
/// in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_free(ctx: *mut ug_context) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(ctx, "ug_context") }
}

/// Runs `f` on a context argument and writes its result to `out`.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
unsafe fn getter<T>(
    ctx: *const ug_context,
    out: *mut T,
    f: impl FnOnce(&Context) -> crate::status::Result<T>,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let value = f(&ctx.ctx)?;
        out.write(value);
        Ok(())
    })
}

/// The backend this context runs on.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_backend(
    ctx: *const ug_context,
    out: *mut ug_backend,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { getter(ctx, out, |c| Ok(ug_backend::from_facade(c.backend()))) }
}

/// The device's id within its backend.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_device_id(
    ctx: *const ug_context,
    out: *mut usize,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { getter(ctx, out, |c| Ok(c.device_id())) }
}

/// The device's name ("NVIDIA H200", the CPU's model name), to be freed
/// with `ug_string_free`.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_device_name(
    ctx: *const ug_context,
    out: *mut *mut c_char,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let name = ctx.ctx.device_name().or_status()?;
        write_string(out, name, "device name")
    })
}

/// Free and total device memory now, in bytes.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `free` and `total` are NULL or valid
/// for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_memory_info(
    ctx: *const ug_context,
    free: *mut usize,
    total: *mut usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let free = unsafe { Out::new(free, "free") }?;
        // SAFETY: NULL or valid for writes (see # Safety).
        let total = unsafe { Out::new(total, "total") }?;
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        let info = ctx.ctx.memory_info().or_status()?;
        free.write(info.free);
        total.write(info.total);
        Ok(())
    })
}

/// Waits for all work on every stream of the context, then returns the
/// first error any of it raised (`UG_STREAM_WORK` for a failed CPU kernel,
/// `UG_DRIVER` for a fault in a CUDA kernel, ...).
///
/// # Safety
///
/// `ctx` is NULL or a live context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_sync(ctx: *const ug_context) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let ctx = unsafe { runtime::handle_ref(ctx, "ctx") }?;
        ctx.ctx.sync().or_status()
    })
}

/// The backends considered when this context was created, with the reason
/// each skipped one was skipped. Free it with `ug_fallback_chain_free`.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_fallback_chain(
    ctx: *const ug_context,
    out: *mut *mut ug_fallback_chain,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        getter(ctx, out, |c| {
            Ok(runtime::into_handle(ug_fallback_chain::new(
                c.fallback_chain(),
            )?))
        })
    }
}

/// A handle to the context's default stream, the one that calls without a
/// stream use. Free it with `ug_stream_free` (the stream lives on with the
/// context).
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_default_stream(
    ctx: *const ug_context,
    out: *mut *mut ug_stream,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        getter(ctx, out, |c| {
            Ok(runtime::into_handle(ug_stream {
                stream: c.default_stream().clone(),
            }))
        })
    }
}

/// A new, unrecorded, untimed event of this context (`ug_event_query`
/// says done until it is recorded with `ug_event_record`). Untimed events
/// are the cheap kind for ordering; `ug_event_elapsed_ms` refuses them with
/// `UG_UNSUPPORTED` (see `ug_context_create_timing_event`).
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_create_event(
    ctx: *const ug_context,
    out: *mut *mut ug_event,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        getter(ctx, out, |c| {
            let event = c.create_event().or_status()?;
            Ok(runtime::into_handle(ug_event { event }))
        })
    }
}

/// A new, unrecorded event with timing, for `ug_event_elapsed_ms`.
///
/// # Safety
///
/// `ctx` is NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_context_create_timing_event(
    ctx: *const ug_context,
    out: *mut *mut ug_event,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        getter(ctx, out, |c| {
            let event = c.create_timing_event().or_status()?;
            Ok(runtime::into_handle(ug_event { event }))
        })
    }
}
