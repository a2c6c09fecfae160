//! A kernel that faults: the error comes back at the next sync and names
//! the kernel, every later call on that context is an error (never a crash
//! or a hang), and so is a new cuda context in that process (CUDA's rule
//! for such a fault: the process must restart), while a new process works.
//! A fault poisons CUDA for the whole process, so each backend's variant
//! re-runs this binary and faults in the child.

mod common;

use unigpu::{Error, Grid};

const CHILD_BACKEND: &str = "UNIGPU_TEST_FAULT_BACKEND";
/// The child prints this once every assertion on the fault has held; torch
/// may still abort while tearing down its poisoned context afterwards.
const VERDICT: &str = "fault-check: the fault was reported as expected";
/// Then: every later call on the context failed with an error.
const LATER: &str = "fault-check: every later call was an error";
/// Then (cuda): a new context in the faulted process is refused with the
/// fault's error (CUDA's rule: the process must restart), or works.
const AGAIN: &str = "fault-check: a new context is refused clearly or works";

/// Faults in this process and checks what the next sync reports.
fn child(backend: &str) {
    let ctx = common::cuda_backend_ctx(backend);
    let src = r#"
extern "C" __global__ void writes_wild(float* y, unsigned long long offset) {
    y[offset] = 1.0f;
}"#;
    let k = ctx.compile(src).unwrap().kernel("writes_wild").unwrap();
    let mut y = ctx.zeros::<f32>(4).unwrap();
    ctx.launch(&k, Grid::for_elems(1), (&mut y, 1u64 << 40))
        .unwrap();
    let err = ctx.sync().expect_err("the fault must be reported");
    // The kernel is a field; the driver's status is the source, said of
    // the context's backend.
    assert_eq!(err.kernel(), Some("writes_wild"), "{err:?}");
    match err.root() {
        Error::Driver { backend, name, .. } => {
            assert_eq!(*backend, ctx.backend(), "{err:?}");
            assert!(name.contains("ILLEGAL_ADDRESS"), "{name}");
        }
        Error::Torch { message, .. } if backend == "torch" => {
            assert!(
                message.to_lowercase().contains("illegal memory access"),
                "{message}"
            );
        }
        other => panic!("expected an illegal-address error, got {other:?}"),
    }
    println!("{VERDICT}");
    // Every later call on the poisoned context is an error, not a crash or
    // a hang.
    let later = [
        ("upload", ctx.upload(&[1.0f32; 4]).map(drop)),
        (
            "launch",
            ctx.launch(&k, Grid::for_elems(1), (&mut y, 0u64))
                .and_then(|()| ctx.sync()),
        ),
        ("download", y.download().map(drop)),
        ("sync", ctx.sync()),
    ];
    for (what, outcome) in &later {
        match outcome {
            Ok(()) => panic!("{what} after the fault succeeded"),
            Err(e) => println!("fault-check: {what} after the fault: {e}"),
        }
    }
    println!("{LATER}");
    if backend == "cuda" {
        // CUDA's rule for this fault: the process must restart. A new
        // context in it is refused with the fault's error, not a crash.
        drop((k, y, ctx));
        match unigpu::Context::new(unigpu::Backend::Cuda, 0) {
            Err(e) => {
                assert!(e.to_string().contains("ILLEGAL_ADDRESS"), "{e}");
                println!("fault-check: a new context in this process: {e}");
                println!("{AGAIN}");
            }
            Ok(fresh) => {
                // A driver that recovers: then the new context must work.
                let host: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
                assert_eq!(fresh.upload(&host).unwrap().download().unwrap(), host);
                println!("fault-check: a new context in this process works");
                println!("{AGAIN}");
            }
        }
    }
}

fn fault_is_reported(backend: &str) {
    if let Ok(b) = std::env::var(CHILD_BACKEND) {
        return child(&b);
    }
    // torch may abort while tearing down its poisoned context after the
    // checks, so the exit status is not asked for: the markers are.
    let again = if backend == "cuda" { AGAIN } else { VERDICT };
    unigpu_test_support::child::rerun(
        &format!("an_illegal_address_is_reported_at_sync_with_the_kernel_name_{backend}"),
        &[(CHILD_BACKEND, backend)],
    )
    .assert_printed(&[VERDICT, LATER, again]);
    // This process never faulted: CUDA works in it.
    let ctx = common::cuda_backend_ctx(backend);
    let host: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
    assert_eq!(ctx.upload(&host).unwrap().download().unwrap(), host);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_illegal_address_is_reported_at_sync_with_the_kernel_name_cuda() {
    fault_is_reported("cuda");
}

#[cfg(feature = "torch")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_illegal_address_is_reported_at_sync_with_the_kernel_name_torch() {
    fault_is_reported("torch");
}
