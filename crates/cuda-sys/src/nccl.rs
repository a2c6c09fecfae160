//! NCCL, the collective communication library, loaded at run time.
//!
//! The types (`ncclUniqueId`, `ncclConfig_t`, the data type and reduction
//! numbers) are cudarc's `nccl::sys`, generated from nccl.h. The functions
//! are resolved here, not through cudarc's loader, for two reasons:
//! - cudarc's loader tries `libnccl.so` and CUDA-versioned names only, and
//!   panics when none loads; NCCL's pip wheels (`nvidia-nccl-cu13`, the one
//!   torch brings) and Debian's `libnccl2` ship `libnccl.so.2` alone.
//! - its functions return `ncclResult_t` as a Rust enum, and a value a
//!   newer NCCL adds would be undefined behaviour; here every status is a
//!   plain `c_int`.
//!
//! [`nccl()`] loads the library once per process (`UNIGPU_NCCL_LIB`, else
//! `libnccl.so.2`, else cudarc's names), checks every symbol unigpu calls
//! and the version, and returns the table of functions or the reason it
//! cannot. Never panics.
//!
//! Before the first load it also decides whether this process's
//! communicators make every connection at init ([`NcclLibrary::connects_at_init`]):
//! it sets `NCCL_RUNTIME_CONNECT=0` when the variable is unset and no
//! libnccl is loaded yet (so NCCL cannot have read it). Connections made
//! at init are what let collectives run on blocking communicators without
//! a host wait on peers that has no deadline (unigpu-cuda-safe's
//! `nccl/comm.rs` says why).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use cudarc::driver::sys::CUstream;
pub use cudarc::nccl::sys::{
    ncclComm_t, ncclConfig_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, ncclUniqueId,
};

use crate::probe::{LibraryStatus, open_library};

/// Replaces the library's search list with one path: a libnccl that is
/// not on the loader's path, or (in tests) a file that does not exist.
pub const NCCL_LIB_OVERRIDE_ENV: &str = "UNIGPU_NCCL_LIB";

/// The oldest NCCL unigpu accepts: 2.14 brought nonblocking communicators
/// (`ncclCommInitRankConfig` with `blocking = 0`), which the timeouts need.
pub const MIN_VERSION: i32 = 21400;

/// An `ncclResult_t` as the C ABI returns it.
pub type Status = c_int;
/// `ncclSuccess`.
pub const SUCCESS: Status = ncclResult_t::ncclSuccess as Status;
/// `ncclInProgress`: a nonblocking call that goes on in the background.
pub const IN_PROGRESS: Status = ncclResult_t::ncclInProgress as Status;

/// `NCCL_CONFIG_UNDEF_INT`: a config field NCCL should choose itself.
const UNDEF_INT: c_int = c_int::MIN;
/// The `magic` of an initialised `ncclConfig_t`.
const CONFIG_MAGIC: u32 = 0xcafe_beef;
/// The header version the cudarc bindings were generated from (2.30).
const BINDINGS_VERSION: u32 = 23000;

/// The functions unigpu calls, resolved from one loaded library. Every
/// status is an `ncclResult_t` as a `c_int`; data types and reduction ops
/// are passed as `c_int` too (`ncclDataType_t::ncclFloat32 as c_int`).
#[derive(Debug, Clone, Copy)]
pub struct Api {
    pub get_version: unsafe extern "C" fn(*mut c_int) -> Status,
    pub get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> Status,
    pub comm_init_rank_config: unsafe extern "C" fn(
        *mut ncclComm_t,
        c_int,
        ncclUniqueId,
        c_int,
        *mut ncclConfig_t,
    ) -> Status,
    pub comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut Status) -> Status,
    /// (parent, color, key, child out, child config); NCCL 2.18 and newer.
    pub comm_split: Option<
        unsafe extern "C" fn(
            ncclComm_t,
            c_int,
            c_int,
            *mut ncclComm_t,
            *mut ncclConfig_t,
        ) -> Status,
    >,
    pub comm_abort: unsafe extern "C" fn(ncclComm_t) -> Status,
    pub comm_finalize: unsafe extern "C" fn(ncclComm_t) -> Status,
    pub comm_destroy: unsafe extern "C" fn(ncclComm_t) -> Status,
    pub group_start: unsafe extern "C" fn() -> Status,
    pub group_end: unsafe extern "C" fn() -> Status,
    /// (send, recv, count, dtype, op, comm, stream)
    pub all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> Status,
    /// (send, recv, count, dtype, root, comm, stream)
    pub broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> Status,
    /// (send, recv, send count, dtype, comm, stream)
    pub all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> Status,
    /// (send, recv, recv count, dtype, op, comm, stream)
    pub reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> Status,
    /// (send, count, dtype, peer, comm, stream)
    pub send:
        unsafe extern "C" fn(*const c_void, usize, c_int, c_int, ncclComm_t, CUstream) -> Status,
    /// (recv, count, dtype, peer, comm, stream)
    pub recv:
        unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, ncclComm_t, CUstream) -> Status,
    pub get_error_string: unsafe extern "C" fn(Status) -> *const c_char,
    pub get_last_error: unsafe extern "C" fn(ncclComm_t) -> *const c_char,
}

/// Whether libnccl loaded, from where, its version, and its functions.
#[derive(Debug)]
pub struct NcclLibrary {
    pub status: LibraryStatus,
    /// `ncclGetVersion`, e.g. 22809 for 2.28.9, when the library loaded.
    pub version: Option<i32>,
    /// Whether NCCL makes a communicator's connections during its init
    /// (`NCCL_RUNTIME_CONNECT=0` in effect) rather than at its first
    /// collective. False when unknown: a libnccl was loaded before unigpu
    /// looked, or the variable says otherwise.
    pub connects_at_init: bool,
    api: Option<Api>,
    /// Keeps the functions of `api` mapped for as long as this lives.
    _library: Option<libloading::Library>,
}

impl NcclLibrary {
    /// The functions, or why libnccl cannot be used.
    pub fn api(&self) -> Result<&Api, String> {
        match (&self.api, &self.status.reason) {
            (Some(api), None) => Ok(api),
            (_, Some(reason)) => Err(format!("libnccl: {reason}")),
            (None, None) => Err("libnccl: not loaded".into()),
        }
    }

    /// `2.28.9` for 22809.
    pub fn version_string(&self) -> Option<String> {
        self.version.map(version_string)
    }
}

/// NCCL's version code as `major.minor.patch`.
pub fn version_string(code: i32) -> String {
    format!("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100)
}

/// libnccl for this process, loaded on first call.
pub fn nccl() -> &'static NcclLibrary {
    static LIB: OnceLock<NcclLibrary> = OnceLock::new();
    LIB.get_or_init(|| {
        let choices = candidates();
        let connects_at_init = connect_at_init(&choices);
        let mut lib = load_nccl(&choices);
        lib.connects_at_init = connects_at_init;
        lib
    })
}

/// NCCL's switch between connecting at init (`0`) and at first use.
pub const RUNTIME_CONNECT_ENV: &str = "NCCL_RUNTIME_CONNECT";

/// Whether communicators will connect at init: the variable is `0`, or it
/// is unset and is set here to `0` before any libnccl of `choices` is
/// loaded (NCCL reads it once, at its first communicator).
fn connect_at_init(choices: &[String]) -> bool {
    match std::env::var_os(RUNTIME_CONNECT_ENV) {
        Some(v) => v.to_str().map(str::trim) == Some("0"),
        None if choices.iter().any(|c| already_loaded(c)) => false,
        None => {
            // SAFETY: runs once, inside `nccl()`'s OnceLock, before libnccl
            // is loaded by this process (checked above), so no NCCL thread
            // reads the environment yet; NCCL's own init sets variables
            // from its config file the same way (`setenv` in `initEnv`).
            unsafe { std::env::set_var(RUNTIME_CONNECT_ENV, "0") };
            true
        }
    }
}

/// Whether `name` is already mapped into this process (dlopen with
/// `RTLD_NOLOAD` finds it without loading it).
fn already_loaded(name: &str) -> bool {
    use libloading::os::unix::{Library, RTLD_LAZY};
    const RTLD_NOLOAD: std::ffi::c_int = 0x4; // glibc's dlfcn.h
    // SAFETY: RTLD_NOLOAD maps nothing and runs no initialiser: it only
    // returns a handle to a library already loaded (then dropped, which
    // undoes only this handle's reference).
    unsafe { Library::open(Some(name), RTLD_LAZY | RTLD_NOLOAD) }.is_ok()
}

/// Where libnccl is looked for: the override alone when it is set.
pub fn candidates() -> Vec<String> {
    match std::env::var(NCCL_LIB_OVERRIDE_ENV) {
        Ok(path) if !path.is_empty() => vec![path],
        _ => default_candidates(),
    }
}

/// The names NCCL's packages ship first, then cudarc's.
fn default_candidates() -> Vec<String> {
    let mut names = vec!["libnccl.so.2".to_string()];
    for name in cudarc::get_lib_name_candidates("nccl") {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Loads libnccl from the first of `choices` that loads, uncached.
pub fn load_nccl(choices: &[String]) -> NcclLibrary {
    let hint = format!(
        "install NCCL (pip's nvidia-nccl-cu13, which torch brings, or the libnccl2 package) and add its lib folder to LD_LIBRARY_PATH, or set {NCCL_LIB_OVERRIDE_ENV} to the library's path"
    );
    let (mut status, library) = open_library("libnccl", choices, &[], &hint);
    let Some(library) = library else {
        return NcclLibrary {
            status,
            version: None,
            connects_at_init: false,
            api: None,
            _library: None,
        };
    };
    let api = match resolve(&library) {
        Ok(api) => api,
        Err(missing) => {
            status.reason = Some(format!(
                "{} lacks {}: it is not NCCL, or an NCCL older than 2.14",
                status.loaded_from.as_deref().unwrap_or("the library"),
                missing.join(", ")
            ));
            return NcclLibrary {
                status,
                version: None,
                connects_at_init: false,
                api: None,
                _library: Some(library),
            };
        }
    };
    let mut version = 0;
    // SAFETY: `version` is a valid out-pointer; ncclGetVersion needs no setup.
    let got = unsafe { (api.get_version)(&mut version) };
    let version = (got == SUCCESS).then_some(version);
    match version {
        Some(v) if v >= MIN_VERSION => {}
        Some(v) => {
            status.reason = Some(format!(
                "NCCL {} is too old: unigpu needs 2.14 or newer (nonblocking communicators)",
                version_string(v)
            ))
        }
        None => status.reason = Some(format!("ncclGetVersion failed with status {got}")),
    }
    NcclLibrary {
        status,
        version,
        connects_at_init: false,
        api: Some(api),
        _library: Some(library),
    }
}

/// Every function of [`Api`], or the names of those the library lacks.
fn resolve(library: &libloading::Library) -> Result<Api, Vec<&'static str>> {
    let mut missing = Vec::new();
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is NCCL's function of that name, whose C
            // signature is the field's type (nccl.h); it stays mapped while
            // `library` lives, and the pointer is only used then.
            match unsafe { library.get::<*const c_void>(concat!($name, "\0").as_bytes()) } {
                Ok(sym) if !sym.is_null() => {
                    // SAFETY: as above: a function with this field's signature.
                    Some(unsafe { std::mem::transmute_copy(&*sym) })
                }
                _ => {
                    missing.push($name);
                    None
                }
            }
        };
    }
    let table = (
        sym!("ncclGetVersion"),
        sym!("ncclGetUniqueId"),
        sym!("ncclCommInitRankConfig"),
        sym!("ncclCommGetAsyncError"),
        sym!("ncclCommAbort"),
        sym!("ncclCommFinalize"),
        sym!("ncclCommDestroy"),
        sym!("ncclGroupStart"),
        sym!("ncclGroupEnd"),
        sym!("ncclAllReduce"),
        sym!("ncclBroadcast"),
        sym!("ncclAllGather"),
        sym!("ncclReduceScatter"),
        sym!("ncclSend"),
        sym!("ncclRecv"),
        sym!("ncclGetErrorString"),
        sym!("ncclGetLastError"),
    );
    // Optional: older libraries (2.14-2.17) lack it, and collectives then
    // stay on the nonblocking communicator.
    // SAFETY: as in `sym!`: NCCL's ncclCommSplit, mapped while `library` lives.
    let comm_split = match unsafe { library.get::<*const c_void>(b"ncclCommSplit\0") } {
        // SAFETY: as above: a function with the field's signature.
        Ok(sym) if !sym.is_null() => Some(unsafe { std::mem::transmute_copy(&*sym) }),
        _ => None,
    };
    match table {
        (
            Some(get_version),
            Some(get_unique_id),
            Some(comm_init_rank_config),
            Some(comm_get_async_error),
            Some(comm_abort),
            Some(comm_finalize),
            Some(comm_destroy),
            Some(group_start),
            Some(group_end),
            Some(all_reduce),
            Some(broadcast),
            Some(all_gather),
            Some(reduce_scatter),
            Some(send),
            Some(recv),
            Some(get_error_string),
            Some(get_last_error),
        ) => Ok(Api {
            get_version,
            get_unique_id,
            comm_init_rank_config,
            comm_get_async_error,
            comm_split,
            comm_abort,
            comm_finalize,
            comm_destroy,
            group_start,
            group_end,
            all_reduce,
            broadcast,
            all_gather,
            reduce_scatter,
            send,
            recv,
            get_error_string,
            get_last_error,
        }),
        _ => Err(missing),
    }
}

impl Api {
    /// NCCL's name for `status` (`"unhandled cuda error"`, ...).
    pub fn error_string(&self, status: Status) -> String {
        // SAFETY: ncclGetErrorString returns a static string for any value.
        let text = unsafe { (self.get_error_string)(status) };
        if text.is_null() {
            return format!("status {status}");
        }
        // SAFETY: non-null, NUL-terminated and static (nccl.h).
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }

    /// NCCL's last error message for `comm` (or the process, for null),
    /// which says more than the status; empty when there is none.
    ///
    /// # Safety
    /// `comm` is null or a communicator that has not been destroyed.
    pub unsafe fn last_error(&self, comm: ncclComm_t) -> String {
        // SAFETY: per this function's contract.
        let text = unsafe { (self.get_last_error)(comm) };
        if text.is_null() {
            return String::new();
        }
        // SAFETY: a NUL-terminated string NCCL keeps until its next call.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

/// `NCCL_CONFIG_INITIALIZER` with `blocking` set: every other field left
/// for NCCL to choose. NCCL reads `size` bytes of it at most, and no more
/// than its own `ncclConfig_t` (NCCL's `parseCommConfig`), so an older
/// library reads the prefix it knows.
pub fn config(blocking: bool) -> ncclConfig_t {
    ncclConfig_t {
        size: std::mem::size_of::<ncclConfig_t>(),
        magic: CONFIG_MAGIC,
        version: BINDINGS_VERSION,
        blocking: c_int::from(blocking),
        cgaClusterSize: UNDEF_INT,
        minCTAs: UNDEF_INT,
        maxCTAs: UNDEF_INT,
        netName: std::ptr::null(),
        splitShare: UNDEF_INT,
        trafficClass: UNDEF_INT,
        commName: std::ptr::null(),
        collnetEnable: UNDEF_INT,
        CTAPolicy: UNDEF_INT,
        shrinkShare: UNDEF_INT,
        nvlsCTAs: UNDEF_INT,
        nChannelsPerNetPeer: UNDEF_INT,
        nvlinkCentricSched: UNDEF_INT,
        graphUsageMode: UNDEF_INT,
        numRmaCtx: UNDEF_INT,
        maxP2pPeers: UNDEF_INT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_libnccl_is_a_reason_not_a_panic() {
        let missing = vec!["/nonexistent/unigpu-test/libnccl.so.2".to_string()];
        let lib = load_nccl(&missing);
        let reason = lib.api().expect_err("nothing to load");
        assert!(reason.starts_with("libnccl: "), "{reason}");
        assert!(
            reason.contains("/nonexistent/unigpu-test/libnccl.so.2"),
            "{reason}"
        );
        assert_eq!(lib.version, None);
    }

    #[test]
    fn a_library_without_nccl_symbols_is_named_with_what_it_lacks() {
        let lib = load_nccl(&["libc.so.6".to_string()]);
        let reason = lib.api().expect_err("libc is not NCCL");
        assert!(reason.contains("lacks ncclGetVersion"), "{reason}");
        assert!(reason.contains("ncclCommInitRankConfig"), "{reason}");
        assert_eq!(lib.status.loaded_from.as_deref(), Some("libc.so.6"));
    }

    #[test]
    fn the_search_list_starts_with_the_name_nccl_packages_ship() {
        let names = default_candidates();
        assert_eq!(names[0], "libnccl.so.2");
        assert!(names.contains(&"libnccl.so".to_string()), "{names:?}");
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }

    #[test]
    fn the_config_is_what_nccl_config_initializer_makes() {
        let c = config(false);
        assert_eq!(c.magic, 0xcafebeef);
        assert_eq!(c.size, std::mem::size_of::<ncclConfig_t>());
        assert_eq!(c.blocking, 0);
        assert_eq!(c.minCTAs, c_int::MIN);
        assert!(c.netName.is_null());
        assert_eq!(config(true).blocking, 1);
    }

    #[test]
    fn versions_read_as_nccl_writes_them() {
        assert_eq!(version_string(22809), "2.28.9");
        assert_eq!(version_string(MIN_VERSION), "2.14.0");
    }
}
