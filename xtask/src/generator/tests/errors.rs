//! Spec errors: each reports file:line:column and a hint, never panics, and
//! leaves no output.

use super::{MINI, list_files, load_err, pos_of, temp_dir};
use crate::generator::{error::SpecError, run_in};

fn only(errs: &[SpecError]) -> &SpecError {
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    &errs[0]
}

fn assert_at(e: &SpecError, text: &str, after: &str, needle: &str) {
    let (line, column) = pos_of(text, after, needle);
    assert_eq!(
        (e.line, e.column),
        (line, column),
        "wrong position for: {e}"
    );
    assert_eq!(e.file, "specs/test.yaml");
    assert!(
        e.to_string()
            .starts_with(&format!("specs/test.yaml:{line}:{column}: ")),
        "{e}"
    );
    assert!(e.to_string().contains("\n  hint: "), "{e}");
    assert!(!e.hint.trim().is_empty(), "{e}");
}

#[test]
fn unknown_type() {
    let spec = MINI.replace(
        "    return: i32\n",
        "    params:\n      - x: i33\n    return: i32\n",
    );
    let errs = load_err(&spec);
    let e = only(&errs);
    assert!(
        e.message.contains("unknown type `i33`") && e.message.contains("parameter `x`"),
        "{e}"
    );
    assert!(e.hint.contains("usize") && e.hint.contains("Vec<T>"), "{e}");
    assert_at(e, &spec, "- x:", "i33");
}

#[test]
fn unknown_element_type_and_misplaced_types() {
    let spec = MINI.replace(
        "    return: i32\n",
        "    params:\n      - x: \"&[bool]\"\n    return: \"&[u8]\"\n",
    );
    let errs = load_err(&spec);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(
        errs[0].message.contains("unknown element type `bool`"),
        "{}",
        errs[0]
    );
    assert!(
        errs[1].message.contains("is a parameter type"),
        "{}",
        errs[1]
    );
    assert!(errs[1].hint.contains("Vec<u8>"), "{}", errs[1]);
}

#[test]
fn unknown_handle_in_a_type() {
    let spec = MINI.replace(
        "    return: i32\n",
        "    params:\n      - other: \"&Thingy\"\n    return: i32\n",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(e.message.contains("unknown handle `Thingy`"), "{e}");
    assert!(
        e.hint.contains("Thing"),
        "hint lists the declared handles: {e}"
    );
    assert_at(&e, &spec, "- other:", "\"&Thingy\"");
}

#[test]
fn unknown_handle_of_a_method() {
    let spec = MINI.replace(
        "  - handle: Thing\n    name: get",
        "  - handle: Thang\n    name: get",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message.contains("unknown handle `Thang`") && e.message.contains("method `get`"),
        "{e}"
    );
    assert_at(&e, &spec, "methods:", "Thang");
}

#[test]
fn duplicate_names() {
    let spec = MINI.replace(
        "methods:\n",
        "  - name: make\n    return: Thing\n    cpp_fn: \"[]() { return ::mini::Thing(); }\"\nmethods:\n",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message.contains("duplicate name") && e.message.contains("ug_mini_make"),
        "{e}"
    );
    let (first_line, _) = pos_of(&spec, "functions:", "make");
    assert!(
        e.message.contains(&format!("line {first_line}:")),
        "names the first definition: {e}"
    );
    let second = spec.rfind("name: make").expect("second");
    let line = spec[..second].matches('\n').count() as u64 + 1;
    assert_eq!(
        (e.line, e.column),
        (line, 11),
        "points at the second definition: {e}"
    );

    let spec = MINI.replace(
        "    cpp_type: ::mini::Thing\n",
        "    cpp_type: ::mini::Thing\n  - name: Thing\n    cpp_type: ::mini::Other\n",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message.contains("duplicate name: handle type `Thing`"),
        "{e}"
    );

    let spec = MINI.replace(
        "    return: i32\n",
        "    params:\n      - x: i32\n      - x: i64\n    return: i32\n",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(e.message.contains("duplicate name: parameter `x`"), "{e}");
}

#[test]
fn missing_fields() {
    // A function without a name: reported at the function's mapping.
    let spec = MINI.replace("  - name: make\n    return: Thing", "  - return: Thing");
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message.contains("missing field `name`") && e.message.contains("function"),
        "{e}"
    );
    assert_at(&e, &spec, "functions:", "return: Thing");

    // A handle without cpp_type.
    let spec = MINI.replace("    cpp_type: ::mini::Thing\n", "");
    let e = only(&load_err(&spec)).clone();
    assert!(e.message.contains("missing field `cpp_type`"), "{e}");
    assert_at(&e, &spec, "handle_types:", "name: Thing");

    // A method with neither cpp_method nor cpp_body.
    let spec = MINI.replace("    cpp_method: get\n", "");
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message
            .contains("missing field `cpp_method` or `cpp_body`"),
        "{e}"
    );
    assert_at(&e, &spec, "methods:", "handle: Thing");

    // Top-level fields.
    let spec = MINI.replace("prefix: ug_mini\n", "");
    let e = only(&load_err(&spec)).clone();
    assert!(e.message.contains("missing field `prefix`"), "{e}");
    assert_eq!((e.line, e.column), (1, 1));
}

#[test]
fn both_cpp_method_and_cpp_body() {
    let spec = MINI.replace(
        "    cpp_method: get\n",
        "    cpp_method: get\n    cpp_body: return self.get();\n",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message.contains("both `cpp_method` and `cpp_body`"),
        "{e}"
    );
    assert_at(&e, &spec, "methods:", "get\n    cpp_body");

    let spec = MINI.replace(
        "    cpp_fn: \"[]() { return ::mini::Thing(); }\"\n",
        "    cpp_fn: \"[]() { return ::mini::Thing(); }\"\n    cpp_body: return ::mini::Thing();\n",
    );
    let e = only(&load_err(&spec)).clone();
    assert!(e.message.contains("both `cpp_fn` and `cpp_body`"), "{e}");
}

#[test]
fn unknown_field_and_bad_yaml_have_positions() {
    let spec = MINI.replace("    const: true\n", "    konst: true\n");
    let e = only(&load_err(&spec)).clone();
    assert!(e.message.contains("konst"), "{e}");
    assert_eq!(e.line, pos_of(&spec, "methods:", "konst").0, "{e}");

    let spec = MINI.replace("    return: i32\n", "    return: [i32\n");
    let e = only(&load_err(&spec)).clone();
    assert!(e.line > 0 && e.column > 0, "{e}");
}

#[test]
fn errors_from_all_specs_are_reported_together() {
    let spec = MINI
        .replace(
            "    return: i32\n",
            "    params:\n      - x: i33\n    return: i32\n",
        )
        .replace("  - name: make\n", "  - name: Make\n");
    let errs = load_err(&spec);
    assert_eq!(errs.len(), 2, "{errs:#?}");
}

#[test]
fn a_bad_spec_writes_nothing_and_names_the_file() {
    let root = temp_dir("bad");
    std::fs::create_dir_all(root.join("specs")).expect("mkdir");
    std::fs::write(root.join("specs/mini.yaml"), MINI).expect("write");
    let bad = MINI
        .replace("library: mini", "library: other")
        .replace("prefix: ug_mini", "prefix: ug_other")
        .replace("crates/mini", "crates/other")
        .replace("    return: i32\n", "    return: Thingy\n");
    std::fs::write(root.join("specs/other.yaml"), &bad).expect("write");
    let before = list_files(&root);
    let err = run_in(&root, Vec::new(), false).expect_err("a bad spec fails the run");
    let msg = format!("{err:#}");
    let (line, col) = pos_of(&bad, "methods:", "Thingy");
    assert!(
        msg.contains(&format!(
            "specs/other.yaml:{line}:{col}: unknown handle `Thingy`"
        )),
        "{msg}"
    );
    assert!(msg.contains("nothing was written"), "{msg}");
    assert_eq!(list_files(&root), before, "no partial output");

    // The good spec alone generates.
    run_in(&root, vec![root.join("specs/mini.yaml")], false).expect("good spec");
    assert!(root.join("include/ug_mini.h").is_file());
    assert!(root.join("bridge/mini/mini_bridge.cc").is_file());
    assert!(root.join("crates/mini/src/generated/safe.rs").is_file());
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn names_are_checked() {
    for (from, to, what) in [
        (
            "  - name: make\n",
            "  - name: make-it\n",
            "not a snake_case identifier",
        ),
        ("    name: get\n", "    name: delete\n", "C++ keyword"),
        ("  - name: Thing\n", "  - name: thing\n", "not CamelCase"),
        (
            "prefix: ug_mini\n",
            "prefix: ug_mini_\n",
            "prefix `ug_mini_`",
        ),
        (
            "prefix: ug_mini\n",
            "prefix: mn\n",
            "does not follow from library `mini`",
        ),
        (
            "namespace: mini_ns\n",
            "namespace: mini::class\n",
            "not a C++ namespace",
        ),
        (
            "rust_crate: crates/mini\n",
            "rust_crate: ../elsewhere\n",
            "relative path inside",
        ),
        (
            "    return: i32\n",
            "    params:\n      - out: i32\n    return: i32\n",
            "reserved",
        ),
        (
            "    return: i32\n",
            "    params:\n      - self: i32\n    return: i32\n",
            "Rust keyword",
        ),
    ] {
        let spec = MINI.replace(from, to);
        assert_ne!(spec, MINI, "replacement {from:?} applies");
        let errs = load_err(&spec);
        assert!(
            errs.iter().any(|e| e.message.contains(what) && e.line > 0),
            "{what}: {errs:#?}"
        );
    }
}

#[test]
fn one_spec_has_one_name() {
    // The prefix follows from the library: ug_<library>.
    let spec = MINI.replace("prefix: ug_mini\n", "prefix: ug_mini2\n");
    let e = only(&load_err(&spec)).clone();
    assert!(
        e.message
            .contains("prefix `ug_mini2` does not follow from library `mini`"),
        "{e}"
    );
    assert!(e.hint.contains("prefix: ug_mini"), "{e}");
    assert_at(&e, &spec, "prefix:", "ug_mini2");

    // The spec file is named after the library too.
    let root = temp_dir("misnamed");
    std::fs::create_dir_all(root.join("specs")).expect("mkdir");
    std::fs::write(root.join("specs/tiny.yaml"), MINI).expect("write");
    let err = run_in(&root, Vec::new(), false).expect_err("misnamed spec");
    let msg = format!("{err:#}");
    assert!(
        msg.contains(
            "specs/tiny.yaml:1:1: spec file `specs/tiny.yaml` is not named after its library `mini`"
        ),
        "{msg}"
    );
    assert!(msg.contains("specs/mini.yaml"), "{msg}");
    assert_eq!(list_files(&root), vec!["specs/tiny.yaml".to_string()]);
    std::fs::remove_dir_all(&root).ok();
}
