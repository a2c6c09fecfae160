//! A kernel that faults: the error comes back at the next sync and names
//! the kernel. A fault poisons the CUDA context for the whole process, so
//! each backend's variant re-runs this binary and faults in the child.

mod common;

use std::process::Command;

use unigpu::{Error, Grid};

const CHILD_BACKEND: &str = "UNIGPU_TEST_FAULT_BACKEND";
/// The child prints this once every assertion on the fault has held; torch
/// may still abort while tearing down its poisoned context afterwards.
const VERDICT: &str = "fault-check: the fault was reported as expected";

/// Faults in this process and checks what the next sync reports.
fn child(backend: &str) {
    let ctx = common::gpu_ctx(backend);
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
}

fn fault_is_reported(backend: &str) {
    if let Ok(b) = std::env::var(CHILD_BACKEND) {
        return child(&b);
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &format!("an_illegal_address_is_reported_at_sync_with_the_kernel_name_{backend}"),
            "--include-ignored",
            "--nocapture",
        ])
        .env(CHILD_BACKEND, backend)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(VERDICT),
        "the child did not see the fault reported as expected (exit {:?}):\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
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
