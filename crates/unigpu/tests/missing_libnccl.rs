//! A machine without libnccl: `UNIGPU_NCCL_LIB` points the loader at a
//! file that does not exist. Every entry point says why collectives are
//! unavailable, naming the path, and nothing panics. The variable is read
//! once per process, so the test re-runs itself in a child process.
//! Needs the `cuda` feature: without it there is no NCCL to look for.

#![cfg(feature = "cuda")]

use unigpu::{Backend, Communicator, Context, Error, Rendezvous};

const OVERRIDE: &str = "UNIGPU_NCCL_LIB";
const MISSING: &str = "/nonexistent/unigpu-test/libnccl.so.2";
const CHILD_MARKER: &str = "missing-libnccl-checks-ran";
const NAME: &str = "without_libnccl_collectives_are_an_error_not_a_panic";

#[test]
fn without_libnccl_collectives_are_an_error_not_a_panic() {
    if std::env::var(OVERRIDE).as_deref() == Ok(MISSING) {
        checks();
        println!("{CHILD_MARKER}");
        return;
    }
    unigpu_test_support::child::rerun(NAME, &[(OVERRIDE, MISSING)]).assert_ran(&[CHILD_MARKER]);
}

fn checks() {
    match Communicator::library(Backend::Cuda) {
        Err(Error::Unsupported { backend, what }) => {
            assert_eq!(backend, Backend::Cuda);
            assert!(what.contains(MISSING), "{what}");
            assert!(what.contains("NCCL"), "{what}");
        }
        other => panic!("expected Unsupported naming the path, got {other:?}"),
    }
    // The host backend has no collectives, with or without libnccl.
    let cpu = Context::host().unwrap();
    match Communicator::local(std::slice::from_ref(&cpu)) {
        Err(Error::Unsupported { backend, what }) => {
            assert_eq!(backend, Backend::Cpu);
            assert!(what.contains("cuda"), "{what}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let r = Rendezvous::tcp("127.0.0.1:1", 2, 0);
    assert!(matches!(
        Communicator::join(&[cpu], &r),
        Err(Error::Unsupported { .. })
    ));
}
