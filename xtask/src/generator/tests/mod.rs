//! Tests of the generator: golden files, spec errors, the earlier
//! generator's bugs, C/C++ compilation of the headers, `--check`, robustness.

mod bugs;
mod check_mode;
mod errors;
mod fuzz_regressions;
mod golden;
mod header_compile;
mod robustness;
mod runtime;
mod safety;

use std::path::{Path, PathBuf};

use super::error::SpecError;
use super::model::Spec;
use super::output::GenFile;

/// A minimal valid spec that tests extend.
pub const MINI: &str = r#"library: mini
prefix: ug_mini
namespace: mini_ns
rust_crate: crates/mini
handle_types:
  - name: Thing
    cpp_type: ::mini::Thing
functions:
  - name: make
    return: Thing
    cpp_fn: "[]() { return ::mini::Thing(); }"
methods:
  - handle: Thing
    name: get
    return: i32
    const: true
    cpp_method: get
"#;

pub fn load(text: &str) -> Result<Spec, Vec<SpecError>> {
    super::load_str("specs/test.yaml", text)
}

pub fn load_ok(text: &str) -> Spec {
    match load(text) {
        Ok(s) => s,
        Err(e) => panic!(
            "spec should be valid, got:\n{}",
            super::error::SpecErrors(e)
        ),
    }
}

pub fn load_err(text: &str) -> Vec<SpecError> {
    match load(text) {
        Ok(_) => panic!("spec should be rejected:\n{text}"),
        Err(e) => e,
    }
}

/// All generated files of a valid spec text.
pub fn emit_text(text: &str) -> Vec<GenFile> {
    super::emit(&load_ok(text)).expect("emit")
}

pub fn file<'a>(files: &'a [GenFile], suffix: &str) -> &'a str {
    files
        .iter()
        .find(|f| f.path.ends_with(suffix))
        .map(|f| f.contents.as_str())
        .unwrap_or_else(|| panic!("no generated file ends with {suffix}"))
}

/// 1-based (line, column) of the first occurrence of `needle` at or after
/// the first occurrence of `after`.
pub fn pos_of(text: &str, after: &str, needle: &str) -> (u64, u64) {
    let start = text
        .find(after)
        .unwrap_or_else(|| panic!("`{after}` not in spec"));
    let at = start
        + text[start..]
            .find(needle)
            .unwrap_or_else(|| panic!("`{needle}` not in spec"));
    let line = text[..at].matches('\n').count() as u64 + 1;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..at].chars().count() as u64 + 1;
    (line, column)
}

/// A fresh empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "unigpu-gen-{name}-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Every file under `dir`, relative, sorted.
pub fn list_files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(
                    p.strip_prefix(base)
                        .expect("prefix")
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}
