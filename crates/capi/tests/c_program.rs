//! tests/c/capi_test.c against this crate's staticlib: builds the library
//! with cargo, compiles the program as C11 and as C++17 with -Wall -Wextra
//! -Werror, runs both on fresh random inputs and checks their closing line;
//! under valgrind too when it is installed (required when
//! UNIGPU_REQUIRE_VALGRIND=1). .ci/capi-tests.sh also runs it with ASan and
//! UBSan and builds it through pkg-config and CMake.
//!
//! The backend is the C program's: $UNIGPU_BACKEND, else cpu.

use std::path::{Path, PathBuf};
use std::process::Command;

use unigpu_test_support::c_program::{repo_root as root, staticlib, temp_dir, valgrind};

/// Compiles tests/c/capi_test.c (as C++ when `cpp`) against `lib`.
fn compile(lib: &Path, cpp: bool, dir: &Path) -> PathBuf {
    let exe = dir.join(if cpp { "capi_test_cpp" } else { "capi_test" });
    let mut cmd = Command::new(if cpp { "g++" } else { "gcc" });
    if cpp {
        cmd.args(["-x", "c++", "-std=c++17"]);
    } else {
        cmd.args(["-std=c11", "-pedantic"]);
    }
    cmd.args(["-Wall", "-Wextra", "-Werror", "-g", "-I"])
        .arg(root().join("include"))
        .arg(root().join("tests/c/capi_test.c"))
        .args(["-x", "none"])
        .arg(lib)
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-o"])
        .arg(&exe);
    let out = cmd.output().expect("run gcc / g++ (install them)");
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        if cpp { "g++" } else { "gcc" },
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs the program (through `wrapper` if given) with a fresh seed and
/// checks that every check passed.
fn run(exe: &Path, wrapper: &[&str]) -> String {
    let seed: u64 = rand::random::<u64>() | 1;
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    // No Vulkan loader for the C runs (the vulkan paths of the C API then
    // say "no Vulkan loader"): under valgrind, glibc's dlopen of the driver
    // stack reads past a string (strncmp's word reads), which valgrind
    // reports as an error of ours. The vulkan backend has its own tests.
    let out = cmd
        .env("UNIGPU_TEST_SEED", seed.to_string())
        .env("RUST_BACKTRACE", "0")
        .env(
            "UNIGPU_TEST_VULKAN_LOADER",
            "/nonexistent/unigpu-capi/libvulkan.so.1",
        )
        .output()
        .expect("run the C program");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        out.status.success() && last.ends_with(" passed, 0 failed"),
        "{} failed ({}; seed {seed}):\n{stdout}\n{stderr}",
        exe.display(),
        out.status
    );
    let passed: usize = last
        .trim_start_matches("capi_test: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed > 1000, "too few checks ran: {last}");
    stdout
}

#[test]
fn c_and_cpp_programs_on_the_staticlib() {
    let lib = staticlib("unigpu-clib", "unigpu");
    let dir = temp_dir("capi-c");
    let c = compile(&lib, false, &dir);
    let cpp = compile(&lib, true, &dir);
    for _ in 0..3 {
        run(&c, &[]);
    }
    run(&cpp, &[]);

    if let Some(valgrind) = valgrind() {
        run(&c, &valgrind);
        eprintln!("valgrind: no memory errors, no leaks");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Every function declared in include/unigpu.h is called by the C program.
#[test]
fn the_c_program_calls_every_function() {
    let header = std::fs::read_to_string(root().join("include/unigpu.h")).expect("unigpu.h");
    let program = std::fs::read_to_string(root().join("tests/c/capi_test.c")).expect("capi_test.c");
    let mut functions = Vec::new();
    for line in header
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains('('))
    {
        let before = &line[..line.find('(').unwrap_or(0)];
        if let Some(name) = before.split([' ', '*']).next_back() {
            if name.starts_with("ug_") {
                functions.push(name.to_string());
            }
        }
    }
    assert!(functions.len() > 80, "found only {functions:?}");
    let missing: Vec<_> = functions
        .iter()
        .filter(|f| !program.contains(&format!("{f}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "not called by tests/c/capi_test.c: {missing:?}"
    );
}
