//! `safety:` makes a call `unsafe` in every Rust tier and documents the
//! contract in the C header; an empty contract is a spec error.

use super::{MINI, emit_text, file, load_err};

fn with_unsafe_fn(safety: &str) -> String {
    MINI.replace(
        "functions:\n",
        &format!(
            "functions:\n  - name: from_raw\n    params:\n      - ptr: u64\n    return: i32\n    safety: {safety}\n    cpp_body: \"return *reinterpret_cast<const int*>(ptr);\"\n"
        ),
    )
}

#[test]
fn a_safety_contract_makes_the_rust_call_unsafe_and_documents_it() {
    let files = emit_text(&with_unsafe_fn("\"`ptr` points to a live int\""));
    let safe = file(&files, "generated/safe.rs");
    assert!(
        safe.contains("pub unsafe fn from_raw(ptr: u64) -> Result<i32>"),
        "{safe}"
    );
    assert!(safe.contains("/// # Safety"), "{safe}");
    assert!(safe.contains("`ptr` points to a live int"), "{safe}");
    assert!(safe.contains("unsafe { ffi::from_raw(ptr) }"), "{safe}");
    let bridge = file(&files, "generated/bridge.rs");
    assert!(
        bridge.contains("unsafe fn from_raw(ptr: u64) -> Result<i32>;"),
        "{bridge}"
    );
    let capi = file(&files, "generated/capi.rs");
    assert!(capi.contains("unsafe { safe::from_raw(ptr) }"), "{capi}");
    let header = file(&files, "mn.h");
    assert!(
        header.contains("Safety: `ptr` points to a live int"),
        "{header}"
    );
}

#[test]
fn an_empty_safety_contract_is_an_error() {
    let text = with_unsafe_fn("\"  \"");
    let errors = load_err(&text);
    assert!(
        errors.iter().any(|e| e
            .to_string()
            .contains("field `safety` of function `from_raw` is empty")),
        "{errors:?}"
    );
}
