//! The C ABI (crates/capi, `ug_*`) driven by a byte stream decoded into a
//! sequence of calls with random arguments, on the CPU backend
//! (`UNIGPU_BACKEND=cpu`).
//!
//! Arguments are what a C caller may pass by contract: sizes of any value;
//! out-pointers that are NULL, valid, or valid but misaligned; handles taken
//! from those created earlier in the same input, or NULL — never made-up
//! pointer values, which the contract rules out. A freed handle leaves its
//! pool and is not used again. Host buffers are real and as large as the
//! call says (or NULL); a size too large to allocate comes with NULL or, where
//! it overflows, with a small buffer that the call must refuse before reading.
//!
//! Properties checked after every call: no crash, no panic (libfuzzer-sys
//! aborts on any panic, caught or not; `UG_PANIC` is also refused); a
//! failed call writes none of its out-parameters (pre-filled with a
//! sentinel) and leaves a non-empty `ug_last_error_message`; a successful
//! one leaves it empty and writes its handles; strings and views returned
//! are readable over their whole stated extent (ASan); a C CPU kernel sees
//! coherent arguments; every `user_data` handed to a kernel is freed
//! exactly once; every DLPack tensor is deleted exactly once.

#![no_main]

use std::ffi::{CStr, CString, c_char, c_void};
use std::mem::{align_of, size_of};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use unigpu_capi::*;
use unigpu_core::dlpack::ffi::DLManagedTensorVersioned;

// ---------------------------------------------------------------------------
// Argument vocabulary.

/// A handle argument: NULL (one time in eight), or one of the live
/// handles of its kind (NULL too when there is none).
#[derive(Debug, Clone, Copy)]
struct H(Option<u8>);

impl<'a> Arbitrary<'a> for H {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(H(if u.ratio(1, 8)? {
            None
        } else {
            Some(u.arbitrary()?)
        }))
    }
}

/// How an out-parameter is passed: mostly valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutKind {
    Valid,
    Null,
    /// Writable memory, but not aligned for the type.
    Misaligned,
}

impl<'a> Arbitrary<'a> for OutKind {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u.int_in_range(0..=9u8)? {
            0 => OutKind::Null,
            1 => OutKind::Misaligned,
            _ => OutKind::Valid,
        })
    }
}

/// A size or count: mostly small, sometimes huge.
#[derive(Debug, Clone, Copy)]
struct Size(usize);

impl<'a> Arbitrary<'a> for Size {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Size(match u.int_in_range(0..=15u8)? {
            0 => *u.choose(&[
                usize::MAX,
                usize::MAX / 2,
                isize::MAX as usize,
                isize::MAX as usize + 1,
                1 << 62,
                1 << 50,
                1 << 40,
            ])?,
            1 => u.int_in_range(0..=4096)?,
            _ => *u.choose(&[0, 1, 2, 3, 4, 7, 8, 16, 64])?,
        }))
    }
}

/// A host buffer's size: the one the call needs (so that it can succeed),
/// or any [`Size`].
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Bytes {
    Fitting,
    Any(Size),
}

/// An enum value from C: a declared one, or any integer.
#[derive(Debug, Clone, Copy)]
struct EnumVal<const N: u32>(u32);

impl<'a, const N: u32> Arbitrary<'a> for EnumVal<N> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(EnumVal(if u.ratio(7, 8)? {
            u.int_in_range(0..=N - 1)?
        } else {
            u.arbitrary()?
        }))
    }
}

type Dtype = EnumVal<9>;
type BackendVal = EnumVal<4>;

#[derive(Arbitrary, Debug, Clone, Copy)]
struct ScalarSpec {
    dtype: Dtype,
    bits: u64,
}

impl ScalarSpec {
    fn c(self) -> ug_scalar {
        ug_scalar {
            dtype: self.dtype.0,
            value: ug_value { u64: self.bits },
        }
    }
}

/// Strings passed to the API: a small fixed vocabulary (kernel names and
/// sources enter process-wide caches, which must not grow without bound).
#[derive(Debug, Clone, Copy)]
struct Text(Option<&'static [u8]>);

const TEXTS: [&[u8]; 10] = [
    b"k",
    b"saxpy",
    b"",
    b"scale",
    b"\xff\xfe not utf-8",
    b"-DN=4",
    b"--use_fast_math",
    b"-arch=sm_90",
    b"no_such_kernel",
    b"caf\xc3\xa9",
];

impl<'a> Arbitrary<'a> for Text {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Text(if u.ratio(1, 8)? {
            None
        } else {
            Some(*u.choose(&TEXTS)?)
        }))
    }
}

impl Text {
    fn c(self) -> Option<CString> {
        self.0
            .map(|b| CString::new(b.to_vec()).expect("no NUL inside"))
    }
}

fn ptr_of(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(null(), |s| s.as_ptr())
}

const SOURCES: [&str; 4] = [
    "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {}",
    "extern \"C\" __global__ void scale(double* x, double a, unsigned long long n) {}\n\
     extern \"C\" __global__ void k(void) {}",
    "template <typename T> __global__ void k(T* p) {}",
    "this is not a kernel (",
];

#[derive(Debug, Clone, Copy)]
struct Source(Option<usize>);

impl<'a> Arbitrary<'a> for Source {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Source(if u.ratio(1, 8)? {
            None
        } else {
            Some(u.choose_index(SOURCES.len())?)
        }))
    }
}

/// What the C CPU implementation does: return this code (0 = success).
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Behaviour {
    code: i8,
    write_message: bool,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct ArgSpec {
    kind: EnumVal<3>,
    scalar: ScalarSpec,
    array: H,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct GridSpec {
    grid: [u8; 3],
    block: [u8; 3],
    shared: u32,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ConfigPath {
    Null,
    Missing,
    NotUtf8,
    /// A file holding this text.
    File(ConfigText),
}

#[derive(Debug, Clone, Copy)]
struct ConfigText(&'static str);

const CONFIGS: [&str; 7] = [
    "",
    "backend = \"cpu\"\n",
    "backend = \"cpu\"\ndevice = \"cuda:1\"\n",
    "backend = \"auto\"\ndtype = \"f64\"\n",
    "backend = 3\n",
    "colour = \"blue\"\n",
    "backend = \"cpu\"\ndevice = \"cpu:1\"\n[",
];

impl<'a> Arbitrary<'a> for ConfigText {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(ConfigText(u.choose(&CONFIGS)?))
    }
}

/// DLPack export's `stream`: the values a CPU array may get (0, -1), and
/// values it must refuse: -2 and below, and 1 and 2, the predefined
/// legacy and per-thread streams (valid handles by DLPack's rules).
#[derive(Debug, Clone, Copy)]
struct DlpackStream(i64);

impl<'a> Arbitrary<'a> for DlpackStream {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(DlpackStream(*u.choose(&[0, -1, -2, i64::MIN, 1, 2])?))
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Binary {
    Add,
    Sub,
    Mul,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Unary {
    Relu,
    Sigmoid,
    Tanh,
    Copy,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Reduce {
    Sum,
    Max,
}

/// One C API call.
#[derive(Arbitrary, Debug)]
enum Call {
    ContextNew {
        backend: BackendVal,
        device: Size,
        out: OutKind,
    },
    ContextDefault {
        out: OutKind,
    },
    ContextFromConfig {
        path: ConfigPath,
        out: OutKind,
    },
    ContextFree {
        ctx: H,
    },
    ContextBackend {
        ctx: H,
        out: OutKind,
    },
    ContextDeviceId {
        ctx: H,
        out: OutKind,
    },
    ContextDeviceName {
        ctx: H,
        out: OutKind,
    },
    ContextMemoryInfo {
        ctx: H,
        free: OutKind,
        total: OutKind,
    },
    ContextSync {
        ctx: H,
    },
    ContextFallbackChain {
        ctx: H,
        out: OutKind,
    },
    ContextDefaultStream {
        ctx: H,
        out: OutKind,
    },
    ContextCreateEvent {
        ctx: H,
        timing: bool,
        out: OutKind,
    },
    ContextDlpackDevice {
        ctx: H,
        ty: OutKind,
        id: OutKind,
    },

    ArrayAlloc {
        ctx: H,
        dtype: Dtype,
        len: Size,
        zeros: bool,
        unified: bool,
        out: OutKind,
    },
    ArrayUpload {
        ctx: H,
        dtype: Dtype,
        len: Size,
        data: Option<Bytes>,
        out: OutKind,
    },
    ArrayUploadFrom {
        array: H,
        data: Option<Bytes>,
    },
    ArrayDownload {
        array: H,
        dst: Option<Bytes>,
    },
    ArrayCopy {
        src: H,
        dst: H,
    },
    ArrayToContext {
        array: H,
        ctx: H,
        out: OutKind,
    },
    ArrayLen {
        array: H,
        out: OutKind,
    },
    ArraySizeBytes {
        array: H,
        out: OutKind,
    },
    ArrayDtype {
        array: H,
        out: OutKind,
    },
    ArrayContext {
        array: H,
        out: OutKind,
    },
    ArrayFree {
        array: H,
    },
    ArrayIsUnified {
        array: H,
        out: OutKind,
    },
    ArrayHostView {
        array: H,
        write: bool,
        out: OutKind,
    },
    StreamPrefetch {
        stream: H,
        array: H,
        to: EnumVal<2>,
    },

    StreamCreate {
        ctx: H,
        out: OutKind,
    },
    StreamSync {
        stream: H,
    },
    StreamQuery {
        stream: H,
        out: OutKind,
    },
    StreamWait {
        stream: H,
        event: H,
    },
    StreamRecord {
        stream: H,
        timed: bool,
        out: OutKind,
    },
    StreamFree {
        stream: H,
    },
    StreamBeginCapture {
        stream: H,
    },
    StreamEndCapture {
        stream: H,
        out: OutKind,
    },
    StreamIsCapturing {
        stream: H,
        out: OutKind,
    },

    EventSync {
        event: H,
    },
    EventQuery {
        event: H,
        out: OutKind,
    },
    EventElapsed {
        start: H,
        end: H,
        out: OutKind,
    },
    EventRecord {
        event: H,
        stream: H,
    },
    EventFree {
        event: H,
    },

    GraphLaunch {
        graph: H,
        stream: H,
    },
    GraphLen {
        graph: H,
        out: OutKind,
    },
    GraphFree {
        graph: H,
    },

    KernelCpu {
        name: Text,
        with_func: bool,
        behaviour: Behaviour,
        with_free: bool,
        out: OutKind,
    },
    KernelWithCpu {
        kernel: H,
        with_func: bool,
        behaviour: Behaviour,
        out: OutKind,
    },
    ModuleCompile {
        ctx: H,
        source: Source,
        options: Option<Vec<Text>>,
        out: OutKind,
    },
    ModuleKernel {
        module: H,
        name: Text,
        out: OutKind,
    },
    ModuleFree {
        module: H,
    },
    KernelFree {
        kernel: H,
    },
    KernelLaunch {
        kernel: H,
        ctx: H,
        stream: H,
        grid: Option<GridSpec>,
        args: Option<Vec<ArgSpec>>,
        n_args_extra: bool,
    },

    OpFill {
        stream: H,
        x: H,
        value: ScalarSpec,
    },
    OpBinary {
        op: Binary,
        stream: H,
        a: H,
        b: H,
        out: H,
    },
    OpUnary {
        op: Unary,
        stream: H,
        x: H,
        out: H,
    },
    OpAxpy {
        stream: H,
        alpha: ScalarSpec,
        x: H,
        y: H,
    },
    OpScale {
        stream: H,
        alpha: ScalarSpec,
        x: H,
    },
    OpReduce {
        op: Reduce,
        stream: H,
        x: H,
        out: OutKind,
    },
    OpDot {
        stream: H,
        x: H,
        y: H,
        out: OutKind,
    },
    OpMatmul {
        stream: H,
        a: H,
        b: H,
        c: H,
        m: Size,
        k: Size,
        n: Size,
    },

    PinnedNew {
        ctx: H,
        dtype: Dtype,
        len: Size,
        out: OutKind,
    },
    PinnedLen {
        pinned: H,
        out: OutKind,
    },
    PinnedDtype {
        pinned: H,
        out: OutKind,
    },
    PinnedData {
        pinned: H,
        write: bool,
        out: OutKind,
    },
    PinnedUpload {
        stream: H,
        src: H,
        dst: H,
    },
    PinnedDownload {
        stream: H,
        src: H,
        dst: H,
    },
    PinnedFree {
        pinned: H,
    },

    ToDlpack {
        array: H,
        stream: DlpackStream,
        out: OutKind,
    },
    FromDlpack {
        ctx: H,
        tensor: H,
        out: OutKind,
    },
    DeleteTensor {
        tensor: H,
    },

    Probe {
        out: OutKind,
    },
    ChainLen {
        chain: H,
        out: OutKind,
    },
    ChainGet {
        chain: H,
        index: Size,
        backend: OutKind,
        outcome: OutKind,
        reason: OutKind,
    },
    ChainFree {
        chain: H,
    },
    DeviceListNew {
        backend: BackendVal,
        out: OutKind,
    },
    DeviceListLen {
        list: H,
        out: OutKind,
    },
    DeviceListGet {
        list: H,
        index: Size,
        out: OutKind,
    },
    DeviceListFree {
        list: H,
    },

    ScalarFromF64 {
        dtype: Dtype,
        value: f64,
        out: OutKind,
    },
    ScalarToF64 {
        scalar: Option<ScalarSpec>,
        out: OutKind,
    },
    DtypeSize {
        dtype: Dtype,
    },
    StatusName {
        status: i32,
    },
    Version,
    LastError {
        len: u16,
        with_buf: bool,
    },
}

// ---------------------------------------------------------------------------
// Out-parameters with sentinels.

const SENTINEL: u8 = 0x5e;

/// Storage for one out-parameter of type `T`, pre-filled with [`SENTINEL`].
struct Out<T> {
    buf: Vec<u8>,
    ptr: *mut T,
    /// A handle: a success must write it (a handle never looks like the
    /// sentinel; plain values may, by chance).
    handle: bool,
}

impl<T> Out<*mut T> {
    /// An out-parameter for a new handle.
    fn handle(kind: OutKind) -> Out<*mut T> {
        Out {
            handle: true,
            ..Out::new(kind)
        }
    }
}

impl<T> Out<T> {
    fn new(kind: OutKind) -> Out<T> {
        let mut buf = vec![SENTINEL; size_of::<T>() + 2 * align_of::<T>()];
        let base = buf.as_mut_ptr();
        let aligned = base.wrapping_add(base.align_offset(align_of::<T>()));
        let ptr = match kind {
            OutKind::Null => null_mut(),
            OutKind::Valid => aligned.cast(),
            // For types of alignment 1 this is a valid pointer too.
            OutKind::Misaligned => aligned.wrapping_add(1).cast(),
        };
        Out {
            buf,
            ptr,
            handle: false,
        }
    }

    fn untouched(&self) -> bool {
        self.buf.iter().all(|&b| b == SENTINEL)
    }

    /// The written value, when the call succeeded and the pointer was valid.
    fn get(&self) -> Option<T> {
        (!self.ptr.is_null() && self.ptr.is_aligned() && !self.untouched())
            // SAFETY: aligned, inside `buf`, and written by a successful
            // call (a whole value of `T`).
            .then(|| unsafe { self.ptr.read() })
    }
}

fn last_error_len() -> usize {
    // SAFETY: NULL with length 0 asks for the length only.
    unsafe { ug_last_error_message(null_mut(), 0) }
}

/// `UNIGPU_FUZZ_TRACE=1` prints each call and its status to stderr, to
/// read what a crashing input does (`cargo fuzz run capi_calls <input>`).
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("UNIGPU_FUZZ_TRACE").is_some_and(|v| v == "1"))
}

/// The checks every fallible call gets.
fn check(name: &str, status: ug_status, outs: &[&dyn Untouched]) {
    if trace() {
        eprintln!("  -> {status:?} ({name})");
    }
    assert_ne!(
        status,
        ug_status::PANIC,
        "{name}: a panic was caught at the boundary"
    );
    let len = last_error_len();
    if status == ug_status::OK {
        assert_eq!(len, 0, "{name} succeeded but left an error message");
        for o in outs {
            assert!(
                o.written_ok(),
                "{name} succeeded without writing its handle"
            );
        }
    } else {
        assert!(
            len > 0,
            "{name} failed ({status:?}) without an error message"
        );
        let mut buf = vec![0 as c_char; len + 1];
        // SAFETY: `buf` holds `len + 1` bytes.
        let n = unsafe { ug_last_error_message(buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, len);
        // SAFETY: NUL-terminated within `buf` (snprintf semantics).
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(
            text.to_bytes().len(),
            len,
            "{name}: the message holds a NUL"
        );
        assert!(
            !text.to_bytes().iter().all(u8::is_ascii_whitespace),
            "{name}: a blank message"
        );
        for o in outs {
            assert!(
                o.untouched(),
                "{name} failed ({status:?}) but wrote an out-parameter"
            );
        }
    }
}

trait Untouched {
    fn untouched(&self) -> bool;
    /// After a success: false when this is a handle out-parameter passed
    /// as a valid pointer and nothing was written.
    fn written_ok(&self) -> bool;
}

impl<T> Untouched for Out<T> {
    fn untouched(&self) -> bool {
        Out::untouched(self)
    }
    fn written_ok(&self) -> bool {
        !self.handle || self.ptr.is_null() || !self.ptr.is_aligned() || !Out::untouched(self)
    }
}

/// A successful call's handle out-parameter is a non-NULL new handle.
fn handle_written<T>(out: &Out<*mut T>) -> Option<*mut T> {
    let p = out.get()?;
    assert!(!p.is_null(), "a NULL handle was returned with UG_OK");
    Some(p)
}

// ---------------------------------------------------------------------------
// The C CPU implementation and its user data.

static USER_DATA_LIVE: AtomicUsize = AtomicUsize::new(0);
static TENSORS_LIVE: AtomicUsize = AtomicUsize::new(0);

fn new_user_data(b: Behaviour) -> *mut c_void {
    USER_DATA_LIVE.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(b)).cast()
}

unsafe extern "C" fn free_user_data(p: *mut c_void) {
    assert!(!p.is_null());
    // SAFETY: made by `new_user_data`, freed once (the property checked).
    drop(unsafe { Box::from_raw(p.cast::<Behaviour>()) });
    USER_DATA_LIVE.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn cpu_impl(
    args: *const ug_cpu_arg,
    n_args: usize,
    grid: *const ug_grid,
    user_data: *mut c_void,
    message: *mut c_char,
    message_len: usize,
) -> i32 {
    assert!(!grid.is_null());
    // SAFETY: the library passes a live grid.
    let g = unsafe { *grid };
    assert!(g.grid.iter().chain(&g.block).all(|&d| d >= 1), "{g:?}");
    let args: &[ug_cpu_arg] = if n_args == 0 {
        &[]
    } else {
        // SAFETY: the library passes `n_args` arguments.
        unsafe { std::slice::from_raw_parts(args, n_args) }
    };
    for a in args {
        let size = match a.dtype {
            ug_dtype::F32 | ug_dtype::I32 | ug_dtype::U32 => 4,
            ug_dtype::F64 | ug_dtype::I64 | ug_dtype::U64 => 8,
            ug_dtype::F16 | ug_dtype::BF16 => 2,
            ug_dtype::U8 => 1,
        };
        let bytes = a.len * size;
        match a.kind {
            ug_arg_kind::Scalar => assert!(a.data.is_null() && a.data_mut.is_null() && a.len == 0),
            ug_arg_kind::ArrayIn => {
                assert!(a.data_mut.is_null());
                assert!(!a.data.is_null() || bytes == 0);
                if bytes > 0 {
                    // SAFETY: the library passes `len` readable elements.
                    let s = unsafe { std::slice::from_raw_parts(a.data.cast::<u8>(), bytes) };
                    std::hint::black_box(s.iter().fold(0u8, |x, y| x ^ y));
                }
            }
            ug_arg_kind::ArrayOut => {
                assert_eq!(a.data, a.data_mut.cast_const());
                if bytes > 0 {
                    // SAFETY: the library passes `len` writable elements.
                    let s =
                        unsafe { std::slice::from_raw_parts_mut(a.data_mut.cast::<u8>(), bytes) };
                    s.fill(0x11);
                }
            }
        }
    }
    let b = if user_data.is_null() {
        Behaviour {
            code: 0,
            write_message: false,
        }
    } else {
        // SAFETY: the `Behaviour` given with the kernel, alive while it is.
        unsafe { *user_data.cast::<Behaviour>() }
    };
    if b.write_message && message_len > 0 {
        let text = b"the fuzz kernel failed on purpose";
        let n = text.len().min(message_len - 1);
        // SAFETY: `message` holds `message_len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr().cast(), message, n) };
    }
    i32::from(b.code)
}

// ---------------------------------------------------------------------------
// The handles of one run.

#[derive(Default)]
struct World {
    contexts: Vec<*mut ug_context>,
    arrays: Vec<*mut ug_array>,
    streams: Vec<*mut ug_stream>,
    events: Vec<*mut ug_event>,
    graphs: Vec<*mut ug_graph>,
    modules: Vec<*mut ug_module>,
    kernels: Vec<*mut ug_kernel>,
    pinned: Vec<*mut ug_pinned>,
    chains: Vec<*mut ug_fallback_chain>,
    lists: Vec<*mut ug_device_list>,
    tensors: Vec<*mut DLManagedTensorVersioned>,
}

fn pick<T>(pool: &[*mut T], h: H) -> *mut T {
    match h.0 {
        Some(i) if !pool.is_empty() => pool[usize::from(i) % pool.len()],
        _ => null_mut(),
    }
}

/// Takes a handle out of its pool (for a free or a consuming call).
fn take<T>(pool: &mut Vec<*mut T>, h: H) -> *mut T {
    match h.0 {
        Some(i) if !pool.is_empty() => pool.swap_remove(usize::from(i) % pool.len()),
        _ => null_mut(),
    }
}

/// A host buffer for a call that reads or writes `needed` bytes (`None`:
/// the size overflows), and the size passed with it.
fn host_buffer(choice: Option<Bytes>, needed: Option<usize>) -> (Option<Vec<u8>>, usize) {
    const MAX: usize = 1 << 20;
    let size = match choice {
        None => return (None, needed.unwrap_or(0).min(MAX)),
        Some(Bytes::Fitting) => needed.unwrap_or(0),
        Some(Bytes::Any(Size(s))) => s,
    };
    if size <= MAX {
        (Some((0..size).map(|i| i as u8).collect()), size)
    } else {
        // Too large to allocate: pass NULL (the call must refuse it).
        (None, size)
    }
}

fn dtype_size(d: u32) -> usize {
    ug_dtype_size(d)
}

impl World {
    fn array_bytes(&self, a: *mut ug_array) -> Option<usize> {
        if a.is_null() {
            return None;
        }
        let mut n = 0usize;
        // SAFETY: a live array and a valid out-pointer.
        (unsafe { ug_array_size_bytes(a, &mut n) } == ug_status::OK).then_some(n)
    }

    #[allow(clippy::too_many_lines)]
    fn run(&mut self, call: Call) {
        // SAFETY: for every call below, handles come from the pools (live)
        // or are NULL; out-pointers are NULL or point into `Out` storage
        // that outlives the call; buffers are live and as large as passed.
        unsafe {
            match call {
                Call::ContextNew {
                    backend,
                    device,
                    out,
                } => {
                    let o = Out::handle(out);
                    let s = ug_context_new(backend.0, device.0, o.ptr);
                    check("ug_context_new", s, &[&o]);
                    self.contexts.extend(handle_written(&o));
                }
                Call::ContextDefault { out } => {
                    let o = Out::handle(out);
                    let s = ug_context_default(o.ptr);
                    check("ug_context_default", s, &[&o]);
                    self.contexts.extend(handle_written(&o));
                }
                Call::ContextFromConfig { path, out } => {
                    let file = std::env::temp_dir()
                        .join(format!("unigpu-fuzz-{}.toml", std::process::id()));
                    let p: Option<CString> = match path {
                        ConfigPath::Null => None,
                        ConfigPath::Missing => Some(c"/nonexistent/unigpu-fuzz/unigpu.toml".into()),
                        ConfigPath::NotUtf8 => {
                            Some(CString::new(b"/tmp/\xff.toml".to_vec()).expect("no NUL"))
                        }
                        ConfigPath::File(text) => {
                            std::fs::write(&file, text.0).expect("a temporary file");
                            Some(
                                CString::new(file.to_str().expect("UTF-8 temp dir"))
                                    .expect("no NUL"),
                            )
                        }
                    };
                    let o = Out::handle(out);
                    let s = ug_context_from_config_file(ptr_of(&p), o.ptr);
                    check("ug_context_from_config_file", s, &[&o]);
                    self.contexts.extend(handle_written(&o));
                }
                Call::ContextFree { ctx } => ug_context_free(take(&mut self.contexts, ctx)),
                Call::ContextBackend { ctx, out } => {
                    let o = Out::<u32>::new(out);
                    let s = ug_context_backend(pick(&self.contexts, ctx), o.ptr.cast());
                    check("ug_context_backend", s, &[&o]);
                    if let Some(b) = o.get() {
                        assert_eq!(b, ug_backend::Cpu as u32);
                    }
                }
                Call::ContextDeviceId { ctx, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_context_device_id(pick(&self.contexts, ctx), o.ptr);
                    check("ug_context_device_id", s, &[&o]);
                }
                Call::ContextDeviceName { ctx, out } => {
                    let o = Out::<*mut c_char>::new(out);
                    let s = ug_context_device_name(pick(&self.contexts, ctx), o.ptr);
                    check("ug_context_device_name", s, &[&o]);
                    if let Some(p) = handle_written(&o) {
                        std::hint::black_box(CStr::from_ptr(p).to_bytes().len());
                        ug_string_free(p);
                    }
                }
                Call::ContextMemoryInfo { ctx, free, total } => {
                    let (f, t) = (Out::<usize>::new(free), Out::<usize>::new(total));
                    let s = ug_context_memory_info(pick(&self.contexts, ctx), f.ptr, t.ptr);
                    check("ug_context_memory_info", s, &[&f, &t]);
                }
                Call::ContextSync { ctx } => {
                    let s = ug_context_sync(pick(&self.contexts, ctx));
                    check("ug_context_sync", s, &[]);
                }
                Call::ContextFallbackChain { ctx, out } => {
                    let o = Out::handle(out);
                    let s = ug_context_fallback_chain(pick(&self.contexts, ctx), o.ptr);
                    check("ug_context_fallback_chain", s, &[&o]);
                    self.chains.extend(handle_written(&o));
                }
                Call::ContextDefaultStream { ctx, out } => {
                    let o = Out::handle(out);
                    let s = ug_context_default_stream(pick(&self.contexts, ctx), o.ptr);
                    check("ug_context_default_stream", s, &[&o]);
                    self.streams.extend(handle_written(&o));
                }
                Call::ContextCreateEvent { ctx, timing, out } => {
                    let o = Out::handle(out);
                    let c = pick(&self.contexts, ctx);
                    let s = if timing {
                        ug_context_create_timing_event(c, o.ptr)
                    } else {
                        ug_context_create_event(c, o.ptr)
                    };
                    check("ug_context_create_event", s, &[&o]);
                    self.events.extend(handle_written(&o));
                }
                Call::ContextDlpackDevice { ctx, ty, id } => {
                    let (t, i) = (Out::<i32>::new(ty), Out::<i32>::new(id));
                    let s = ug_context_dlpack_device(pick(&self.contexts, ctx), t.ptr, i.ptr);
                    check("ug_context_dlpack_device", s, &[&t, &i]);
                    if let (Some(t), Some(i)) = (t.get(), i.get()) {
                        assert_eq!((t, i), (1, 0));
                    }
                }

                Call::ArrayAlloc {
                    ctx,
                    dtype,
                    len,
                    zeros,
                    unified,
                    out,
                } => {
                    let o = Out::handle(out);
                    let c = pick(&self.contexts, ctx);
                    let s = if unified {
                        ug_array_alloc_unified(c, dtype.0, len.0, o.ptr)
                    } else if zeros {
                        ug_array_zeros(c, dtype.0, len.0, o.ptr)
                    } else {
                        ug_array_alloc(c, dtype.0, len.0, o.ptr)
                    };
                    check("ug_array_alloc", s, &[&o]);
                    if let Some(a) = handle_written(&o) {
                        self.arrays.push(a);
                        let mut n = 0usize;
                        assert_eq!(ug_array_len(a, &mut n), ug_status::OK);
                        assert_eq!(n, len.0);
                    }
                }
                Call::ArrayUpload {
                    ctx,
                    dtype,
                    len,
                    data,
                    out,
                } => {
                    let needed = len
                        .0
                        .checked_mul(dtype_size(dtype.0))
                        .filter(|&b| b <= isize::MAX as usize);
                    let (buf, _) = host_buffer(data, needed);
                    // Pass the buffer only when it is as large as `len` says,
                    // or when the size overflows (which must be refused).
                    let fits = buf
                        .as_ref()
                        .is_some_and(|b| needed.is_none_or(|n| b.len() >= n));
                    let p = if fits {
                        buf.as_ref().map_or(null(), |b| b.as_ptr().cast::<c_void>())
                    } else {
                        null()
                    };
                    let o = Out::handle(out);
                    let s = ug_array_upload(pick(&self.contexts, ctx), dtype.0, p, len.0, o.ptr);
                    check("ug_array_upload", s, &[&o]);
                    if let Some(a) = handle_written(&o) {
                        self.arrays.push(a);
                        let n = needed.expect("accepted, so sized");
                        let mut back = vec![0u8; n];
                        assert_eq!(
                            ug_array_download(a, back.as_mut_ptr().cast(), n),
                            ug_status::OK
                        );
                        assert_eq!(
                            &back[..],
                            &buf.as_deref().unwrap_or(&[])[..n],
                            "upload then download"
                        );
                    }
                }
                Call::ArrayUploadFrom { array, data } => {
                    let a = pick(&self.arrays, array);
                    let (buf, size) = host_buffer(data, self.array_bytes(a));
                    let p = buf.as_ref().map_or(null(), |b| b.as_ptr().cast::<c_void>());
                    let s = ug_array_upload_from(a, p, size);
                    check("ug_array_upload_from", s, &[]);
                }
                Call::ArrayDownload { array, dst } => {
                    let a = pick(&self.arrays, array);
                    let (mut buf, size) = host_buffer(dst, self.array_bytes(a));
                    let p = buf
                        .as_mut()
                        .map_or(null_mut(), |b| b.as_mut_ptr().cast::<c_void>());
                    let s = ug_array_download(a, p, size);
                    check("ug_array_download", s, &[]);
                }
                Call::ArrayCopy { src, dst } => {
                    let s = ug_array_copy(pick(&self.arrays, src), pick(&self.arrays, dst));
                    check("ug_array_copy", s, &[]);
                }
                Call::ArrayToContext { array, ctx, out } => {
                    let o = Out::handle(out);
                    let s = ug_array_to_context(
                        pick(&self.arrays, array),
                        pick(&self.contexts, ctx),
                        o.ptr,
                    );
                    check("ug_array_to_context", s, &[&o]);
                    self.arrays.extend(handle_written(&o));
                }
                Call::ArrayLen { array, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_array_len(pick(&self.arrays, array), o.ptr);
                    check("ug_array_len", s, &[&o]);
                }
                Call::ArraySizeBytes { array, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_array_size_bytes(pick(&self.arrays, array), o.ptr);
                    check("ug_array_size_bytes", s, &[&o]);
                }
                Call::ArrayDtype { array, out } => {
                    let o = Out::<u32>::new(out);
                    let s = ug_array_dtype(pick(&self.arrays, array), o.ptr.cast());
                    check("ug_array_dtype", s, &[&o]);
                    if let Some(d) = o.get() {
                        assert!(d < 9);
                    }
                }
                Call::ArrayContext { array, out } => {
                    let o = Out::handle(out);
                    let s = ug_array_context(pick(&self.arrays, array), o.ptr);
                    check("ug_array_context", s, &[&o]);
                    self.contexts.extend(handle_written(&o));
                }
                Call::ArrayFree { array } => ug_array_free(take(&mut self.arrays, array)),
                Call::ArrayIsUnified { array, out } => {
                    let o = Out::<u8>::new(out);
                    let s = ug_array_is_unified(pick(&self.arrays, array), o.ptr.cast());
                    check("ug_array_is_unified", s, &[&o]);
                    if let Some(b) = o.get() {
                        assert!(b <= 1);
                    }
                }
                Call::ArrayHostView { array, write, out } => {
                    let a = pick(&self.arrays, array);
                    let bytes = self.array_bytes(a);
                    if write {
                        let o = Out::<*mut c_void>::new(out);
                        let s = ug_array_host_view_mut(a, o.ptr);
                        check("ug_array_host_view_mut", s, &[&o]);
                        if let (Some(p), Some(n)) = (o.get(), bytes) {
                            assert!(!p.is_null() || n == 0);
                            if n > 0 {
                                std::slice::from_raw_parts_mut(p.cast::<u8>(), n).fill(0x22);
                            }
                        }
                    } else {
                        let o = Out::<*const c_void>::new(out);
                        let s = ug_array_host_view(a, o.ptr);
                        check("ug_array_host_view", s, &[&o]);
                        if let (Some(p), Some(n)) = (o.get(), bytes) {
                            assert!(!p.is_null() || n == 0);
                            if n > 0 {
                                let v = std::slice::from_raw_parts(p.cast::<u8>(), n);
                                std::hint::black_box(v.iter().fold(0u8, |x, y| x ^ y));
                            }
                        }
                    }
                }
                Call::StreamPrefetch { stream, array, to } => {
                    let s = ug_stream_prefetch(
                        pick(&self.streams, stream),
                        pick(&self.arrays, array),
                        to.0,
                    );
                    check("ug_stream_prefetch", s, &[]);
                }

                Call::StreamCreate { ctx, out } => {
                    let o = Out::handle(out);
                    let s = ug_stream_create(pick(&self.contexts, ctx), o.ptr);
                    check("ug_stream_create", s, &[&o]);
                    self.streams.extend(handle_written(&o));
                }
                Call::StreamSync { stream } => {
                    let s = ug_stream_sync(pick(&self.streams, stream));
                    check("ug_stream_sync", s, &[]);
                }
                Call::StreamQuery { stream, out } => {
                    let o = Out::<u8>::new(out);
                    let s = ug_stream_query(pick(&self.streams, stream), o.ptr.cast());
                    check("ug_stream_query", s, &[&o]);
                }
                Call::StreamWait { stream, event } => {
                    let s = ug_stream_wait(pick(&self.streams, stream), pick(&self.events, event));
                    check("ug_stream_wait", s, &[]);
                }
                Call::StreamRecord { stream, timed, out } => {
                    let o = Out::handle(out);
                    let st = pick(&self.streams, stream);
                    let s = if timed {
                        ug_stream_record_timed(st, o.ptr)
                    } else {
                        ug_stream_record(st, o.ptr)
                    };
                    check("ug_stream_record", s, &[&o]);
                    self.events.extend(handle_written(&o));
                }
                Call::StreamFree { stream } => ug_stream_free(take(&mut self.streams, stream)),
                Call::StreamBeginCapture { stream } => {
                    let s = ug_stream_begin_capture(pick(&self.streams, stream));
                    check("ug_stream_begin_capture", s, &[]);
                }
                Call::StreamEndCapture { stream, out } => {
                    let o = Out::handle(out);
                    let s = ug_stream_end_capture(pick(&self.streams, stream), o.ptr);
                    check("ug_stream_end_capture", s, &[&o]);
                    self.graphs.extend(handle_written(&o));
                }
                Call::StreamIsCapturing { stream, out } => {
                    let o = Out::<u8>::new(out);
                    let s = ug_stream_is_capturing(pick(&self.streams, stream), o.ptr.cast());
                    check("ug_stream_is_capturing", s, &[&o]);
                }

                Call::EventSync { event } => {
                    let s = ug_event_sync(pick(&self.events, event));
                    check("ug_event_sync", s, &[]);
                }
                Call::EventQuery { event, out } => {
                    let o = Out::<u8>::new(out);
                    let s = ug_event_query(pick(&self.events, event), o.ptr.cast());
                    check("ug_event_query", s, &[&o]);
                }
                Call::EventElapsed { start, end, out } => {
                    let o = Out::<f32>::new(out);
                    let s = ug_event_elapsed_ms(
                        pick(&self.events, start),
                        pick(&self.events, end),
                        o.ptr,
                    );
                    check("ug_event_elapsed_ms", s, &[&o]);
                }
                Call::EventRecord { event, stream } => {
                    let s = ug_event_record(pick(&self.events, event), pick(&self.streams, stream));
                    check("ug_event_record", s, &[]);
                }
                Call::EventFree { event } => ug_event_free(take(&mut self.events, event)),

                Call::GraphLaunch { graph, stream } => {
                    let s = ug_graph_launch(pick(&self.graphs, graph), pick(&self.streams, stream));
                    check("ug_graph_launch", s, &[]);
                }
                Call::GraphLen { graph, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_graph_len(pick(&self.graphs, graph), o.ptr);
                    check("ug_graph_len", s, &[&o]);
                }
                Call::GraphFree { graph } => ug_graph_free(take(&mut self.graphs, graph)),

                Call::KernelCpu {
                    name,
                    with_func,
                    behaviour,
                    with_free,
                    out,
                } => {
                    let name = name.c();
                    let func: ug_cpu_kernel_fn = with_func.then_some(cpu_impl as _);
                    // Without a free function the user data is a static.
                    static STATIC_BEHAVIOUR: Behaviour = Behaviour {
                        code: 0,
                        write_message: false,
                    };
                    let (user_data, free): (*mut c_void, ug_free_fn) = if with_free {
                        (new_user_data(behaviour), Some(free_user_data as _))
                    } else {
                        ((&raw const STATIC_BEHAVIOUR).cast_mut().cast(), None)
                    };
                    let o = Out::handle(out);
                    let s = ug_kernel_cpu(ptr_of(&name), func, user_data, free, o.ptr);
                    check("ug_kernel_cpu", s, &[&o]);
                    match handle_written(&o) {
                        Some(k) => self.kernels.push(k),
                        // On failure the user data stays ours.
                        None if with_free => free_user_data(user_data),
                        None => {}
                    }
                }
                Call::KernelWithCpu {
                    kernel,
                    with_func,
                    behaviour,
                    out,
                } => {
                    let func: ug_cpu_kernel_fn = with_func.then_some(cpu_impl as _);
                    let user_data = new_user_data(behaviour);
                    let o = Out::handle(out);
                    let s = ug_kernel_with_cpu(
                        pick(&self.kernels, kernel),
                        func,
                        user_data,
                        Some(free_user_data),
                        o.ptr,
                    );
                    check("ug_kernel_with_cpu", s, &[&o]);
                    match handle_written(&o) {
                        Some(k) => self.kernels.push(k),
                        None => free_user_data(user_data),
                    }
                }
                Call::ModuleCompile {
                    ctx,
                    source,
                    options,
                    out,
                } => {
                    let src = source.0.map(|i| CString::new(SOURCES[i]).expect("no NUL"));
                    let opts: Option<Vec<Option<CString>>> =
                        options.map(|v| v.into_iter().take(4).map(Text::c).collect());
                    let ptrs: Option<Vec<*const c_char>> =
                        opts.as_ref().map(|v| v.iter().map(ptr_of).collect());
                    let (p, n) = match &ptrs {
                        Some(v) => (v.as_ptr(), v.len()),
                        None => (null(), 0),
                    };
                    let o = Out::handle(out);
                    let s = ug_module_compile_with(
                        pick(&self.contexts, ctx),
                        ptr_of(&src),
                        p,
                        n,
                        o.ptr,
                    );
                    check("ug_module_compile_with", s, &[&o]);
                    self.modules.extend(handle_written(&o));
                }
                Call::ModuleKernel { module, name, out } => {
                    let name = name.c();
                    let o = Out::handle(out);
                    let s = ug_module_kernel(pick(&self.modules, module), ptr_of(&name), o.ptr);
                    check("ug_module_kernel", s, &[&o]);
                    self.kernels.extend(handle_written(&o));
                }
                Call::ModuleFree { module } => ug_module_free(take(&mut self.modules, module)),
                Call::KernelFree { kernel } => ug_kernel_free(take(&mut self.kernels, kernel)),
                Call::KernelLaunch {
                    kernel,
                    ctx,
                    stream,
                    grid,
                    args,
                    n_args_extra,
                } => {
                    let grid = grid.map(|g| ug_grid {
                        grid: g.grid.map(u32::from),
                        block: g.block.map(u32::from),
                        shared_mem_bytes: g.shared,
                    });
                    let args: Option<Vec<ug_arg>> = args.map(|v| {
                        v.into_iter()
                            .take(8)
                            .map(|a| ug_arg {
                                kind: a.kind.0,
                                scalar: a.scalar.c(),
                                array: pick(&self.arrays, a.array),
                            })
                            .collect()
                    });
                    let (p, n) = match &args {
                        Some(v) => (v.as_ptr(), v.len()),
                        // NULL with a count must be refused, not read.
                        None => (null(), usize::from(n_args_extra)),
                    };
                    let g = grid.as_ref().map_or(null(), |g| g as *const ug_grid);
                    let s = ug_kernel_launch(
                        pick(&self.kernels, kernel),
                        pick(&self.contexts, ctx),
                        pick(&self.streams, stream),
                        g,
                        p,
                        n,
                    );
                    check("ug_kernel_launch", s, &[]);
                }

                Call::OpFill { stream, x, value } => {
                    let s = ug_op_fill(
                        pick(&self.streams, stream),
                        pick(&self.arrays, x),
                        value.c(),
                    );
                    check("ug_op_fill", s, &[]);
                }
                Call::OpBinary {
                    op,
                    stream,
                    a,
                    b,
                    out,
                } => {
                    let f = match op {
                        Binary::Add => ug_op_add,
                        Binary::Sub => ug_op_sub,
                        Binary::Mul => ug_op_mul,
                    };
                    let s = f(
                        pick(&self.streams, stream),
                        pick(&self.arrays, a),
                        pick(&self.arrays, b),
                        pick(&self.arrays, out),
                    );
                    check("ug_op_binary", s, &[]);
                }
                Call::OpUnary { op, stream, x, out } => {
                    let f = match op {
                        Unary::Relu => ug_op_relu,
                        Unary::Sigmoid => ug_op_sigmoid,
                        Unary::Tanh => ug_op_tanh,
                        Unary::Copy => ug_op_copy,
                    };
                    let s = f(
                        pick(&self.streams, stream),
                        pick(&self.arrays, x),
                        pick(&self.arrays, out),
                    );
                    check("ug_op_unary", s, &[]);
                }
                Call::OpAxpy {
                    stream,
                    alpha,
                    x,
                    y,
                } => {
                    let s = ug_op_axpy(
                        pick(&self.streams, stream),
                        alpha.c(),
                        pick(&self.arrays, x),
                        pick(&self.arrays, y),
                    );
                    check("ug_op_axpy", s, &[]);
                }
                Call::OpScale { stream, alpha, x } => {
                    let s = ug_op_scale(
                        pick(&self.streams, stream),
                        alpha.c(),
                        pick(&self.arrays, x),
                    );
                    check("ug_op_scale", s, &[]);
                }
                Call::OpReduce { op, stream, x, out } => {
                    let o = Out::<ug_scalar>::new(out);
                    let f = match op {
                        Reduce::Sum => ug_op_sum,
                        Reduce::Max => ug_op_max,
                    };
                    let s = f(pick(&self.streams, stream), pick(&self.arrays, x), o.ptr);
                    check("ug_op_reduce", s, &[&o]);
                }
                Call::OpDot { stream, x, y, out } => {
                    let o = Out::<ug_scalar>::new(out);
                    let s = ug_op_dot(
                        pick(&self.streams, stream),
                        pick(&self.arrays, x),
                        pick(&self.arrays, y),
                        o.ptr,
                    );
                    check("ug_op_dot", s, &[&o]);
                }
                Call::OpMatmul {
                    stream,
                    a,
                    b,
                    c,
                    m,
                    k,
                    n,
                } => {
                    let s = ug_op_matmul(
                        pick(&self.streams, stream),
                        pick(&self.arrays, a),
                        pick(&self.arrays, b),
                        pick(&self.arrays, c),
                        m.0,
                        k.0,
                        n.0,
                    );
                    check("ug_op_matmul", s, &[]);
                }

                Call::PinnedNew {
                    ctx,
                    dtype,
                    len,
                    out,
                } => {
                    let o = Out::handle(out);
                    let s = ug_pinned_new(pick(&self.contexts, ctx), dtype.0, len.0, o.ptr);
                    check("ug_pinned_new", s, &[&o]);
                    self.pinned.extend(handle_written(&o));
                }
                Call::PinnedLen { pinned, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_pinned_len(pick(&self.pinned, pinned), o.ptr);
                    check("ug_pinned_len", s, &[&o]);
                }
                Call::PinnedDtype { pinned, out } => {
                    let o = Out::<u32>::new(out);
                    let s = ug_pinned_dtype(pick(&self.pinned, pinned), o.ptr.cast());
                    check("ug_pinned_dtype", s, &[&o]);
                }
                Call::PinnedData { pinned, write, out } => {
                    let p = pick(&self.pinned, pinned);
                    let bytes = if p.is_null() {
                        0
                    } else {
                        let (mut len, mut dtype) = (0usize, 0u32);
                        assert_eq!(ug_pinned_len(p, &mut len), ug_status::OK);
                        assert_eq!(ug_pinned_dtype(p, (&raw mut dtype).cast()), ug_status::OK);
                        len * dtype_size(dtype)
                    };
                    if write {
                        let o = Out::<*mut c_void>::new(out);
                        let s = ug_pinned_data_mut(p, o.ptr);
                        check("ug_pinned_data_mut", s, &[&o]);
                        if let Some(d) = o.get().filter(|_| bytes > 0) {
                            std::slice::from_raw_parts_mut(d.cast::<u8>(), bytes).fill(0x33);
                        }
                    } else {
                        let o = Out::<*const c_void>::new(out);
                        let s = ug_pinned_data(p, o.ptr);
                        check("ug_pinned_data", s, &[&o]);
                        if let Some(d) = o.get().filter(|_| bytes > 0) {
                            let v = std::slice::from_raw_parts(d.cast::<u8>(), bytes);
                            std::hint::black_box(v.iter().fold(0u8, |x, y| x ^ y));
                        }
                    }
                }
                Call::PinnedUpload { stream, src, dst } => {
                    let s = ug_stream_upload_pinned(
                        pick(&self.streams, stream),
                        pick(&self.pinned, src),
                        pick(&self.arrays, dst),
                    );
                    check("ug_stream_upload_pinned", s, &[]);
                }
                Call::PinnedDownload { stream, src, dst } => {
                    let s = ug_stream_download_pinned(
                        pick(&self.streams, stream),
                        pick(&self.arrays, src),
                        pick(&self.pinned, dst),
                    );
                    check("ug_stream_download_pinned", s, &[]);
                }
                Call::PinnedFree { pinned } => ug_pinned_free(take(&mut self.pinned, pinned)),

                Call::ToDlpack { array, stream, out } => {
                    let o = Out::handle(out);
                    let s = ug_array_to_dlpack(pick(&self.arrays, array), stream.0, o.ptr);
                    check("ug_array_to_dlpack", s, &[&o]);
                    if let Some(t) = handle_written(&o) {
                        TENSORS_LIVE.fetch_add(1, Ordering::SeqCst);
                        self.tensors.push(t);
                    }
                }
                Call::FromDlpack { ctx, tensor, out } => {
                    // Consumed in every case once not NULL.
                    let t = take(&mut self.tensors, tensor);
                    let o = Out::handle(out);
                    let s = ug_array_from_dlpack(pick(&self.contexts, ctx), t, o.ptr);
                    check("ug_array_from_dlpack", s, &[&o]);
                    if !t.is_null() {
                        TENSORS_LIVE.fetch_sub(1, Ordering::SeqCst);
                    }
                    self.arrays.extend(handle_written(&o));
                }
                Call::DeleteTensor { tensor } => {
                    let t = take(&mut self.tensors, tensor);
                    if !t.is_null() {
                        delete_tensor(t);
                    }
                }

                Call::Probe { out } => {
                    let o = Out::handle(out);
                    let s = ug_probe(o.ptr);
                    check("ug_probe", s, &[&o]);
                    self.chains.extend(handle_written(&o));
                }
                Call::ChainLen { chain, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_fallback_chain_len(pick(&self.chains, chain), o.ptr);
                    check("ug_fallback_chain_len", s, &[&o]);
                }
                Call::ChainGet {
                    chain,
                    index,
                    backend,
                    outcome,
                    reason,
                } => {
                    let (b, oc, r) = (
                        Out::<u32>::new(backend),
                        Out::<u32>::new(outcome),
                        Out::<*const c_char>::new(reason),
                    );
                    let s = ug_fallback_chain_get(
                        pick(&self.chains, chain),
                        index.0,
                        b.ptr.cast(),
                        oc.ptr.cast(),
                        r.ptr,
                    );
                    check("ug_fallback_chain_get", s, &[&b, &oc, &r]);
                    if let Some(r) = r.get() {
                        assert!(!r.is_null());
                        std::hint::black_box(CStr::from_ptr(r).to_bytes().len());
                    }
                }
                Call::ChainFree { chain } => ug_fallback_chain_free(take(&mut self.chains, chain)),
                Call::DeviceListNew { backend, out } => {
                    let o = Out::handle(out);
                    let s = ug_device_list_new(backend.0, o.ptr);
                    check("ug_device_list_new", s, &[&o]);
                    self.lists.extend(handle_written(&o));
                }
                Call::DeviceListLen { list, out } => {
                    let o = Out::<usize>::new(out);
                    let s = ug_device_list_len(pick(&self.lists, list), o.ptr);
                    check("ug_device_list_len", s, &[&o]);
                }
                Call::DeviceListGet { list, index, out } => {
                    let o = Out::<ug_device_info>::new(out);
                    let s = ug_device_list_get(pick(&self.lists, list), index.0, o.ptr);
                    check("ug_device_list_get", s, &[&o]);
                    if let Some(info) = o.get() {
                        assert!(!info.name.is_null());
                        std::hint::black_box(CStr::from_ptr(info.name).to_bytes().len());
                    }
                }
                Call::DeviceListFree { list } => ug_device_list_free(take(&mut self.lists, list)),

                Call::ScalarFromF64 { dtype, value, out } => {
                    let o = Out::<ug_scalar>::new(out);
                    let s = ug_scalar_from_f64(dtype.0, value, o.ptr);
                    check("ug_scalar_from_f64", s, &[&o]);
                    if let Some(sc) = o.get() {
                        assert_eq!(sc.dtype, dtype.0);
                    }
                }
                Call::ScalarToF64 { scalar, out } => {
                    let sc = scalar.map(ScalarSpec::c);
                    let p = sc.as_ref().map_or(null(), |s| s as *const ug_scalar);
                    let o = Out::<f64>::new(out);
                    let s = ug_scalar_to_f64(p, o.ptr);
                    check("ug_scalar_to_f64", s, &[&o]);
                }
                Call::DtypeSize { dtype } => {
                    let n = ug_dtype_size(dtype.0);
                    assert!(matches!(n, 1 | 2 | 4 | 8) == (dtype.0 < 9));
                }
                Call::StatusName { status } => {
                    let p = ug_status_name(status);
                    assert!(!p.is_null());
                    let name = CStr::from_ptr(p).to_str().expect("ASCII");
                    assert!(name.starts_with("UG_"));
                }
                Call::Version => {
                    let v = CStr::from_ptr(ug_version()).to_str().expect("ASCII");
                    let parts = format!(
                        "{}.{}.{}",
                        ug_version_major(),
                        ug_version_minor(),
                        ug_version_patch()
                    );
                    assert!(v.starts_with(&parts), "{v} vs {parts}");
                }
                Call::LastError { len, with_buf } => {
                    let full = last_error_len();
                    let len = usize::from(len);
                    let mut buf = vec![SENTINEL as c_char; len];
                    let p = if with_buf {
                        buf.as_mut_ptr()
                    } else {
                        null_mut()
                    };
                    let n = ug_last_error_message(p, if with_buf { len } else { 0 });
                    assert_eq!(n, full);
                    if with_buf && len > 0 {
                        let copied = full.min(len - 1);
                        assert_eq!(buf[copied], 0, "not NUL-terminated");
                        assert!(
                            buf[copied + 1..].iter().all(|&b| b == SENTINEL as c_char),
                            "wrote past the NUL"
                        );
                    }
                }
            }
        }
    }

    /// Syncs everything, frees every handle and checks that all user data
    /// and DLPack tensors are released.
    fn finish(&mut self) {
        if trace() {
            eprintln!("finish: sync and free everything");
        }
        // SAFETY: every pointer in the pools is live; each is freed once.
        unsafe {
            for &s in &self.streams {
                let _ = ug_stream_sync(s);
            }
            for &c in &self.contexts {
                let _ = ug_context_sync(c);
            }
            for t in self.tensors.drain(..) {
                delete_tensor(t);
            }
            self.graphs.drain(..).for_each(|p| ug_graph_free(p));
            self.events.drain(..).for_each(|p| ug_event_free(p));
            self.kernels.drain(..).for_each(|p| ug_kernel_free(p));
            self.modules.drain(..).for_each(|p| ug_module_free(p));
            self.arrays.drain(..).for_each(|p| ug_array_free(p));
            self.pinned.drain(..).for_each(|p| ug_pinned_free(p));
            self.streams.drain(..).for_each(|p| ug_stream_free(p));
            self.chains
                .drain(..)
                .for_each(|p| ug_fallback_chain_free(p));
            self.lists.drain(..).for_each(|p| ug_device_list_free(p));
            self.contexts.drain(..).for_each(|p| ug_context_free(p));
        }
        // Queued work may release its kernels just after a sync returns.
        let deadline = Instant::now() + Duration::from_secs(5);
        while USER_DATA_LIVE.load(Ordering::SeqCst) != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(50));
        }
        assert_eq!(
            USER_DATA_LIVE.load(Ordering::SeqCst),
            0,
            "user data not freed (or freed twice)"
        );
        assert_eq!(
            TENSORS_LIVE.load(Ordering::SeqCst),
            0,
            "DLPack tensors not deleted"
        );
    }
}

/// Calls an exported tensor's deleter (the consumer's duty).
///
/// # Safety
/// `t` is a live tensor from `ug_array_to_dlpack`, not deleted before.
unsafe fn delete_tensor(t: *mut DLManagedTensorVersioned) {
    // SAFETY: live per the contract; the deleter is called once, here.
    unsafe {
        if let Some(d) = (*t).deleter {
            d(t);
        }
    }
    TENSORS_LIVE.fetch_sub(1, Ordering::SeqCst);
}

fuzz_target!(
    init: {
        // SAFETY: set once, before any other thread of this process reads
        // the environment.
        unsafe {
            std::env::set_var("UNIGPU_BACKEND", "cpu");
            std::env::remove_var("UNIGPU_DEVICE");
            std::env::remove_var("UNIGPU_CONFIG");
        }
    },
    |data: &[u8]| {
        let mut u = Unstructured::new(data);
        let mut world = World::default();
        // Most runs start with a context, a stream and two arrays to act on.
        if u.ratio(3, 4).unwrap_or(false) {
            let ctx = H(Some(0));
            world.run(Call::ContextNew { backend: EnumVal(ug_backend::Cpu as u32), device: Size(0), out: OutKind::Valid });
            world.run(Call::StreamCreate { ctx, out: OutKind::Valid });
            for dtype in [0, 1] {
                world.run(Call::ArrayAlloc { ctx, dtype: EnumVal(dtype), len: Size(8), zeros: true, unified: dtype == 1, out: OutKind::Valid });
            }
        }
        for _ in 0..64 {
            match Call::arbitrary(&mut u) {
                Ok(call) => {
                    if trace() {
                        eprintln!("{call:?}");
                    }
                    world.run(call)
                }
                Err(_) => break,
            }
        }
        world.finish();
    }
);
