//! Can CUDA be used here, and if not, why not?
//!
//! cudarc loads libcuda and libnvrtc on first use and panics when it cannot.
//! The probe `dlopen`s the same candidate names cudarc will try, checks the
//! symbols the upper layers need, and only then asks the driver how many
//! devices there are. Every failure becomes a reason string.

use std::fmt;
use std::sync::OnceLock;

/// Environment variable that replaces the driver library's search list with
/// one path. Tests point it at a file that does not exist to simulate a
/// machine without libcuda; it only affects the probe.
pub const DRIVER_LIB_OVERRIDE_ENV: &str = "UNIGPU_TEST_CUDA_DRIVER_LIB";
/// Same as [`DRIVER_LIB_OVERRIDE_ENV`], for libnvrtc.
pub const NVRTC_LIB_OVERRIDE_ENV: &str = "UNIGPU_TEST_NVRTC_LIB";

/// Driver entry points the safe layer calls. cudarc resolves each symbol
/// lazily and panics on a missing one, so an old driver is caught here.
const REQUIRED_DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuCtxSetCurrent",
    "cuMemGetInfo_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuStreamCreate",
    "cuStreamQuery",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuLaunchHostFunc",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuFuncLoad",
    "cuDeviceCanAccessPeer",
    "cuCtxEnablePeerAccess",
    "cuMemcpyPeerAsync",
];

/// Driver entry points used where the driver has them; a driver without
/// one turns off only what needs it (the caller asks
/// [`Probe::driver_has`] first, since cudarc panics on a missing symbol).
/// `cuFuncGetParamInfo` (CUDA 12.4): a kernel's parameter sizes, which
/// check the launches of precompiled kernels.
pub const OPTIONAL_DRIVER_SYMBOLS: &[&str] = &["cuFuncGetParamInfo"];

const REQUIRED_NVRTC_SYMBOLS: &[&str] =
    &["nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram"];

const REQUIRED_CUBLAS_SYMBOLS: &[&str] = &[
    "cublasCreate_v2",
    "cublasSetStream_v2",
    "cublasSgemm_v2",
    "cublasDgemm_v2",
    "cublasGemmEx",
    "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched",
    "cublasGemmStridedBatchedEx",
];

/// Whether libcublas loads with the symbols unigpu's matmul uses. Checked
/// on first use of matmul, not by [`probe()`], since most programs never
/// need it. Cached per process.
pub fn cublas_status() -> &'static LibraryStatus {
    static STATUS: OnceLock<LibraryStatus> = OnceLock::new();
    STATUS.get_or_init(|| {
        check_library(
            "libcublas",
            &cudarc::get_lib_name_candidates("cublas"),
            REQUIRED_CUBLAS_SYMBOLS,
        )
    })
}

/// Whether one shared library can be loaded, and from where or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryStatus {
    /// Short name: `"libcuda"`, `"libnvrtc"`, `"libcublas"` or `"libnccl"`.
    pub name: &'static str,
    /// The name or path that loaded, when one did.
    pub loaded_from: Option<String>,
    /// Why it is unusable, when it is.
    pub reason: Option<String>,
}

impl LibraryStatus {
    /// True when the library loaded and has every symbol unigpu needs.
    pub fn is_usable(&self) -> bool {
        self.reason.is_none()
    }
}

impl fmt::Display for LibraryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.loaded_from, &self.reason) {
            (_, Some(reason)) => write!(f, "{}: unusable: {reason}", self.name),
            (Some(from), None) => write!(f, "{}: loaded from {from}", self.name),
            (None, None) => write!(f, "{}: loaded", self.name),
        }
    }
}

/// What the probe found. Built once per process by [`probe()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub driver: LibraryStatus,
    pub nvrtc: LibraryStatus,
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0, when the driver loaded.
    pub driver_version: Option<i32>,
    /// Number of CUDA devices, or why it could not be counted.
    pub device_count: Result<usize, String>,
    /// The [`OPTIONAL_DRIVER_SYMBOLS`] the loaded driver has.
    pub optional_driver_symbols: Vec<&'static str>,
}

impl Probe {
    /// True when the driver loads, initialises, and sees at least one device.
    pub fn cuda_usable(&self) -> bool {
        matches!(self.device_count, Ok(n) if n > 0)
    }

    /// Whether the driver is usable and has `symbol`, one of
    /// [`OPTIONAL_DRIVER_SYMBOLS`] (false for any other name).
    pub fn driver_has(&self, symbol: &str) -> bool {
        self.driver.is_usable() && self.optional_driver_symbols.contains(&symbol)
    }

    /// One sentence on why CUDA cannot be used, or `None` when it can.
    pub fn unusable_reason(&self) -> Option<String> {
        if let Some(reason) = &self.driver.reason {
            return Some(format!("libcuda: {reason}"));
        }
        match &self.device_count {
            Ok(0) => Some("the CUDA driver loaded but reports no devices".to_string()),
            Ok(_) => None,
            Err(reason) => Some(reason.clone()),
        }
    }
}

/// The probe result for this process, computed on first call.
pub fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(probe_uncached)
}

/// Runs the probe again, ignoring the cached result.
pub fn probe_uncached() -> Probe {
    probe_candidates(
        &candidates("cuda", DRIVER_LIB_OVERRIDE_ENV),
        &candidates("nvrtc", NVRTC_LIB_OVERRIDE_ENV),
    )
}

/// The probe over explicit lists of library names or paths to try.
pub fn probe_candidates(driver_names: &[String], nvrtc_names: &[String]) -> Probe {
    let (driver, library) = open_library("libcuda", driver_names, REQUIRED_DRIVER_SYMBOLS, HINT);
    let optional_driver_symbols = match &library {
        Some(library) if driver.is_usable() => OPTIONAL_DRIVER_SYMBOLS
            .iter()
            .copied()
            // SAFETY: the symbol is only looked up, never called, so its
            // type does not matter.
            .filter(|sym| unsafe { library.get::<*const ()>(sym.as_bytes()) }.is_ok())
            .collect(),
        _ => Vec::new(),
    };
    // Kept loaded, as `check_library` does.
    std::mem::forget(library);
    let nvrtc = check_library("libnvrtc", nvrtc_names, REQUIRED_NVRTC_SYMBOLS);
    let (driver_version, device_count) = if driver.is_usable() {
        query_driver()
    } else {
        (None, Err("libcuda could not be loaded".to_string()))
    };
    Probe {
        driver,
        nvrtc,
        driver_version,
        device_count,
        optional_driver_symbols,
    }
}

fn candidates(lib: &str, override_env: &str) -> Vec<String> {
    match std::env::var(override_env) {
        Ok(path) if !path.is_empty() => vec![path],
        _ => cudarc::get_lib_name_candidates(lib),
    }
}

/// What to do when a library is not found.
const HINT: &str = "install the NVIDIA driver or add its folder to LD_LIBRARY_PATH";

fn check_library(name: &'static str, choices: &[String], symbols: &[&str]) -> LibraryStatus {
    let (status, library) = open_library(name, choices, symbols, HINT);
    // Kept loaded for the life of the process: cudarc loads the same
    // library on first use, and a second dlopen of a loaded library is a
    // reference count, not another multi-ms load.
    std::mem::forget(library);
    status
}

/// Loads the first of `choices` that loads, and says whether it has every
/// one of `symbols`. The library is returned, loaded, when one loaded
/// (even one that lacks symbols), for callers that resolve the symbols
/// themselves. `hint` ends the reason when none loads: what to install.
pub(crate) fn open_library(
    name: &'static str,
    choices: &[String],
    symbols: &[&str],
    hint: &str,
) -> (LibraryStatus, Option<libloading::Library>) {
    let mut first_error = None;
    for choice in choices {
        // SAFETY: loading a CUDA library runs its initialisers, which have no
        // preconditions; this is the same load cudarc performs on first use.
        match unsafe { libloading::Library::new(choice) } {
            Ok(library) => {
                let missing: Vec<&str> = symbols
                    .iter()
                    .copied()
                    // SAFETY: the symbol is only looked up, never called, so its
                    // type does not matter.
                    .filter(|sym| unsafe { library.get::<*const ()>(sym.as_bytes()) }.is_err())
                    .collect();
                let reason = (!missing.is_empty()).then(|| {
                    format!(
                        "{choice} is too old: it lacks {} (unigpu's bindings are for CUDA 13.0)",
                        missing.join(", ")
                    )
                });
                let status = LibraryStatus {
                    name,
                    loaded_from: Some(choice.clone()),
                    reason,
                };
                return (status, Some(library));
            }
            Err(e) => {
                first_error.get_or_insert_with(|| (choice.clone(), error_chain(&e)));
            }
        }
    }
    let (first, err) = first_error.unwrap_or_default();
    let reason = match choices {
        [only] => format!("{only} could not be loaded: {err}"),
        _ => format!(
            "not found: {err} (and {} other names tried, up to {}); {hint}",
            choices.len().saturating_sub(1),
            choices.last().unwrap_or(&first)
        ),
    };
    let status = LibraryStatus {
        name,
        loaded_from: None,
        reason: Some(reason),
    };
    (status, None)
}

/// libloading's message plus its source (dlerror's text).
fn error_chain(e: &libloading::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// Only called once the driver library is known to load with every symbol,
/// so cudarc's lazy loader cannot panic.
fn query_driver() -> (Option<i32>, Result<usize, String>) {
    use cudarc::driver::{result, sys};
    let mut version = 0i32;
    // SAFETY: `version` is a valid out-pointer; cuDriverGetVersion needs no init.
    let version = unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .ok()
        .map(|()| version);
    let count = result::init()
        .and_then(|()| result::device::get_count())
        .map(|n| n.max(0) as usize)
        .map_err(|e| describe_driver_error("cuInit/cuDeviceGetCount", e));
    (version, count)
}

/// `CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected`, from
/// the driver's own name and description strings.
pub fn describe_driver_error(call: &str, err: cudarc::driver::DriverError) -> String {
    let name = err.error_name().map(|s| s.to_string_lossy().into_owned());
    let text = err.error_string().map(|s| s.to_string_lossy().into_owned());
    format!(
        "{call} failed: {} ({}): {}",
        name.unwrap_or_else(|_| format!("{:?}", err.0)),
        err.0 as u32,
        text.unwrap_or_else(|_| "no description".to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_reason_not_a_panic() {
        let missing = vec!["/nonexistent/unigpu-test/libcuda.so".to_string()];
        let found = probe_candidates(&missing, &missing);
        assert!(!found.driver.is_usable());
        assert!(!found.cuda_usable());
        let reason = found.unusable_reason().expect("a reason");
        assert!(
            reason.contains("/nonexistent/unigpu-test/libcuda.so"),
            "{reason}"
        );
        assert!(found.device_count.is_err());
        assert_eq!(found.driver_version, None);
        assert!(found.optional_driver_symbols.is_empty());
        assert!(!found.driver_has("cuFuncGetParamInfo"));
    }

    #[test]
    fn a_library_without_cuda_symbols_is_reported_as_too_old() {
        // libc loads everywhere but exports none of the driver's entry points.
        let libc = vec!["libc.so.6".to_string()];
        let found = probe_candidates(&libc, &libc);
        let reason = found
            .driver
            .reason
            .clone()
            .expect("libc is not a CUDA driver");
        assert!(reason.contains("lacks cuInit"), "{reason}");
        assert_eq!(found.driver.loaded_from.as_deref(), Some("libc.so.6"));
        assert!(!found.cuda_usable());
    }

    #[test]
    fn the_cached_probe_is_computed_once_and_matches_a_fresh_one() {
        let first = probe();
        assert!(
            std::ptr::eq(first, probe()),
            "probe() is cached: every call returns the same result"
        );
        // Nothing about the machine changed since: probing again from
        // scratch finds the same libraries, version and devices.
        assert_eq!(*first, probe_uncached());
        assert_eq!(first.cuda_usable(), first.unusable_reason().is_none());
        if first.driver.is_usable() {
            assert!(first.driver.loaded_from.is_some(), "{first:?}");
            assert!(first.driver_version.is_some(), "{first:?}");
        } else {
            assert!(!first.cuda_usable());
            assert_eq!(first.driver_version, None);
            assert!(first.device_count.is_err(), "{first:?}");
            assert!(
                first.unusable_reason().unwrap().starts_with("libcuda: "),
                "{first:?}"
            );
        }
    }
}
