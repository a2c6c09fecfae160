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
    let header = file(&files, "ug_mini.h");
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

fn with_thread_safe(reason: &str) -> String {
    MINI.replacen(
        "    cpp_type: ",
        &format!("    thread_safe: {reason}\n    cpp_type: "),
        1,
    )
}

#[test]
fn a_thread_safe_handle_is_send_and_sync_with_its_reason() {
    let text = with_thread_safe("\"the object is immutable\"");
    let files = emit_text(&text);
    let bridge = file(&files, "generated/bridge.rs");
    for tr in ["Send", "Sync"] {
        assert!(
            bridge.contains(&format!(
                "// SAFETY: the object is immutable\nunsafe impl {tr} for ffi::"
            )),
            "{bridge}"
        );
    }
    let safe = file(&files, "generated/safe.rs");
    assert!(
        safe.contains("/// Send + Sync: the object is immutable"),
        "{safe}"
    );
}

#[test]
fn a_handle_without_thread_safe_is_neither_send_nor_sync() {
    let files = emit_text(MINI);
    let bridge = file(&files, "generated/bridge.rs");
    assert!(!bridge.contains("unsafe impl"), "{bridge}");
}

#[test]
fn an_empty_thread_safe_reason_is_an_error() {
    let errors = load_err(&with_thread_safe("\"\""));
    assert!(
        errors
            .iter()
            .any(|e| e.to_string().contains("field `thread_safe` of handle type")),
        "{errors:?}"
    );
}
