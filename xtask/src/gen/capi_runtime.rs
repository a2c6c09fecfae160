//! Fixed Rust helpers emitted into every generated `capi.rs` (tier 2), each
//! only when the spec needs it. Kept as plain source text so that they read
//! like the code they become; rustfmt formats the result.

/// Failure, the per-thread last error, and the panic boundary (`guard`).
pub const PRELUDE: &str = r#"/// A failed call: its status and message.
struct Failure {
    status: Status,
    message: String,
}

impl Failure {
    fn new(status: Status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl From<safe::Error> for Failure {
    fn from(e: safe::Error) -> Self {
        Self::new(Status::Exception, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(message: &str) {
    // NUL bytes would truncate the C string; show them instead.
    let message = message.replace('\0', "\\0");
    // try_with: during thread teardown the message is dropped, not a panic.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = message);
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a non-string panic payload"
    }
}

/// Runs an export's body: catches panics, records failures, clears the
/// message on success.
fn guard(call: impl FnOnce() -> Result<(), Failure>) -> Status {
    let failure = match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(())) => {
            set_last_error("");
            return Status::Ok;
        }
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::new(
            Status::Panic,
            format!(
                "a Rust panic was caught at the C boundary: {}",
                panic_message(payload.as_ref())
            ),
        ),
    };
    set_last_error(&failure.message);
    failure.status
}

fn null(what: &str) -> Failure {
    Failure::new(Status::NullArgument, format!("`{what}` is NULL"))
}"#;

/// Out-parameter check: non-NULL and aligned.
pub const OUT_ARG: &str = r#"fn out_arg<T>(p: *mut T, what: &str) -> Result<*mut T, Failure> {
    if p.is_null() {
        Err(null(what))
    } else if !p.is_aligned() {
        Err(Failure::new(
            Status::InvalidArgument,
            format!("`{what}` is misaligned"),
        ))
    } else {
        Ok(p)
    }
}"#;

/// A shared handle argument.
pub const HANDLE_REF: &str = r#"/// # Safety
/// `p` is NULL or points to a live value not mutably borrowed for `'a`.
unsafe fn handle_ref<'a, T>(p: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: guaranteed by the caller; NULL becomes `None`.
    unsafe { p.as_ref() }.ok_or_else(|| null(what))
}"#;

/// A mutable handle argument.
pub const HANDLE_MUT: &str = r#"/// # Safety
/// `p` is NULL or points to a live value not otherwise borrowed for `'a`.
unsafe fn handle_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    // SAFETY: guaranteed by the caller; NULL becomes `None`.
    unsafe { p.as_mut() }.ok_or_else(|| null(what))
}"#;

/// A NUL-terminated UTF-8 string argument.
pub const STR_ARG: &str = r#"/// # Safety
/// `p` is NULL or a NUL-terminated string live for `'a`.
unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-NULL, and NUL-terminated per the caller's guarantee.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|e| {
        Failure::new(
            Status::InvalidUtf8,
            format!("`{what}` is not valid UTF-8: {e}"),
        )
    })
}"#;

/// Checks shared by the slice conversions.
pub const CHECK_BUFFER: &str = r#"fn check_buffer<T>(p: *const T, len: usize, what: &str) -> Result<(), Failure> {
    if p.is_null() {
        Err(null(what))
    } else if !p.is_aligned() {
        Err(Failure::new(
            Status::InvalidArgument,
            format!("`{what}` is misaligned"),
        ))
    } else if len
        .checked_mul(size_of::<T>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        Err(Failure::new(
            Status::InvalidArgument,
            format!("`{what}_len` is too large"),
        ))
    } else {
        Ok(())
    }
}"#;

/// An input slice argument (`p`, `len`).
pub const SLICE_ARG: &str = r#"/// # Safety
/// Unless `len` is 0, `p` is NULL or valid for `len` reads of `T` during `'a`.
unsafe fn slice_arg<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    check_buffer(p, len, what)?;
    // SAFETY: non-NULL, aligned, size in range (checked); valid per the caller.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}"#;

/// An output slice argument (`p`, `len`).
pub const SLICE_MUT_ARG: &str = r#"/// # Safety
/// Unless `len` is 0, `p` is NULL or valid for `len` writes of `T` during `'a`,
/// and not otherwise accessed meanwhile.
unsafe fn slice_mut_arg<'a, T>(p: *mut T, len: usize, what: &str) -> Result<&'a mut [T], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_buffer(p, len, what)?;
    // SAFETY: non-NULL, aligned, size in range (checked); valid and unaliased per the caller.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}"#;

/// Two handle arguments of one type, one mutable, must differ.
pub const DISTINCT: &str = r#"fn distinct<T>(a: *const T, b: *const T, a_name: &str, b_name: &str) -> Result<(), Failure> {
    if !a.is_null() && std::ptr::eq(a, b) {
        return Err(Failure::new(
            Status::InvalidArgument,
            format!("`{a_name}` and `{b_name}` are the same handle, and one of them is mutable"),
        ));
    }
    Ok(())
}"#;

/// A written slice must not overlap another slice argument.
pub const DISJOINT: &str = r#"fn disjoint<A, B>(
    a: *const A,
    a_len: usize,
    b: *const B,
    b_len: usize,
    a_name: &str,
    b_name: &str,
) -> Result<(), Failure> {
    let range =
        |p: usize, bytes: Option<usize>| bytes.and_then(|n| p.checked_add(n)).map(|end| (p, end));
    let a_bytes = a_len.checked_mul(size_of::<A>());
    let b_bytes = b_len.checked_mul(size_of::<B>());
    if a_bytes == Some(0) || b_bytes == Some(0) {
        return Ok(());
    }
    match (range(a.addr(), a_bytes), range(b.addr(), b_bytes)) {
        (Some((a0, a1)), Some((b0, b1))) if a1 <= b0 || b1 <= a0 => Ok(()),
        (Some(_), Some(_)) => Err(Failure::new(
            Status::InvalidArgument,
            format!("`{a_name}` and `{b_name}` overlap, and one of them is written"),
        )),
        _ => Err(Failure::new(
            Status::InvalidArgument,
            format!("`{a_name}` or `{b_name}` is too large"),
        )),
    }
}"#;
