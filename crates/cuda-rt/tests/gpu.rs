//! GPU tests: real allocations, copies and streams. They need a CUDA GPU and
//! fail (not pass) without one. Run on the GPU machine with
//! `--include-ignored` (docs/generator.md has the exact commands).
#![cfg(feature = "cuda")]

use std::sync::{Mutex, MutexGuard};

use rand::Rng;
use unigpu_cuda_rt::generated::capi;
use unigpu_cuda_rt::{CudaStream, DeviceBuffer};

/// Device 0, made current, and the test's leak check: the guard holds the
/// GPU for the test (the driver's free memory is device-wide, so tests take
/// turns) and, when the test ends, requires the free memory to be back
/// where it was, within one 2 MiB page (`cudaMemGetInfo`'s grain).
fn gpu() -> LeakGuard {
    static GPU: Mutex<()> = Mutex::new(());
    let lock = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let n = unigpu_cuda_rt::device_count()
        .unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    assert!(n > 0, "this test needs a CUDA GPU");
    unigpu_cuda_rt::init(0).expect("cudaSetDevice(0)");
    LeakGuard {
        _lock: lock,
        free_before: free_memory(),
    }
}

struct LeakGuard {
    _lock: MutexGuard<'static, ()>,
    free_before: usize,
}

fn free_memory() -> usize {
    unigpu_cuda_rt::init(0).expect("cudaSetDevice(0)");
    unigpu_cuda_rt::device_synchronize().expect("cudaDeviceSynchronize");
    unigpu_cuda_rt::free_memory().expect("cudaMemGetInfo")
}

impl Drop for LeakGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return; // the test's own failure is the one to report
        }
        let after = free_memory();
        assert!(
            after + (2 << 20) >= self.free_before,
            "leak: {after} bytes free after the test, {} before",
            self.free_before
        );
    }
}

fn random_bytes(len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rng().fill(&mut v[..]);
    v
}

fn assert_same(got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "byte {i} differs");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_facts() {
    let _gpu = gpu();
    let name = unigpu_cuda_rt::device_name(0).expect("name");
    assert!(!name.trim().is_empty());
    assert!(unigpu_cuda_rt::driver_version().expect("driver") >= 13000);
    println!("device 0: {name}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn malloc_htod_dtoh_roundtrip_random_data() {
    let _gpu = gpu();
    let mut rng = rand::rng();
    for _ in 0..4 {
        let len = rng.random_range(1..(1 << 22));
        let host = random_bytes(len);
        let mut buf: DeviceBuffer = unigpu_cuda_rt::malloc(len).expect("cudaMalloc");
        assert_eq!(buf.size().expect("size"), len);
        unigpu_cuda_rt::memcpy_htod(&mut buf, &host).expect("H2D");
        let mut back = vec![0u8; len];
        unigpu_cuda_rt::memcpy_dtoh(&mut back, &buf).expect("D2H");
        assert_same(&back, &host);

        // A prefix copy reads only the first bytes.
        let k = rng.random_range(0..len);
        let mut prefix = vec![0u8; k];
        unigpu_cuda_rt::memcpy_dtoh(&mut prefix, &buf).expect("D2H prefix");
        assert_same(&prefix, &host[..k]);

        let value: u8 = rng.random();
        buf.fill(value).expect("memset");
        unigpu_cuda_rt::memcpy_dtoh(&mut back, &buf).expect("D2H after memset");
        assert!(back.iter().all(|&b| b == value), "memset value {value}");
        // Oversized copies are errors, not overruns.
        let e = unigpu_cuda_rt::memcpy_htod(&mut buf, &vec![0u8; len + 1]).expect_err("too large");
        assert!(e.message().contains("do not fit"), "{e}");
        let e = unigpu_cuda_rt::memcpy_dtoh(&mut vec![0u8; len + 1], &buf).expect_err("too large");
        assert!(e.message().contains("requested from"), "{e}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_data_survives_the_roundtrip_element_by_element() {
    let _gpu = gpu();
    let mut rng = rand::rng();
    let n = rng.random_range(1..100_000);
    let host: Vec<f32> = (0..n).map(|_| rng.random_range(-1e6f32..1e6)).collect();
    let bytes: Vec<u8> = host.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let mut buf = unigpu_cuda_rt::malloc(bytes.len()).expect("malloc");
    unigpu_cuda_rt::memcpy_htod(&mut buf, &bytes).expect("H2D");
    let mut back = vec![0u8; bytes.len()];
    unigpu_cuda_rt::memcpy_dtoh(&mut back, &buf).expect("D2H");
    for (i, chunk) in back.chunks_exact(4).enumerate() {
        let got = f32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        assert_eq!(got.to_bits(), host[i].to_bits(), "element {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streams_create_copy_sync_destroy() {
    let _gpu = gpu();
    let streams: Vec<CudaStream> = (0..4)
        .map(|_| unigpu_cuda_rt::stream_create().expect("stream"))
        .collect();
    for s in &streams {
        let len = rand::rng().random_range(1..(1 << 20));
        let host = random_bytes(len);
        let mut buf = unigpu_cuda_rt::malloc(len).expect("malloc");
        unigpu_cuda_rt::memcpy_htod_async(&mut buf, &host, s).expect("async H2D");
        s.synchronize().expect("sync");
        assert!(s.is_idle().expect("query"), "idle after synchronize");
        let mut back = vec![0u8; len];
        unigpu_cuda_rt::memcpy_dtoh(&mut back, &buf).expect("D2H");
        assert_same(&back, &host);
    }
    drop(streams); // cudaStreamDestroy
    unigpu_cuda_rt::device_synchronize().expect("device sync after destroying streams");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn c_abi_on_a_gpu() {
    let _gpu = gpu();
    let host = random_bytes(4096 + rand::rng().random_range(0..4096));
    let mut buf: *mut unigpu_cuda_rt::DeviceBuffer = std::ptr::null_mut();
    // SAFETY: `buf` is valid for writes.
    let result = unsafe { capi::ug_cuda_rt_malloc(host.len(), &mut buf) };
    assert_eq!(result, capi::Status::Ok);
    assert!(!buf.is_null());
    // SAFETY: `buf` is a live handle; `host` is valid for `host.len()` reads.
    let result = unsafe { capi::ug_cuda_rt_memcpy_htod(buf, host.as_ptr(), host.len()) };
    assert_eq!(result, capi::Status::Ok);
    let mut back = vec![0u8; host.len()];
    // SAFETY: `back` is valid for writes of its length; `buf` is live.
    let result = unsafe { capi::ug_cuda_rt_memcpy_dtoh(back.as_mut_ptr(), back.len(), buf) };
    assert_eq!(result, capi::Status::Ok);
    assert_same(&back, &host);
    let mut stream: *mut unigpu_cuda_rt::CudaStream = std::ptr::null_mut();
    // SAFETY: `stream` is valid for writes.
    let result = unsafe { capi::ug_cuda_rt_stream_create(&mut stream) };
    assert_eq!(result, capi::Status::Ok);
    // SAFETY: `stream` is a live handle.
    let result = unsafe { capi::ug_cuda_rt_stream_synchronize(stream) };
    assert_eq!(result, capi::Status::Ok);
    // SAFETY: both handles are live and not used afterwards.
    unsafe {
        capi::ug_cuda_rt_stream_free(stream);
        capi::ug_cuda_rt_device_buffer_free(buf);
    }
}
