//! Tier 2, C side: the header `include/<prefix>.h` for the exports in capi.rs.
//! It compiles as C99+ and as C++ (`-Wall -Wextra -Werror`).

use super::abi::{self, STATUSES};
use super::model::{Spec, Ty, do_not_edit};
use super::out::{Out, w};

fn c_doc(o: &mut Out, doc: &str) {
    w!(o, "/**");
    for l in doc.lines() {
        // `*/` inside a doc would end the comment early; `/*` trips -Wcomment.
        let l = l.trim_end().replace("*/", "* /").replace("/*", "/ *");
        if l.is_empty() {
            w!(o, " *");
        } else {
            w!(o, " * {l}");
        }
    }
    w!(o, " */");
}

fn return_note(spec: &Spec, ty: Ty) -> Option<String> {
    match ty {
        Ty::Void | Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => None,
        Ty::Bool | Ty::Num(_) => Some("On success the result is written to *out.".into()),
        Ty::Str => Some(format!(
            "On success *out receives a NUL-terminated UTF-8 string; free it with {}().",
            spec.string_free_fn()
        )),
        Ty::Vec(n) => Some(format!(
            "On success *out_ptr and *out_len receive an array; free it with {}(ptr, len).",
            spec.array_free_fn(n)
        )),
        Ty::HandleOwned(h) => Some(format!(
            "On success *out receives a new handle; free it with {}().",
            spec.handle_free_fn(&spec.handles[h])
        )),
    }
}

/// Emits `include/<prefix>.h`.
pub fn header(spec: &Spec) -> String {
    let up = spec.upper();
    let guard = format!("{up}_H");
    let mut o = Out::new();
    w!(o, "/* {} */", do_not_edit(&spec.file));
    w!(o);
    let mut doc = format!(
        "C API of `{}` (tier 2 of `cargo xtask gen`).\n\nConventions: every fallible function returns {status}; {up}_OK means success and\nthe out-parameters were written, any other value means nothing was written and\n{last}() returns the message. Every pointer argument is checked for NULL.\nA (pointer, length) pair may be NULL only when the length is 0. Objects come\nas opaque handles, destroyed with their *_free function (which accepts NULL).\nA handle must not be used from two threads at once.",
        spec.library,
        status = spec.c_status(),
        last = spec.last_error_fn()
    );
    if let Some(d) = &spec.doc {
        doc = format!("{d}\n\n{doc}");
    }
    c_doc(&mut o, &doc);
    w!(o, "#ifndef {guard}");
    w!(o, "#define {guard}");
    w!(o);
    w!(o, "#include <stdbool.h>");
    w!(o, "#include <stddef.h>");
    w!(o, "#include <stdint.h>");
    w!(o);
    w!(o, "#ifdef __cplusplus");
    w!(o, "extern \"C\" {{");
    w!(o, "#endif");
    w!(o);
    c_doc(&mut o, "The result of every fallible call.");
    w!(o, "typedef enum {} {{", spec.c_status());
    for (_, c, v, d) in STATUSES {
        w!(o, "  /** {} */", d.replace("*/", "* /"));
        w!(o, "  {up}_{c} = {v},");
    }
    w!(o, "}} {};", spec.c_status());
    for h in &spec.handles {
        w!(o);
        let d = match &h.doc {
            Some(d) => format!("{d}\n\nOpaque handle to a C++ `{}`.", h.cpp_type),
            None => format!("Opaque handle to a C++ `{}`.", h.cpp_type),
        };
        c_doc(&mut o, &d);
        w!(o, "typedef struct {0} {0};", h.c_name);
    }
    w!(o);
    c_doc(
        &mut o,
        "Copies this thread's last error message into buf (at most len - 1 bytes\nplus a NUL) and returns its full length, like snprintf; 0 if the last call\nsucceeded. buf may be NULL to query the length.",
    );
    w!(o, "size_t {}(char* buf, size_t len);", spec.last_error_fn());
    for h in &spec.handles {
        w!(o);
        c_doc(
            &mut o,
            &format!(
                "Destroys a {} (runs the C++ destructor). NULL is a no-op.",
                h.c_name
            ),
        );
        w!(o, "void {}({}* handle);", spec.handle_free_fn(h), h.c_name);
    }
    if spec.returns_str() {
        w!(o);
        c_doc(
            &mut o,
            "Frees a string returned by this library. NULL is a no-op.",
        );
        w!(o, "void {}(char* s);", spec.string_free_fn());
    }
    for n in spec.vec_returns() {
        w!(o);
        c_doc(
            &mut o,
            &format!(
                "Frees an array of {} returned by this library. NULL is a no-op.",
                n.c()
            ),
        );
        w!(
            o,
            "void {}({}* ptr, size_t len);",
            spec.array_free_fn(n),
            n.c()
        );
    }
    for f in spec.all_functions() {
        w!(o);
        let mut d = f
            .doc
            .clone()
            .unwrap_or_else(|| format!("`{}` of {}.", f.name, spec.file));
        if let Some(note) = return_note(spec, f.ret) {
            d.push_str("\n\n");
            d.push_str(&note);
        }
        if let Some(safety) = &f.safety {
            d.push_str("\n\nSafety: ");
            d.push_str(safety);
        }
        c_doc(&mut o, &d);
        let params: Vec<String> = abi::all_params(spec, f)
            .into_iter()
            .map(|p| p.c_decl)
            .collect();
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        w!(o, "{} {}({params});", spec.c_status(), f.c_name);
    }
    w!(o);
    w!(o, "#ifdef __cplusplus");
    w!(o, "}}  /* extern \"C\" */");
    w!(o, "#endif");
    w!(o);
    w!(o, "#endif /* {guard} */");
    o.finish()
}
