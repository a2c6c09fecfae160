//! A machine without libnccl, on any machine: `UNIGPU_NCCL_LIB` points the
//! loader at a file that does not exist. Every NCCL entry point must then
//! say "unsupported" with the reason, never panic. The variable is read
//! once per process, so the test re-runs itself in a child process.

use unigpu_cuda_safe::SafeError;
use unigpu_cuda_safe::nccl::{NcclId, library};

const OVERRIDE: &str = "UNIGPU_NCCL_LIB";
const MISSING: &str = "/nonexistent/unigpu-cuda-safe-test/libnccl.so.2";
const CHILD_MARKER: &str = "safe-no-nccl-checks-ran";
const NAME: &str = "without_libnccl_every_entry_point_says_why";

#[test]
fn without_libnccl_every_entry_point_says_why() {
    if std::env::var(OVERRIDE).as_deref() == Ok(MISSING) {
        for result in [library().map(drop), NcclId::new().map(drop)] {
            match result {
                Err(SafeError::Unsupported { what }) => {
                    assert!(what.contains(MISSING), "{what}");
                    assert!(what.contains("libnccl"), "{what}");
                }
                other => panic!("expected Unsupported naming the path, got {other:?}"),
            }
        }
        println!("{CHILD_MARKER}");
        return;
    }
    // An abort would show as a signal, not a failed exit status.
    unigpu_test_support::child::rerun(NAME, &[(OVERRIDE, MISSING)]).assert_ran(&[CHILD_MARKER]);
}
