//! Tier 2 calls the C-ABI runtime crate (`crates/capi-runtime`) instead of
//! carrying a copy of it: the generated code has none of the runtime's
//! machinery, maps its `Status` onto the runtime's `StatusCode` trait, and
//! every crate that hosts a generated `capi.rs` depends on the runtime.

use super::super::abi::STATUSES;
use super::super::capi_runtime::{CRATE, PACKAGE, STATUS_CONSTS};
use super::super::{discover, generate, load_str, repo_root};
use super::{MINI, emit_text, file};

/// `capi.rs` of the minimal spec and of every spec in the repository.
fn every_capi() -> Vec<(String, String)> {
    let mut v = vec![(
        "MINI".to_string(),
        file(&emit_text(MINI), "generated/capi.rs").to_string(),
    )];
    let root = repo_root();
    let specs = discover(&root).expect("specs");
    for f in generate(&root, &specs).expect("generate") {
        if f.path.ends_with("generated/capi.rs") {
            v.push((f.path, f.contents));
        }
    }
    assert!(v.len() >= 3, "the repository has generated C ABIs");
    v
}

#[test]
fn generated_capi_calls_the_runtime_and_carries_no_copy_of_it() {
    for (name, capi) in every_capi() {
        for needed in [
            format!("use {CRATE} as runtime;"),
            "impl runtime::StatusCode for Status {".to_string(),
            "impl From<safe::Error> for runtime::Failure<Status> {".to_string(),
            "unsafe { runtime::last_error_message(buf, len) }".to_string(),
        ] {
            assert!(capi.contains(&needed), "{name} lacks `{needed}`:\n{capi}");
        }
        for copy in [
            "thread_local!",
            "RefCell",
            "catch_unwind(",
            "struct Failure",
            "fn guard",
            "fn set_last_error",
            "fn panic_message",
            "fn null",
            "fn out_arg",
            "fn handle_ref",
            "fn handle_mut",
            "fn str_arg",
            "fn check_buffer",
            "fn slice_arg",
            "fn slice_mut_arg",
            "fn distinct",
            "fn disjoint",
            "copy_nonoverlapping",
            "Box::from_raw",
            "Box::into_raw",
            "CString::new",
            "CString::from_raw",
        ] {
            assert!(
                !capi.contains(copy),
                "{name} carries its own `{copy}`:\n{capi}"
            );
        }
        // Every helper call goes to the runtime, none to a local function.
        for helper in [
            "guard(",
            "out_arg(",
            "handle_ref(",
            "handle_mut(",
            "str_arg(",
            "slice_arg(",
            "slice_mut_arg(",
            "distinct(",
            "disjoint(",
            "into_handle(",
            "into_array(",
            "c_string(",
        ] {
            for (at, _) in capi.match_indices(helper) {
                assert!(
                    capi[..at].ends_with("runtime::"),
                    "{name}: `{helper}` not called through `runtime::` at byte {at}"
                );
            }
        }
    }
}

#[test]
fn the_runtime_status_trait_is_the_one_the_generator_maps() {
    // Each constant the generator maps names a status of the C ABI.
    for c in STATUS_CONSTS {
        assert!(
            STATUSES.iter().any(|(_, name, _, _)| name == c),
            "`{c}` is not a status in abi::STATUSES"
        );
    }
    // The runtime's trait declares exactly these constants.
    let lib = std::fs::read_to_string(repo_root().join("crates/capi-runtime/src/lib.rs"))
        .expect("the runtime crate's lib.rs");
    let start = lib
        .find("pub trait StatusCode")
        .expect("the runtime declares `StatusCode`");
    let body = &lib[start..start + lib[start..].find("\n}\n").expect("end of the trait")];
    let declared: Vec<&str> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("const "))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert_eq!(declared, STATUS_CONSTS);
    // The generated impl maps each constant to the variant with that C name.
    for (name, capi) in every_capi() {
        for (rust, c, _, _) in STATUSES {
            let line = format!("const {c}: Self = Self::{rust};");
            assert_eq!(
                capi.contains(&line),
                STATUS_CONSTS.contains(c),
                "{name}: `{line}`"
            );
        }
    }
}

#[test]
fn every_crate_hosting_a_generated_capi_depends_on_the_runtime() {
    let root = repo_root();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        workspace.contains("\"crates/capi-runtime\""),
        "a workspace member"
    );
    assert!(
        workspace.contains(&format!("{PACKAGE} = {{ path = \"crates/capi-runtime\" }}")),
        "in [workspace.dependencies]"
    );
    for path in discover(&root).expect("specs") {
        let text = std::fs::read_to_string(&path).expect("spec");
        let spec = load_str(&path.to_string_lossy(), &text).expect("valid spec");
        let manifest_path = root.join(&spec.rust_crate).join("Cargo.toml");
        let manifest = std::fs::read_to_string(&manifest_path).expect("hosting crate's Cargo.toml");
        let dep = manifest
            .lines()
            .find(|l| {
                l.starts_with(&format!("{PACKAGE} ")) || l.starts_with(&format!("{PACKAGE}."))
            })
            .unwrap_or_else(|| panic!("{} does not depend on {PACKAGE}", manifest_path.display()));
        // An optional dependency must be enabled by a feature (the one that
        // enables the generated code).
        if dep.contains("optional = true") {
            assert!(
                manifest.contains(&format!("\"dep:{PACKAGE}\"")),
                "{}: no feature enables the optional {PACKAGE}",
                manifest_path.display()
            );
        }
    }
}
