//! A CPU-only libtorch: libtorch_cpu and c10 without libtorch_cuda. The
//! test binary does not link libtorch_cuda (tch's `--as-needed` drops it),
//! so pointing the bridge's load of it at nothing
//! (`UNIGPU_TEST_TORCH_CUDA_LIB`) leaves c10 with no CUDA implementation,
//! exactly as with a CPU-only build. The override is read once per process,
//! so the test re-runs itself in a child process with it set. It holds on a
//! GPU machine too: a GPU does not help without libtorch_cuda.
#![cfg(feature = "torch")]

use unigpu_torch_bridge as c10;

const OVERRIDE: &str = "UNIGPU_TEST_TORCH_CUDA_LIB";
const MISSING: &str = "/nonexistent/unigpu-test/libtorch_cuda.so";
const CHILD_MARKER: &str = "cpu-only-libtorch-checks-ran";

#[test]
fn without_libtorch_cuda_every_cuda_call_is_an_error_not_an_abort() {
    if std::env::var(OVERRIDE).as_deref() == Ok(MISSING) {
        checks();
        println!("{CHILD_MARKER}");
        return;
    }
    // An abort would show as a signal, not a failed exit status.
    unigpu_test_support::child::rerun(
        "without_libtorch_cuda_every_cuda_call_is_an_error_not_an_abort",
        &[(OVERRIDE, MISSING)],
    )
    .assert_ran(&[CHILD_MARKER]);
}

/// Every CUDA entry point fails with the reason; CPU work still runs.
fn checks() {
    assert_eq!(c10::cuda_device_count().unwrap(), 0);
    assert!(!c10::cuda_is_available().unwrap());
    let status = c10::cuda_status().unwrap();
    assert!(
        status.contains("libtorch_cuda could not be loaded"),
        "{status}"
    );
    assert!(status.contains(MISSING), "{status}");

    let refused: Vec<(&str, Option<c10::Error>)> = vec![
        ("stream_from_pool", c10::stream_from_pool(0, false).err()),
        ("current_stream", c10::current_stream(0).err()),
        ("default_stream", c10::default_stream(0).err()),
        ("event_new", c10::event_new().err()),
        ("tensor_randn on cuda:0", c10::tensor_randn(&[4], 0).err()),
        ("tensor_empty on cuda:0", c10::tensor_empty(4, 0, 0).err()),
    ];
    for (what, err) in refused {
        let err = err.unwrap_or_else(|| panic!("{what} succeeded without libtorch_cuda"));
        assert!(
            err.message().contains("libtorch_cuda could not be loaded"),
            "{what}: {err}"
        );
    }
    let host = c10::tensor_from_f32(&[-1.0, 2.0, -3.0, 4.0], &[4]).unwrap();
    assert!(c10::Tensor::pin_memory(&host).is_err());
    assert_eq!(
        host.relu().unwrap().to_f32_vec().unwrap(),
        vec![0.0, 2.0, 0.0, 4.0]
    );
    assert!(unigpu_torch_sys::load_torch_cuda().is_err());
}
