//! Unit tests of the runtime: the last-error contract, the panic boundary,
//! the argument checks, and one slot shared by several status enums.

use std::ffi::{CStr, c_char};

use rand::Rng;

use crate::*;

/// A status enum shaped like the generated tiers' (`ug_fixture_status`, …).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    Ok = 0,
    NullArgument = 1,
    InvalidArgument = 2,
    InvalidUtf8 = 3,
    Exception = 4,
    Panic = 5,
}

impl StatusCode for Tier {
    const OK: Self = Self::Ok;
    const NULL_ARGUMENT: Self = Self::NullArgument;
    const INVALID_ARGUMENT: Self = Self::InvalidArgument;
    const INVALID_UTF8: Self = Self::InvalidUtf8;
    const PANIC: Self = Self::Panic;
}

/// A second C API with other values and codes of its own (like `ug_status`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Other {
    Success = 0,
    OutOfMemory = 7,
    Null = -1,
    Invalid = -2,
    Utf8 = -3,
    Bug = -100,
}

impl StatusCode for Other {
    const OK: Self = Self::Success;
    const NULL_ARGUMENT: Self = Self::Null;
    const INVALID_ARGUMENT: Self = Self::Invalid;
    const INVALID_UTF8: Self = Self::Utf8;
    const PANIC: Self = Self::Bug;
}

/// Calls `last_error_message` into a fresh buffer of `len` bytes followed by
/// 8 guard bytes; returns (result, buffer including the guard bytes).
fn copy_out(len: usize) -> (usize, Vec<u8>) {
    let mut buf = vec![0xAAu8; len + 8];
    // SAFETY: `buf` is valid for `len` (+ 8) writes.
    let n = unsafe { last_error_message(buf.as_mut_ptr().cast::<c_char>(), len) };
    (n, buf)
}

#[test]
fn last_error_message_truncates_like_snprintf_at_random_lengths() {
    let mut rng = rand::rng();
    let alphabet: Vec<char> = "abcXYZ 019_-:`é漢🦀".chars().collect();
    for _ in 0..500 {
        let chars = rng.random_range(0..200);
        let message: String = (0..chars)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        set_last_error(&message);
        let full = message.len();
        assert_eq!(last_error(), message);

        // The length query: NULL with any length writes nothing.
        // SAFETY: NULL is allowed with any `len`.
        let queried =
            unsafe { last_error_message(std::ptr::null_mut(), rng.random::<u64>() as usize) };
        assert_eq!(queried, full);

        let len = rng.random_range(0..full + 10);
        let (n, buf) = copy_out(len);
        assert_eq!(n, full, "returns the full length whatever `len` is");
        if len == 0 {
            assert!(buf.iter().all(|&b| b == 0xAA), "len 0 writes nothing");
            continue;
        }
        let copied = full.min(len - 1);
        assert_eq!(&buf[..copied], &message.as_bytes()[..copied]);
        assert_eq!(buf[copied], 0, "always NUL-terminated");
        assert!(
            buf[copied + 1..].iter().all(|&b| b == 0xAA),
            "nothing written past the NUL (len {len}, message {full} bytes)"
        );
    }
    clear_last_error();
    let (n, buf) = copy_out(4);
    assert_eq!(n, 0, "no message after a success");
    assert_eq!(buf[0], 0);
}

#[test]
fn nul_bytes_in_a_message_are_shown_not_truncating() {
    set_last_error("a\0b\0");
    assert_eq!(last_error(), "a\\0b\\0");
    let (n, buf) = copy_out(64);
    assert_eq!(n, 6);
    let s = CStr::from_bytes_until_nul(&buf).expect("NUL-terminated");
    assert_eq!(s.to_bytes(), b"a\\0b\\0");
}

#[test]
fn guard_turns_a_panic_into_the_panic_status_and_its_message() {
    let status = guard::<Tier>(|| panic!("boom {}", 42));
    assert_eq!(status, Tier::Panic);
    assert_eq!(
        last_error(),
        "a Rust panic was caught at the C boundary: boom 42"
    );
    let status = guard::<Other>(|| std::panic::panic_any(7u8));
    assert_eq!(status, Other::Bug);
    assert_eq!(
        last_error(),
        "a Rust panic was caught at the C boundary: a non-string panic payload"
    );
}

#[test]
fn guard_records_failures_and_clears_on_success() {
    let status = guard(|| Err(Failure::new(Tier::Exception, "thrown: what()")));
    assert_eq!(status, Tier::Exception);
    assert_eq!(last_error(), "thrown: what()");
    assert_eq!(guard::<Tier>(|| Ok(())), Tier::Ok);
    assert_eq!(last_error(), "");
    let status = guard(|| Err(Failure::new(Other::OutOfMemory, "out of memory")));
    assert_eq!(status, Other::OutOfMemory);
    assert_eq!(last_error(), "out of memory");
}

#[test]
fn one_slot_is_shared_by_every_status_enum_and_is_per_thread() {
    assert_eq!(
        guard(|| Err(Failure::<Tier>::null("x"))),
        Tier::NullArgument
    );
    assert_eq!(last_error(), "`x` is NULL");
    let elsewhere = std::thread::spawn(last_error).join().expect("thread");
    assert_eq!(elsewhere, "", "another thread has its own slot");
    // A success through another C API clears the same slot.
    assert_eq!(guard::<Other>(|| Ok(())), Other::Success);
    assert_eq!(last_error(), "");
}

#[test]
fn slice_checks_reject_null_misaligned_and_oversized() {
    let words = [0u64; 4];
    let p = words.as_ptr();
    // Empty slices need no pointer at all.
    // SAFETY: `len` is 0.
    let empty = unsafe { slice_arg::<Tier, u64>(std::ptr::null(), 0, "v") };
    assert_eq!(empty, Ok(&[][..]));
    // SAFETY: `len` is 0.
    let empty = unsafe { slice_mut_arg::<Tier, u64>(std::ptr::null_mut(), 0, "v") };
    assert!(empty.is_ok_and(|s| s.is_empty()));

    // SAFETY: NULL is rejected before any access.
    let null = unsafe { slice_arg::<Tier, u64>(std::ptr::null(), 3, "values") };
    assert_eq!(
        null,
        Err(Failure::new(Tier::NullArgument, "`values` is NULL"))
    );
    // SAFETY: NULL is rejected before any access.
    let null = unsafe { slice_mut_arg::<Other, u64>(std::ptr::null_mut(), 3, "dest") };
    assert_eq!(null, Err(Failure::new(Other::Null, "`dest` is NULL")));

    let misaligned = p.cast::<u8>().wrapping_add(1).cast::<u64>();
    // SAFETY: a misaligned pointer is rejected before any access.
    let bad = unsafe { slice_arg::<Tier, u64>(misaligned, 2, "values") };
    assert_eq!(
        bad,
        Err(Failure::new(
            Tier::InvalidArgument,
            "`values` is misaligned"
        ))
    );

    let mut rng = rand::rng();
    for _ in 0..100 {
        // Anything over isize::MAX bytes, including lengths whose byte size
        // overflows usize.
        let len = rng.random_range(isize::MAX as usize / 8 + 1..=usize::MAX);
        // SAFETY: an oversized length is rejected before any access.
        let big = unsafe { slice_arg::<Tier, u64>(p, len, "values") };
        assert_eq!(
            big,
            Err(Failure::new(
                Tier::InvalidArgument,
                "`values_len` is too large"
            ))
        );
    }
    // The largest length that fits is accepted by the check (not by memory).
    assert!(check_buffer::<Tier, u64>(p, isize::MAX as usize / 8, "values").is_ok());

    // SAFETY: `words` is valid for 4 reads.
    let ok = unsafe { slice_arg::<Tier, u64>(p, 4, "values") };
    assert_eq!(ok, Ok(&words[..]));
}

#[test]
fn pointer_and_string_checks() {
    let mut x = 0u32;
    assert_eq!(out_arg::<Tier, u32>(&mut x, "out"), Ok(&raw mut x));
    assert_eq!(
        out_arg::<Tier, u32>(std::ptr::null_mut(), "out"),
        Err(Failure::new(Tier::NullArgument, "`out` is NULL"))
    );
    // SAFETY: NULL is rejected before any access.
    let h = unsafe { handle_ref::<Tier, u32>(std::ptr::null(), "self") };
    assert_eq!(h, Err(Failure::new(Tier::NullArgument, "`self` is NULL")));
    // SAFETY: `x` is live and not borrowed elsewhere.
    let h = unsafe { handle_mut::<Tier, u32>(&mut x, "self") };
    assert_eq!(h, Ok(&mut 0));

    let bad = [0xffu8, 0xfe, 0];
    // SAFETY: a NUL-terminated byte string.
    let s = unsafe { str_arg::<Other>(bad.as_ptr().cast(), "name") };
    let f = s.expect_err("not UTF-8");
    assert_eq!(f.status(), Other::Utf8);
    assert!(
        f.message().starts_with("`name` is not valid UTF-8: "),
        "{f:?}"
    );
    let good = c"héllo";
    // SAFETY: a NUL-terminated string.
    let s = unsafe { str_arg::<Other>(good.as_ptr(), "name") };
    assert_eq!(s, Ok("héllo"));

    assert!(distinct::<Tier, u32>(&x, &x, "self", "other").is_err());
    assert!(distinct::<Tier, u32>(std::ptr::null(), std::ptr::null(), "a", "b").is_ok());
    let y = 0u32;
    assert!(distinct::<Tier, u32>(&x, &y, "self", "other").is_ok());

    let buf = [0f32; 64];
    let p = buf.as_ptr();
    let overlap = disjoint::<Tier, f32, f32>(p, 32, p.wrapping_add(16), 32, "src", "dst");
    assert_eq!(
        overlap,
        Err(Failure::new(
            Tier::InvalidArgument,
            "`src` and `dst` overlap, and one of them is written"
        ))
    );
    assert!(disjoint::<Tier, f32, f32>(p, 32, p.wrapping_add(32), 32, "src", "dst").is_ok());
    assert!(disjoint::<Tier, f32, f32>(p, 64, p, 0, "src", "dst").is_ok());
    assert!(disjoint::<Tier, f32, u8>(p, usize::MAX, p.cast(), 1, "src", "dst").is_err());
}

#[test]
fn handles_arrays_and_strings_round_trip_and_frees_accept_null() {
    let h = into_handle(vec![1, 2, 3]);
    // SAFETY: from `into_handle`, freed once.
    unsafe { free_handle(h, "thing") };
    let (ptr, len) = into_array(vec![5u8; 10]);
    assert_eq!(len, 10);
    // SAFETY: from `into_array` with its length, freed once.
    unsafe { free_array(ptr, len) };
    let (ptr, len) = into_array(Vec::<i64>::new());
    assert!(!ptr.is_null());
    // SAFETY: as above.
    unsafe { free_array(ptr, len) };
    let s = c_string::<Tier>("text".into(), "ug_fixture_version").expect("no NUL");
    // SAFETY: from `CString::into_raw`, freed once.
    unsafe { free_string(s.into_raw()) };
    assert_eq!(
        c_string::<Tier>("a\0b".into(), "ug_fixture_version"),
        Err(Failure::new(
            Tier::InvalidArgument,
            "ug_fixture_version: the returned string contains a NUL byte"
        ))
    );
    // SAFETY: NULL is a no-op.
    unsafe {
        free_handle::<u32>(std::ptr::null_mut(), "thing");
        free_array::<u8>(std::ptr::null_mut(), 3);
        free_string(std::ptr::null_mut());
    }
}

#[test]
fn frees_keep_the_message_and_catch_a_panicking_destructor() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("destructor failed");
        }
    }
    set_last_error("an earlier failure");
    // SAFETY: from `into_handle`, freed once.
    unsafe { free_handle(into_handle(1u64), "ug_fixture_counter") };
    assert_eq!(last_error(), "an earlier failure", "frees leave it alone");
    // SAFETY: from `into_handle`, freed once.
    unsafe { free_handle(into_handle(Bomb), "ug_fixture_counter") };
    assert_eq!(
        last_error(),
        "a Rust panic was caught while freeing a ug_fixture_counter: destructor failed"
    );
}
