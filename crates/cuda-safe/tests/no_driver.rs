//! A machine without libcuda, on any machine: the probe's test-only
//! override points the loader at a file that does not exist. Every entry
//! point must then say "unavailable" with the reason, never panic. The
//! override is read once per process, so the test re-runs itself in a
//! child process with it set.

use unigpu_cuda_safe::{CudaDevice, SafeError, device_count, probe};

const OVERRIDE: &str = "UNIGPU_TEST_CUDA_DRIVER_LIB";
const MISSING: &str = "/nonexistent/unigpu-cuda-safe-test/libcuda.so.1";
const CHILD_MARKER: &str = "safe-no-driver-checks-ran";
const NAME: &str = "without_libcuda_every_entry_point_says_unavailable";

#[test]
fn without_libcuda_every_entry_point_says_unavailable() {
    if std::env::var(OVERRIDE).as_deref() == Ok(MISSING) {
        checks();
        println!("{CHILD_MARKER}");
        return;
    }
    // An abort would show as a signal, not a failed exit status.
    unigpu_test_support::child::rerun(NAME, &[(OVERRIDE, MISSING)]).assert_ran(&[CHILD_MARKER]);
}

fn checks() {
    let found = probe();
    let reason = found
        .driver
        .reason
        .clone()
        .expect("the driver must not load from a missing path");
    assert!(reason.contains(MISSING), "{reason}");
    assert!(!found.cuda_usable());
    assert!(found.device_count.is_err(), "{:?}", found.device_count);

    match device_count() {
        Err(SafeError::Unavailable { reason }) => {
            assert!(reason.starts_with("libcuda: "), "{reason}");
            assert!(reason.contains(MISSING), "{reason}");
        }
        other => panic!("device_count: expected Unavailable, got {other:?}"),
    }
    for ordinal in [0, 1, usize::MAX] {
        match CudaDevice::open(ordinal) {
            Err(SafeError::Unavailable { reason }) => assert!(reason.contains(MISSING), "{reason}"),
            other => panic!("open({ordinal}): expected Unavailable, got {other:?}"),
        }
    }
    // The message a facade prints names the cause.
    let shown = CudaDevice::open(0).unwrap_err().to_string();
    assert!(shown.starts_with("CUDA is unavailable: "), "{shown}");
    assert_eq!(CudaDevice::open(0).unwrap_err().driver_code(), None);
}
