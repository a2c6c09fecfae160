//! Tests that run everywhere the crate builds, GPU or not. In CI (no GPU,
//! no driver) `.ci/gen-tests.sh` sets `UNIGPU_EXPECT_NO_GPU=1` and the
//! error path is required: every call that needs a device returns a clean
//! `Err` (Rust) or a status plus message (C), and nothing panics.
#![cfg(feature = "cuda")]

use std::ffi::{CStr, c_char};
use unigpu_cuda_rt::generated::capi;

fn expect_no_gpu() -> bool {
    std::env::var("UNIGPU_EXPECT_NO_GPU").is_ok_and(|v| v == "1")
}

fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: `buf` is valid for `buf.len()` writes.
    let n = unsafe { capi::ug_cuda_rt_last_error_message(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: the function NUL-terminates within `buf`.
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        n,
        s.len(),
        "the returned length matches the message (< 512 bytes)"
    );
    s
}

#[test]
fn runtime_version_is_the_linked_13_x() {
    let v = unigpu_cuda_rt::runtime_version().expect("cudaRuntimeGetVersion needs no GPU");
    assert!((13000..14000).contains(&v), "linked libcudart reports {v}");
}

#[test]
fn device_count_without_a_gpu_is_a_clean_error() {
    match unigpu_cuda_rt::device_count() {
        Err(e) => {
            assert_eq!(e.context(), "device_count");
            assert!(
                e.message().starts_with("cudaGetDeviceCount failed: cuda"),
                "{e}"
            );
            assert!(
                e.to_string()
                    .starts_with("cuda_rt: device_count: cudaGetDeviceCount failed"),
                "{e}"
            );
        }
        Ok(n) => {
            assert!(
                !expect_no_gpu(),
                "UNIGPU_EXPECT_NO_GPU=1 but cudaGetDeviceCount found {n} device(s)"
            );
            assert!(n > 0, "the runtime reports no device as an error, not as 0");
        }
    }
}

#[test]
fn malloc_without_a_gpu_is_a_clean_error_in_rust_and_c() {
    let bytes = 1024 + rand::random::<u16>() as usize;
    if let Ok(n) = unigpu_cuda_rt::device_count() {
        // A device is present (UNIGPU_EXPECT_NO_GPU=1 already fails in
        // `device_count_without_a_gpu_is_a_clean_error`): the same calls
        // succeed, in Rust and in C.
        assert!(!expect_no_gpu(), "UNIGPU_EXPECT_NO_GPU=1 but {n} device(s)");
        unigpu_cuda_rt::init(0).unwrap();
        let mut buf = unigpu_cuda_rt::malloc(bytes).unwrap();
        assert_eq!(buf.size().unwrap(), bytes);
        buf.fill(0x5a).unwrap();
        let mut back = vec![0u8; bytes];
        unigpu_cuda_rt::memcpy_dtoh(&mut back, &buf).unwrap();
        assert!(back.iter().all(|&b| b == 0x5a));
        let stream = unigpu_cuda_rt::stream_create().unwrap();
        stream.synchronize().unwrap();
        assert!(stream.is_idle().unwrap());

        let mut out = std::ptr::null_mut();
        // SAFETY: `out` is valid for writes.
        let status = unsafe { capi::ug_cuda_rt_malloc(bytes, &mut out) };
        assert_eq!(status, capi::Status::Ok, "{}", last_error());
        assert!(!out.is_null());
        // SAFETY: `out` came from ug_cuda_rt_malloc and is freed once.
        unsafe { capi::ug_cuda_rt_device_buffer_free(out) };
        let mut count = -7;
        // SAFETY: `count` is valid for writes.
        let status = unsafe { capi::ug_cuda_rt_device_count(&mut count) };
        assert_eq!(status, capi::Status::Ok);
        assert_eq!(count, n);
        return;
    }
    let e = unigpu_cuda_rt::malloc(bytes).expect_err("no device: cudaMalloc fails");
    assert!(e.message().starts_with("cudaMalloc failed: cuda"), "{e}");

    let sentinel = 0x5a5a_usize as *mut unigpu_cuda_rt::DeviceBuffer;
    let mut out = sentinel;
    // SAFETY: `out` is valid for writes.
    let status = unsafe { capi::ug_cuda_rt_malloc(bytes, &mut out) };
    assert_eq!(status, capi::Status::Exception);
    assert_eq!(out, sentinel, "out-parameter untouched on failure");
    let msg = last_error();
    assert!(
        msg.contains("malloc") && msg.contains("cudaMalloc failed: cuda"),
        "{msg}"
    );

    let mut count = -7;
    // SAFETY: `count` is valid for writes.
    let status = unsafe { capi::ug_cuda_rt_device_count(&mut count) };
    assert_eq!(status, capi::Status::Exception);
    assert_eq!(count, -7);
    assert!(last_error().contains("cudaGetDeviceCount failed"));

    let e = unigpu_cuda_rt::stream_create().expect_err("no device: no stream");
    assert!(
        e.message().contains("cudaStreamCreateWithFlags failed"),
        "{e}"
    );
    let e = unigpu_cuda_rt::init(0).expect_err("no device: no context");
    assert!(e.message().contains("failed: cuda"), "{e}");
}

#[test]
fn c_abi_rejects_null_pointers_before_calling_cuda() {
    // SAFETY: NULL is allowed and rejected.
    let status = unsafe { capi::ug_cuda_rt_malloc(16, std::ptr::null_mut()) };
    assert_eq!(status, capi::Status::NullArgument);
    assert_eq!(last_error(), "`out` is NULL");
    // SAFETY: NULL handle is rejected before use.
    let status = unsafe { capi::ug_cuda_rt_memcpy_htod(std::ptr::null_mut(), [1u8].as_ptr(), 1) };
    assert_eq!(status, capi::Status::NullArgument);
    assert_eq!(last_error(), "`dst` is NULL");
    // SAFETY: freeing NULL is a no-op.
    unsafe { capi::ug_cuda_rt_device_buffer_free(std::ptr::null_mut()) };
    // SAFETY: freeing NULL is a no-op.
    unsafe { capi::ug_cuda_rt_stream_free(std::ptr::null_mut()) };
    let mut v = 0;
    // SAFETY: `v` is valid for writes.
    let result = unsafe { capi::ug_cuda_rt_runtime_version(&mut v) };
    assert_eq!(result, capi::Status::Ok);
    assert!((13000..14000).contains(&v));
    assert_eq!(last_error(), "", "success clears the message");
}
