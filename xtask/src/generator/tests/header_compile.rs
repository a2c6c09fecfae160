//! The generated C headers compile with -Wall -Wextra -Werror -pedantic as C
//! (C99, C11) and as C++ (C++11, C++17), included twice (include guard).

use std::process::Command;

use super::temp_dir;
use crate::generator::{discover, generate, repo_root};

fn compile(compiler: &str, std: &str, dir: &std::path::Path, source: &str) {
    let out = Command::new(compiler)
        .args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-o"])
        .arg(dir.join("out.o"))
        .arg("-I")
        .arg(dir)
        .arg(dir.join(source))
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e} (install gcc and g++)"));
    assert!(
        out.status.success(),
        "{compiler} {std} failed on {source}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn generated_headers_compile_as_c_and_cpp() {
    let root = repo_root();
    let files = generate(&root, &discover(&root).expect("specs")).expect("generate");
    let headers: Vec<_> = files
        .iter()
        .filter(|f| f.path.starts_with("include/"))
        .collect();
    assert!(headers.len() >= 2, "fixture and cuda headers");
    for h in headers {
        let dir = temp_dir("hdr");
        let name = h.path.trim_start_matches("include/");
        std::fs::write(dir.join(name), &h.contents).expect("write header");
        let tu =
            format!("#include \"{name}\"\n#include \"{name}\"\nint main(void) {{ return 0; }}\n");
        std::fs::write(dir.join("t.c"), &tu).expect("write");
        std::fs::write(dir.join("t.cpp"), &tu).expect("write");
        for std in ["-std=c99", "-std=c11"] {
            compile("gcc", std, &dir, "t.c");
        }
        for std in ["-std=c++11", "-std=c++17"] {
            compile("g++", std, &dir, "t.cpp");
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
