//! A machine without libcuda: the probe's test-only override points the
//! loader at a file that does not exist. The override is read once per
//! process, so the test re-runs itself in a child process with it set.
//! Needs the `cuda` feature: without it there is no probe to point.

#![cfg(feature = "cuda")]

use unigpu::{Backend, Context, Error, Outcome};

const OVERRIDE: &str = "UNIGPU_TEST_CUDA_DRIVER_LIB";
const MISSING: &str = "/nonexistent/unigpu-test/libcuda.so.1";
const CHILD_MARKER: &str = "missing-libcuda-checks-ran";

#[test]
fn without_libcuda_everything_falls_back_without_panicking() {
    if std::env::var(OVERRIDE).as_deref() == Ok(MISSING) {
        run_checks_in_child();
        return;
    }
    unigpu_test_support::child::rerun(
        "without_libcuda_everything_falls_back_without_panicking",
        &[(OVERRIDE, MISSING)],
    )
    .assert_ran(&[CHILD_MARKER]);
}

fn run_checks_in_child() {
    let probe = unigpu::cuda_probe();
    assert!(!probe.cuda_usable());
    let reason = probe.unusable_reason().unwrap();
    assert!(reason.contains(MISSING), "{reason}");

    // Without libcuda the chain goes on past cuda (and torch, which needs
    // it) to the next backend that opens: vulkan where the machine has a
    // hardware Vulkan driver (NVIDIA's ICD on the GPU machine), else cpu.
    let ctx = Context::from_config(unigpu::Config::default()).unwrap();
    let chain = ctx.fallback_chain();
    let row = |b: Backend| {
        &chain
            .iter()
            .find(|a| a.backend == b)
            .unwrap_or_else(|| panic!("no {b} row in {chain:?}"))
            .outcome
    };
    match row(Backend::Cuda) {
        Outcome::Skipped(r) => assert!(r.contains(MISSING), "{r}"),
        other => panic!("cuda should be skipped, got {other:?}"),
    }
    let expected = match row(Backend::Vulkan) {
        Outcome::Chosen => Backend::Vulkan,
        Outcome::Skipped(_) => Backend::Cpu,
        Outcome::NotTried => panic!("vulkan comes after cuda and must be tried: {chain:?}"),
    };
    assert_eq!(ctx.backend(), expected, "{chain:?}");
    assert_eq!(*row(expected), Outcome::Chosen, "{chain:?}");
    match Context::new(Backend::Cuda, 0) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, Backend::Cuda);
            assert!(reason.contains(MISSING), "{reason}");
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
    assert!(matches!(
        unigpu::list_devices(Backend::Cuda),
        Err(Error::BackendUnavailable { .. })
    ));
    let host: Vec<f32> = (0..1000).map(|i| (i as f32).sin()).collect();
    assert_eq!(ctx.upload(&host).unwrap().download().unwrap(), host);
    println!("{CHILD_MARKER}");
}
