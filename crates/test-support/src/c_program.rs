//! A C program against one of the workspace's staticlibs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root (this crate is crates/test-support).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds `package`'s staticlib (in the calling test's profile) and
/// returns its path, read from cargo's JSON messages; `lib` is the
/// library target's name (`unigpu` for unigpu-clib).
pub fn staticlib(package: &str, lib: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(repo_root()).args([
        "build",
        "--quiet",
        "-p",
        package,
        "--lib",
        "--message-format=json",
    ]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo build");
    assert!(
        out.status.success(),
        "cargo build -p {package} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["target"]["name"] != lib {
            continue;
        }
        let files = msg["filenames"].as_array().into_iter().flatten();
        if let Some(a) = files.filter_map(|f| f.as_str()).find(|f| f.ends_with(".a")) {
            return PathBuf::from(a);
        }
    }
    panic!("cargo reported no staticlib for {package} (library `{lib}`)");
}

/// A new, empty directory for one test's build products.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "unigpu-{tag}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).expect("making a temp dir");
    dir
}

/// The command line that runs a program under valgrind's memory and leak
/// check (errors exit 97), or `None` where valgrind is not installed —
/// which fails the test when `UNIGPU_REQUIRE_VALGRIND` is set (CI sets it).
pub fn valgrind() -> Option<Vec<&'static str>> {
    let installed = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        assert!(
            std::env::var("UNIGPU_REQUIRE_VALGRIND").is_err(),
            "UNIGPU_REQUIRE_VALGRIND is set but valgrind is not installed"
        );
        eprintln!("valgrind not installed: skipped the memory check");
        return None;
    }
    Some(vec![
        "valgrind",
        "--error-exitcode=97",
        // valgrind runs one thread at a time; its default lock can hand the
        // CPU back to a spinning thread over and over, so a thread waiting
        // on a host-side gate (the C test's hold kernel) starved the thread
        // meant to open it for 30 s on the project's CI.
        "--fair-sched=yes",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect",
        "--quiet",
    ])
}
