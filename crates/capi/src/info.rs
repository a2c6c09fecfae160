//! The library version, the fallback chain (why each backend was chosen or
//! skipped) and the device list of a backend.

use std::ffi::{CString, c_char};

use unigpu::{BackendAttempt, Context, DeviceInfo, Outcome};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::status::{OrStatus, Out, Result, ug_status};
use crate::types::{backend_arg, ug_backend, ug_outcome};

/// The version string, with a NUL: "0.1.0".
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library's version, "MAJOR.MINOR.PATCH". Static: do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn ug_version() -> *const c_char {
    VERSION.as_ptr().cast()
}

/// The major version number.
#[unsafe(no_mangle)]
pub extern "C" fn ug_version_major() -> u32 {
    env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap_or(0)
}

/// The minor version number.
#[unsafe(no_mangle)]
pub extern "C" fn ug_version_minor() -> u32 {
    env!("CARGO_PKG_VERSION_MINOR").parse().unwrap_or(0)
}

/// The patch version number.
#[unsafe(no_mangle)]
pub extern "C" fn ug_version_patch() -> u32 {
    env!("CARGO_PKG_VERSION_PATCH").parse().unwrap_or(0)
}

/// The backends considered when a context was created, in order (torch,
/// cuda, vulkan, cpu), each with its outcome and, when skipped, the reason.
/// Free it with `ug_fallback_chain_free`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_fallback_chain {
    entries: Vec<(ug_backend, ug_outcome, CString)>,
}

impl ug_fallback_chain {
    pub(crate) fn new(chain: &[BackendAttempt]) -> Result<ug_fallback_chain> {
        let entries = chain
            .iter()
            .map(|a| {
                let (outcome, reason) = match &a.outcome {
                    Outcome::Chosen => (ug_outcome::Chosen, String::new()),
                    Outcome::Skipped(reason) => (ug_outcome::Skipped, reason.clone()),
                    Outcome::NotTried => (ug_outcome::NotTried, String::new()),
                };
                let reason = runtime::c_string(reason, "fallback reason")?;
                Ok((ug_backend::from_facade(a.backend), outcome, reason))
            })
            .collect::<Result<_>>()?;
        Ok(ug_fallback_chain { entries })
    }
}

/// Creates the context `ug_context_default` would create (config file and
/// `UNIGPU_*` variables, then torch, cuda, vulkan, cpu) and returns its fallback
/// chain, so a program can show why each backend was chosen or skipped.
/// The context itself is released. Fails as `ug_context_default` does
/// (for example `UG_CONFIG` for a bad config file).
///
/// # Safety
///
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_probe(out: *mut *mut ug_fallback_chain) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        let ctx = Context::default().or_status()?;
        let chain = ug_fallback_chain::new(ctx.fallback_chain())?;
        out.write(runtime::into_handle(chain));
        Ok(())
    })
}

/// The number of entries (one per backend considered).
///
/// # Safety
///
/// `chain` is NULL or a live chain; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_fallback_chain_len(
    chain: *const ug_fallback_chain,
    out: *mut usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let chain = unsafe { runtime::handle_ref(chain, "chain") }?;
        out.write(chain.entries.len());
        Ok(())
    })
}

/// Entry `index`: its backend, its outcome and the reason it was skipped
/// ("" unless skipped). `reason` points into the chain and stays valid until
/// the chain is freed; do not free it. `UG_INVALID_ARGUMENT` past the end.
///
/// # Safety
///
/// `chain` is NULL or a live chain; each out-pointer is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_fallback_chain_get(
    chain: *const ug_fallback_chain,
    index: usize,
    backend: *mut ug_backend,
    outcome: *mut ug_outcome,
    reason: *mut *const c_char,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let backend = unsafe { Out::new(backend, "backend") }?;
        // SAFETY: NULL or valid for writes (see # Safety).
        let outcome = unsafe { Out::new(outcome, "outcome") }?;
        // SAFETY: NULL or valid for writes (see # Safety).
        let reason = unsafe { Out::new(reason, "reason") }?;
        // SAFETY: NULL or live (see # Safety).
        let chain = unsafe { runtime::handle_ref(chain, "chain") }?;
        let (b, o, r) = chain.entries.get(index).ok_or_else(|| {
            Failure::invalid_argument(format!(
                "`index` is {index}, past the end of the fallback chain ({} entries)",
                chain.entries.len()
            ))
        })?;
        backend.write(*b);
        outcome.write(*o);
        reason.write(r.as_ptr());
        Ok(())
    })
}

/// Frees a fallback chain. NULL is a no-op.
///
/// # Safety
///
/// `chain` is NULL or a chain from this library, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_fallback_chain_free(chain: *mut ug_fallback_chain) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(chain, "ug_fallback_chain") }
}

/// One device, as `ug_device_list_get` describes it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ug_device_info {
    /// The backend it belongs to.
    pub backend: ug_backend,
    /// Its id within the backend (the `device` of `ug_context_new`).
    pub ordinal: usize,
    /// Its name ("NVIDIA H200", the CPU's model name); points into the list
    /// and stays valid until the list is freed.
    pub name: *const c_char,
    /// CUDA compute capability, or -1 and -1 where there is none (CPU).
    pub compute_capability_major: i32,
    pub compute_capability_minor: i32,
    /// Memory in bytes, free and total, when the list was made.
    pub memory_free: usize,
    pub memory_total: usize,
}

/// The devices of one backend. Free it with `ug_device_list_free`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_device_list {
    devices: Vec<(DeviceInfo, CString)>,
}

/// The devices of `backend` (a `ug_backend`). A backend that cannot run
/// here fails with its reason (`UG_BACKEND_UNAVAILABLE`), as asking for it
/// in `ug_context_new` would; the CPU backend lists one device.
///
/// # Safety
///
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_device_list_new(
    backend: u32,
    out: *mut *mut ug_device_list,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        let backend = backend_arg(backend)?;
        let devices = unigpu::list_devices(backend)
            .or_status()?
            .into_iter()
            .map(|d| {
                let name = runtime::c_string(d.name.clone(), "device name")?;
                Ok((d, name))
            })
            .collect::<Result<_>>()?;
        out.write(runtime::into_handle(ug_device_list { devices }));
        Ok(())
    })
}

/// The number of devices in the list.
///
/// # Safety
///
/// `list` is NULL or a live list; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_device_list_len(
    list: *const ug_device_list,
    out: *mut usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let list = unsafe { runtime::handle_ref(list, "list") }?;
        out.write(list.devices.len());
        Ok(())
    })
}

/// Device `index` of the list. `UG_INVALID_ARGUMENT` past the end.
///
/// # Safety
///
/// `list` is NULL or a live list; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_device_list_get(
    list: *const ug_device_list,
    index: usize,
    out: *mut ug_device_info,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let list = unsafe { runtime::handle_ref(list, "list") }?;
        let (d, name) = list.devices.get(index).ok_or_else(|| {
            Failure::invalid_argument(format!(
                "`index` is {index}, past the end of the device list ({} devices)",
                list.devices.len()
            ))
        })?;
        let (major, minor) = d.compute_capability.unwrap_or((-1, -1));
        out.write(ug_device_info {
            backend: ug_backend::from_facade(d.backend),
            ordinal: d.ordinal,
            name: name.as_ptr(),
            compute_capability_major: major,
            compute_capability_minor: minor,
            memory_free: d.memory.free,
            memory_total: d.memory.total,
        });
        Ok(())
    })
}

/// Frees a device list. NULL is a no-op.
///
/// # Safety
///
/// `list` is NULL or a list from this library, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_device_list_free(list: *mut ug_device_list) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(list, "ug_device_list") }
}
