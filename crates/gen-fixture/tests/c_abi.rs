//! The generated C ABI (tier 2) called from Rust: status codes, out-params
//! written only on success, NULL checks, last-error messages, aliasing and
//! alignment checks, and frees that accept NULL.

use rand::Rng;
use std::ffi::{CStr, CString, c_char};
use unigpu_gen_fixture::Counter;
use unigpu_gen_fixture::generated::capi::{self, Status};

fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: `buf` is valid for `buf.len()` writes.
    let n = unsafe { capi::fx_last_error_message(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: the function NUL-terminates within `buf`.
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(n, s.len());
    s
}

fn make(name: &str, start: i64) -> *mut Counter {
    let name = CString::new(name).expect("no NUL");
    let mut out: *mut Counter = std::ptr::null_mut();
    // SAFETY: `name` is NUL-terminated and `out` valid for writes.
    let result = unsafe { capi::fx_make_counter(name.as_ptr(), start, &mut out) };
    assert_eq!(result, Status::Ok);
    assert!(!out.is_null());
    out
}

fn value(c: *const Counter) -> i64 {
    let mut v = 0;
    // SAFETY: `c` is a live handle and `v` valid for writes.
    assert_eq!(unsafe { capi::fx_counter_value(c, &mut v) }, Status::Ok);
    v
}

#[test]
fn failure_writes_no_out_param_and_sets_the_message() {
    let mut rng = rand::rng();
    let start = rng.random_range(1..1_000_000);
    let c = make("c", start);
    let other = make("other", 0);
    let sentinel: i64 = rng.random();
    let mut out = sentinel;
    // SAFETY: live handle, valid out pointer.
    let result = unsafe { capi::fx_counter_divide(c, 0, &mut out) };
    assert_eq!(result, Status::Exception);
    assert_eq!(out, sentinel);
    assert_eq!(
        last_error(),
        "fixture: Counter::divide: Counter::divide_by: division by zero"
    );
    // Freeing another handle (cleanup before reporting) keeps the message.
    // SAFETY: `other` is live and not used afterwards.
    unsafe { capi::fx_counter_free(other) };
    assert!(last_error().contains("division by zero"));
    assert_eq!(value(c), start);
    assert_eq!(last_error(), "", "a successful call clears the message");

    // Truncation and the length query behave like snprintf.
    // SAFETY: as above.
    let result = unsafe { capi::fx_counter_divide(c, 0, &mut out) };
    assert_eq!(result, Status::Exception);
    // SAFETY: NULL buffer is allowed.
    let full = unsafe { capi::fx_last_error_message(std::ptr::null_mut(), 0) };
    let mut small = [0x7f as c_char; 8];
    // SAFETY: `small` is valid for 8 writes.
    let result = unsafe { capi::fx_last_error_message(small.as_mut_ptr(), small.len()) };
    assert_eq!(result, full);
    // SAFETY: NUL-terminated within `small`.
    let truncated = unsafe { CStr::from_ptr(small.as_ptr()) };
    assert_eq!(truncated.to_bytes(), b"fixture");
    // SAFETY: `c` is live and not used afterwards.
    unsafe { capi::fx_counter_free(c) };
}

#[test]
fn every_pointer_is_null_checked() {
    let c = make("n", 1);
    let mut v = 0i64;
    let mut handle: *mut Counter = std::ptr::null_mut();
    let mut s: *mut c_char = std::ptr::null_mut();
    // SAFETY: every call passes NULL for one pointer and valid values otherwise.
    unsafe {
        assert_eq!(
            capi::fx_counter_value(std::ptr::null(), &mut v),
            Status::NullArgument
        );
        assert_eq!(last_error(), "`self` is NULL");
        assert_eq!(
            capi::fx_counter_value(c, std::ptr::null_mut()),
            Status::NullArgument
        );
        assert_eq!(last_error(), "`out` is NULL");
        assert_eq!(
            capi::fx_make_counter(std::ptr::null(), 1, &mut handle),
            Status::NullArgument
        );
        assert_eq!(last_error(), "`name` is NULL");
        assert!(handle.is_null());
        assert_eq!(
            capi::fx_sum_values(c, std::ptr::null(), &mut v),
            Status::NullArgument
        );
        assert_eq!(last_error(), "`b` is NULL");
        assert_eq!(
            capi::fx_counter_add_all(c, std::ptr::null(), 2, &mut v),
            Status::NullArgument
        );
        assert_eq!(last_error(), "`values` is NULL");
        assert_eq!(
            capi::fx_upper(std::ptr::null(), &mut s),
            Status::NullArgument
        );
        assert!(s.is_null());
        // An empty slice may be NULL.
        assert_eq!(
            capi::fx_counter_add_all(c, std::ptr::null(), 0, &mut v),
            Status::Ok
        );
        assert_eq!(v, 1);
        // Frees accept NULL.
        capi::fx_counter_free(std::ptr::null_mut());
        capi::fx_string_free(std::ptr::null_mut());
        capi::fx_i64_array_free(std::ptr::null_mut(), 3);
        capi::fx_u8_array_free(std::ptr::null_mut(), 0);
        capi::fx_counter_free(c);
    }
}

#[test]
fn strings_arrays_and_handles_come_out_owned() {
    let mut rng = rand::rng();
    let start = rng.random_range(-1000..1000);
    let c = make("héllo wörld", start);
    let deltas: Vec<i64> = (0..rng.random_range(1..100))
        .map(|_| rng.random_range(-1000..1000))
        .collect();
    let mut v = 0;
    // SAFETY: live handle; `deltas` valid for its length; `v` valid for writes.
    let result = unsafe { capi::fx_counter_add_all(c, deltas.as_ptr(), deltas.len(), &mut v) };
    assert_eq!(result, Status::Ok);
    assert_eq!(v, start + deltas.iter().sum::<i64>());

    let mut ptr: *mut i64 = std::ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: live handle; out pointers valid for writes.
    let result = unsafe { capi::fx_counter_history(c, &mut ptr, &mut len) };
    assert_eq!(result, Status::Ok);
    assert_eq!(len, deltas.len() + 1);
    // SAFETY: the library returned `len` elements at `ptr`.
    let hist = unsafe { std::slice::from_raw_parts(ptr, len) };
    let mut want = start;
    assert_eq!(hist[0], start);
    for (i, d) in deltas.iter().enumerate() {
        want += d;
        assert_eq!(hist[i + 1], want, "history[{}]", i + 1);
    }
    // SAFETY: returned by the library, freed once.
    unsafe { capi::fx_i64_array_free(ptr, len) };

    let mut name: *mut c_char = std::ptr::null_mut();
    // SAFETY: live handle; `name` valid for writes.
    assert_eq!(unsafe { capi::fx_counter_name(c, &mut name) }, Status::Ok);
    // SAFETY: a NUL-terminated string from the library.
    let got = unsafe { CStr::from_ptr(name) };
    assert_eq!(got.to_str().expect("utf8"), "héllo wörld");
    // SAFETY: returned by the library, freed once.
    unsafe { capi::fx_string_free(name) };

    let new_name = CString::new("twin").expect("no NUL");
    let mut twin: *mut Counter = std::ptr::null_mut();
    // SAFETY: live handle, NUL-terminated string, valid out pointer.
    let result = unsafe { capi::fx_counter_renamed_copy(c, new_name.as_ptr(), &mut twin) };
    assert_eq!(result, Status::Ok);
    assert_eq!(value(twin), v);
    // SAFETY: both handles live and distinct.
    assert_eq!(unsafe { capi::fx_counter_absorb(c, twin) }, Status::Ok);
    assert_eq!(value(c), 2 * v);
    assert_eq!(value(twin), 0);
    // SAFETY: live handles, each freed once.
    unsafe {
        capi::fx_counter_free(twin);
        capi::fx_counter_free(c);
    }
}

#[test]
fn malformed_arguments_are_rejected_not_undefined() {
    let c = make("m", 3);
    let mut v = 0i64;
    // SAFETY: `c` is live; passing it twice is what is being rejected.
    let result = unsafe { capi::fx_counter_absorb(c, c) };
    assert_eq!(result, Status::InvalidArgument);
    assert!(last_error().contains("same handle"));
    assert_eq!(value(c), 3);

    let bad = [0xffu8, 0xfe, 0];
    let mut s: *mut c_char = std::ptr::null_mut();
    // SAFETY: NUL-terminated (invalid UTF-8) string, valid out pointer.
    let result = unsafe { capi::fx_upper(bad.as_ptr().cast(), &mut s) };
    assert_eq!(result, Status::InvalidUtf8);
    assert!(s.is_null());

    let mut buf = vec![1.0f32; 64];
    let p = buf.as_mut_ptr();
    // SAFETY: both ranges lie inside `buf`; their overlap is what is being rejected.
    let result = unsafe { capi::fx_scale_into(p, 32, p.wrapping_add(16), 32, 2.0) };
    assert_eq!(result, Status::InvalidArgument);
    assert!(last_error().contains("overlap"));
    assert!(buf.iter().all(|&x| x == 1.0), "nothing written");
    // Disjoint halves are fine.
    // SAFETY: two disjoint ranges inside `buf`.
    let result = unsafe { capi::fx_scale_into(p, 32, p.wrapping_add(32), 32, 2.0) };
    assert_eq!(result, Status::Ok);
    assert!(buf[32..].iter().all(|&x| x == 2.0));

    let words = [0u64; 4];
    let misaligned = words.as_ptr().cast::<u8>().wrapping_add(1).cast::<i64>();
    // SAFETY: the pointer is in bounds but misaligned, which is what is being rejected.
    let result = unsafe { capi::fx_counter_add_all(c, misaligned, 2, &mut v) };
    assert_eq!(result, Status::InvalidArgument);
    assert!(last_error().contains("misaligned"));
    // SAFETY: the length overflows; rejected before any access.
    let result =
        unsafe { capi::fx_counter_add_all(c, words.as_ptr().cast(), usize::MAX / 2, &mut v) };
    assert_eq!(result, Status::InvalidArgument);
    assert_eq!(value(c), 3);
    // SAFETY: live handle, freed once.
    unsafe { capi::fx_counter_free(c) };
}

#[test]
fn the_last_error_is_per_thread() {
    let c = make("t", 1) as usize;
    let mut out = 0i64;
    // SAFETY: live handle, valid out pointer.
    let result = unsafe { capi::fx_counter_divide(c as *mut Counter, 0, &mut out) };
    assert_eq!(result, Status::Exception);
    let other = std::thread::spawn(last_error).join().expect("thread");
    assert_eq!(other, "", "another thread has its own (empty) message");
    assert!(last_error().contains("division by zero"));
    // SAFETY: live handle, freed once.
    unsafe { capi::fx_counter_free(c as *mut Counter) };
}
