//! The `unigpu` binary, run as a user would run it.

use std::process::{Command, Output};

fn unigpu(args: &[&str], env: &[(&str, &str)]) -> Output {
    // UNIGPU_BIN: the binary's path where tests run away from this build
    // tree (the GPU machine, through `cargo xtask gpu-pack`).
    let bin = std::env::var("UNIGPU_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_unigpu").into());
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env_remove("UNIGPU_BACKEND")
        .env_remove("UNIGPU_DEVICE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running unigpu")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn info_prints_the_chain_the_choice_and_the_devices() {
    let out = unigpu(&["info"], &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for needle in [
        "CUDA probe:",
        "fallback chain:",
        "torch",
        "chosen backend:",
        "devices:",
        "cpu:0",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in:\n{t}");
    }
    assert!(t.contains("memory") && t.contains("GiB total"), "{t}");
}

#[test]
fn info_without_libcuda_explains_why_cuda_was_skipped() {
    let missing = "/nonexistent/unigpu-cli-test/libcuda.so.1";
    let out = unigpu(&["info"], &[("UNIGPU_TEST_CUDA_DRIVER_LIB", missing)]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let cuda_line = t
        .lines()
        .find(|l| l.trim_start().starts_with("cuda ") && l.contains("skipped"))
        .unwrap_or_else(|| panic!("no skipped cuda line in:\n{t}"));
    assert!(cuda_line.contains(missing), "{cuda_line}");
    assert!(t.contains("chosen backend: cpu"), "{t}");
}

#[test]
fn a_bad_environment_value_is_a_clear_error() {
    let out = unigpu(&["info"], &[("UNIGPU_BACKEND", "gpu")]);
    let t = text(&out);
    assert!(!out.status.success());
    assert!(
        t.contains("UNIGPU_BACKEND") && t.contains("\"gpu\"") && t.contains("\"cuda\""),
        "{t}"
    );
    assert!(!t.contains("panicked"), "{t}");
}

#[test]
fn demo_runs_and_checks_its_result() {
    let out = unigpu(&["demo", "--n", "100003"], &[("UNIGPU_BACKEND", "cpu")]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("all 100003 elements match"), "{t}");
}
