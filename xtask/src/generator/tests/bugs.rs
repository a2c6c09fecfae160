//! One test per bug of the earlier generator. Each stays fixed.

use super::{MINI, emit_text, file, load_err, pos_of};

/// Bug 1: handle parameters were passed to lambdas as `.inner` instead of the
/// handle object.
#[test]
fn bug1_handle_params_reach_lambdas_as_the_handle() {
    let spec = format!(
        "{MINI}\n  - handle: Thing\n    name: unused\n    cpp_method: get\n"
    )
    .replace(
        "functions:\n",
        "functions:\n  - name: combine\n    params:\n      - a: \"&Thing\"\n      - b: \"&mut Thing\"\n      - n: i32\n    return: i32\n    cpp_fn: \"[](const ::mini::Thing& a, ::mini::Thing& b, int n) { return a.get() + b.get() + n; }\"\n",
    );
    let files = emit_text(&spec);
    let cc = file(&files, "mini_bridge.cc");
    assert!(
        cc.contains("int32_t combine(const Thing& a, Thing& b, ::std::int32_t n)"),
        "{cc}"
    );
    assert!(cc.contains("return gen_lambda_(a, b, n);"), "{cc}");
    for f in &files {
        assert!(
            !f.contents.contains(".inner"),
            "{} mentions .inner:\n{}",
            f.path,
            f.contents
        );
    }
    // The handle type in the bridge is the C++ type itself, not a wrapper.
    let h = file(&files, "mini_bridge.h");
    assert!(h.contains("using Thing = ::mini::Thing;"), "{h}");
}

/// Bug 2: method lambdas were emitted as `h.inner.lambda()`. A `cpp_method`
/// lambda is called with the handle first; a member name is called on it.
#[test]
fn bug2_method_lambdas_are_called_with_the_handle_not_on_inner() {
    let spec = format!(
        "{MINI}  - handle: Thing\n    name: scaled\n    params:\n      - k: i32\n    return: i32\n    const: true\n    cpp_method: \"[](const ::mini::Thing& t, int k) {{ return t.get() * k; }}\"\n"
    );
    let files = emit_text(&spec);
    let cc = file(&files, "mini_bridge.cc");
    assert!(cc.contains("return gen_lambda_(self, k);"), "{cc}");
    assert!(cc.contains("return self.get();"), "{cc}");
    for f in &files {
        assert!(
            !f.contents.contains(".inner"),
            "{}:\n{}",
            f.path,
            f.contents
        );
        assert!(
            !f.contents.contains(".lambda"),
            "{}:\n{}",
            f.path,
            f.contents
        );
        assert!(
            !f.contents.contains("self.["),
            "{}:\n{}",
            f.path,
            f.contents
        );
    }
}

/// Bug 3: double prefixes such as `ug_cuda_rt_cuda_*`.
#[test]
fn bug3_no_double_prefix() {
    let spec = r#"library: cuda_rt
prefix: ug_cuda_rt
namespace: rt_ns
rust_crate: crates/rt
handle_types:
  - name: CudaStream
    cpp_type: ::rt::Stream
functions:
  - name: cuda_init
    cpp_body: return;
  - name: ug_cuda_rt_device_count
    return: i32
    cpp_body: return 0;
  - name: malloc
    params:
      - bytes: usize
    return: u64
    cpp_body: return bytes;
  - name: cuda_stream_create
    return: CudaStream
    cpp_body: return ::rt::Stream();
methods:
  - handle: CudaStream
    name: sync
    cpp_method: sync
"#;
    let files = emit_text(spec);
    let h = file(&files, "include/ug_cuda_rt.h");
    for sym in [
        "ug_cuda_rt_status ug_cuda_rt_init(void);",
        "ug_cuda_rt_status ug_cuda_rt_device_count(int32_t* out);",
        "ug_cuda_rt_status ug_cuda_rt_malloc(size_t bytes, uint64_t* out);",
        "ug_cuda_rt_status ug_cuda_rt_stream_create(ug_cuda_rt_stream** out);",
        "ug_cuda_rt_status ug_cuda_rt_stream_sync(ug_cuda_rt_stream* self);",
        "void ug_cuda_rt_stream_free(ug_cuda_rt_stream* handle);",
        "typedef struct ug_cuda_rt_stream ug_cuda_rt_stream;",
    ] {
        assert!(h.contains(sym), "missing `{sym}` in:\n{h}");
    }
    for f in &files {
        assert!(
            !f.contents.contains("ug_cuda_rt_cuda"),
            "{}:\n{}",
            f.path,
            f.contents
        );
        assert!(
            !f.contents.contains("ug_cuda_rt_ug_cuda_rt"),
            "{}:\n{}",
            f.path,
            f.contents
        );
    }
    // The Rust names lose the prefix entirely.
    let safe = file(&files, "safe.rs");
    assert!(safe.contains("pub fn init()"), "{safe}");
    assert!(safe.contains("pub fn device_count()"), "{safe}");
    assert!(safe.contains("pub fn stream_create()"), "{safe}");

    // Two names that collapse to one symbol are a duplicate-name error.
    let clash = spec.replace(
        "  - name: malloc\n",
        "  - name: init\n    cpp_body: return;\n  - name: malloc\n",
    );
    let errs = load_err(&clash);
    assert!(
        errs.iter()
            .any(|e| e.message.contains("duplicate name") && e.message.contains("ug_cuda_rt_init")),
        "{errs:?}"
    );
}

/// Bug 4: an empty `cpp_method` without `cpp_body` emitted a TODO. It is an
/// error naming the spec file, line, column and field; nothing is generated.
#[test]
fn bug4_empty_cpp_method_is_an_error_not_a_todo() {
    let spec = MINI.replace("    cpp_method: get\n", "    cpp_method: \"\"\n");
    let errs = load_err(&spec);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    let (line, col) = pos_of(&spec, "name: get", "\"\"");
    assert_eq!(
        (e.file.as_str(), e.line, e.column),
        ("specs/test.yaml", line, col),
        "{e}"
    );
    assert!(
        e.message.contains("`cpp_method`") && e.message.contains("empty"),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("specs/test.yaml:{line}:{col}: ")),
        "{e}"
    );
    assert!(!e.hint.is_empty());

    // Also with the key present but no value at all.
    let spec = MINI.replace("    cpp_method: get\n", "    cpp_method:\n");
    let errs = load_err(&spec);
    assert!(
        errs.iter().any(|e| e.message.contains("`cpp_method`")
            && e.line == pos_of(&spec, "name: get", "cpp_method").0),
        "{errs:?}"
    );

    // No generated file of any real spec contains a TODO.
    let root = super::super::repo_root();
    let specs = super::super::discover(&root).expect("specs");
    for f in super::super::generate(&root, &specs).expect("generate") {
        assert!(!f.contents.contains("TODO"), "{} contains TODO", f.path);
    }
}
