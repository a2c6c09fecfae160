//! Tier 1, C++ side: the bridge header and source under bridge/<library>/.
//!
//! Handles are the spec's C++ types themselves (a `using` alias in the bridge
//! namespace), never a wrapper with an `.inner` field: lambdas and member
//! calls receive the handle object. Every function is declared `Result` on the
//! Rust side, so a C++ exception becomes an `Err`; exceptions not derived
//! from `std::exception` are turned into `std::runtime_error` first.

use super::model::{CppImpl, Function, Spec, Ty, do_not_edit};
use super::out::{Out, doc_lines, w};

fn handle_name(spec: &Spec, h: usize) -> &str {
    &spec.handles[h].name
}

/// The C++ type of a bridge parameter.
fn param_type(spec: &Spec, ty: Ty) -> String {
    match ty {
        Ty::Bool => "bool".into(),
        Ty::Num(n) => n.cpp().into(),
        Ty::Str => "::rust::Str".into(),
        Ty::Slice(n) => format!("::rust::Slice<const {}>", n.cpp()),
        Ty::SliceMut(n) => format!("::rust::Slice<{}>", n.cpp()),
        Ty::HandleRef {
            handle,
            mutable: false,
        } => format!("const {}&", handle_name(spec, handle)),
        Ty::HandleRef {
            handle,
            mutable: true,
        } => format!("{}&", handle_name(spec, handle)),
        Ty::Void | Ty::Vec(_) | Ty::HandleOwned(_) => unreachable_type(ty),
    }
}

/// The C++ return type of a bridge function.
fn return_type(spec: &Spec, ty: Ty) -> String {
    match ty {
        Ty::Void => "void".into(),
        Ty::Bool => "bool".into(),
        Ty::Num(n) => n.cpp().into(),
        Ty::Str => "::rust::String".into(),
        Ty::Vec(n) => format!("::rust::Vec<{}>", n.cpp()),
        Ty::HandleOwned(h) => format!("::std::unique_ptr<{}>", handle_name(spec, h)),
        Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => unreachable_type(ty),
    }
}

/// Validation rejects these positions; the emitters still never panic.
fn unreachable_type(ty: Ty) -> String {
    format!("/* invalid type position: {ty:?} */ void")
}

fn receiver_decl(spec: &Spec, f: &Function, maybe_unused: bool) -> Option<String> {
    f.receiver.map(|r| {
        let attr = if maybe_unused {
            "[[maybe_unused]] "
        } else {
            ""
        };
        let c = if r.is_const { "const " } else { "" };
        format!("{attr}{c}{}& self", handle_name(spec, r.handle))
    })
}

/// The parameter list of a bridge function. With `body`, string parameters
/// get a `_` suffix: the body sees a `std::string` under the plain name.
fn signature(spec: &Spec, f: &Function, body: bool) -> String {
    let mut parts: Vec<String> = receiver_decl(spec, f, body).into_iter().collect();
    for p in &f.params {
        let ty = param_type(spec, p.ty);
        let attr = if body { "[[maybe_unused]] " } else { "" };
        let name = if body && p.ty == Ty::Str {
            format!("{}_", p.name)
        } else {
            p.name.clone()
        };
        parts.push(format!("{attr}{ty} {name}"));
    }
    format!(
        "{} {}({})",
        return_type(spec, f.ret),
        f.bridge_name,
        parts.join(", ")
    )
}

/// The arguments passed to a lambda or member function: native C++ values.
fn call_args(f: &Function, with_self: bool) -> String {
    let mut args: Vec<String> = Vec::new();
    if with_self && f.receiver.is_some() {
        args.push("self".into());
    }
    for p in &f.params {
        args.push(match p.ty {
            Ty::Str => format!("::std::string({})", p.name),
            _ => p.name.clone(),
        });
    }
    args.join(", ")
}

/// Wraps a C++ expression of the native return type into the bridge return type.
fn convert_return(spec: &Spec, ty: Ty, expr: &str) -> String {
    match ty {
        Ty::Void | Ty::Bool | Ty::Num(_) => expr.to_string(),
        Ty::Str => format!("gen_detail::to_rust_string({expr})"),
        Ty::Vec(n) => format!("gen_detail::to_rust_vec<{}>({expr})", n.cpp()),
        Ty::HandleOwned(h) => format!("gen_detail::into_unique<{}>({expr})", handle_name(spec, h)),
        Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => expr.to_string(),
    }
}

/// Emits `bridge/<library>/<library>_bridge.h`.
pub fn header(spec: &Spec) -> String {
    let mut o = Out::new();
    w!(o, "// {}", do_not_edit(&spec.file));
    w!(o, "//");
    w!(
        o,
        "// Tier 1 (C++ side) of `{}`: declarations the `#[cxx::bridge]` module in",
        spec.library
    );
    w!(
        o,
        "// {} binds. Definitions: {}.",
        spec.rust_path("bridge"),
        spec.bridge_source_path()
    );
    if let Some(doc) = &spec.doc {
        w!(o, "//");
        doc_lines(&mut o, "", "//", doc);
    }
    w!(o, "#pragma once");
    w!(o);
    for std in [
        "cstddef",
        "cstdint",
        "exception",
        "memory",
        "stdexcept",
        "string",
        "utility",
        "vector",
    ] {
        w!(o, "#include <{std}>");
    }
    w!(o);
    w!(o, "#include \"rust/cxx.h\"");
    w!(o);
    for inc in &spec.includes {
        if inc.starts_with('<') {
            w!(o, "#include {inc}");
        } else {
            w!(o, "#include \"{inc}\"");
        }
    }
    w!(o);
    w!(o, "namespace {} {{", spec.namespace);
    w!(o);
    for h in &spec.handles {
        if let Some(doc) = &h.doc {
            doc_lines(&mut o, "", "///", doc);
        }
        w!(o, "using {} = {};", h.name, h.cpp_type);
    }
    if !spec.handles.is_empty() {
        w!(o);
    }
    w!(o, "namespace gen_detail {{");
    w!(o);
    w!(
        o,
        "inline ::rust::String to_rust_string(const ::std::string& s) {{ return ::rust::String(s); }}"
    );
    w!(o, "inline ::rust::String to_rust_string(const char* s) {{");
    w!(
        o,
        "  if (s == nullptr) throw ::std::invalid_argument(\"a C++ function returned a null string\");"
    );
    w!(o, "  return ::rust::String(s);");
    w!(o, "}}");
    w!(
        o,
        "inline ::rust::String to_rust_string(::rust::String s) {{ return s; }}"
    );
    w!(o);
    w!(o, "template <typename T>");
    w!(
        o,
        "::rust::Vec<T> to_rust_vec(::rust::Vec<T>&& v) {{ return ::std::move(v); }}"
    );
    w!(o, "template <typename T, typename C>");
    w!(o, "::rust::Vec<T> to_rust_vec(const C& c) {{");
    w!(o, "  ::rust::Vec<T> out;");
    w!(o, "  out.reserve(c.size());");
    w!(o, "  for (const auto& x : c) out.push_back(x);");
    w!(o, "  return out;");
    w!(o, "}}");
    w!(o);
    w!(o, "template <typename T>");
    w!(
        o,
        "::std::unique_ptr<T> into_unique(::std::unique_ptr<T> p) {{"
    );
    w!(
        o,
        "  if (!p) throw ::std::invalid_argument(\"a C++ function returned a null handle\");"
    );
    w!(o, "  return p;");
    w!(o, "}}");
    w!(o, "template <typename T>");
    w!(
        o,
        "::std::unique_ptr<T> into_unique(T&& v) {{ return ::std::make_unique<T>(::std::move(v)); }}"
    );
    w!(o, "template <typename T>");
    w!(
        o,
        "::std::unique_ptr<T> into_unique(const T& v) {{ return ::std::make_unique<T>(v); }}"
    );
    w!(o);
    w!(
        o,
        "// Called from a catch (...) block: lets std::exception through (cxx turns it"
    );
    w!(
        o,
        "// into an Err) and replaces anything else by a std::runtime_error."
    );
    w!(
        o,
        "[[noreturn]] inline void rethrow_as_std(const char* where) {{"
    );
    w!(o, "  try {{");
    w!(o, "    throw;");
    w!(o, "  }} catch (const ::std::exception&) {{");
    w!(o, "    throw;");
    w!(o, "  }} catch (...) {{");
    w!(
        o,
        "    throw ::std::runtime_error(::std::string(where) + \": a C++ exception not derived from std::exception\");"
    );
    w!(o, "  }}");
    w!(o, "}}");
    w!(o);
    w!(o, "}}  // namespace gen_detail");
    w!(o);
    for f in spec.all_functions() {
        if let Some(doc) = &f.doc {
            doc_lines(&mut o, "", "///", doc);
        }
        w!(o, "{};", signature(spec, f, false));
    }
    w!(o);
    w!(o, "}}  // namespace {}", spec.namespace);
    o.finish()
}

/// A file name as a C string literal body (for `#line`).
fn c_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Emits `bridge/<library>/<library>_bridge.cc`.
pub fn source(spec: &Spec) -> String {
    let out_path = c_string(&spec.bridge_source_path());
    let spec_path = c_string(&spec.file);
    let mut o = Out::new();
    w!(o, "// {}", do_not_edit(&spec.file));
    w!(o, "//");
    w!(
        o,
        "// Tier 1 (C++ side) of `{}`. `#line` directives map the spec's C++",
        spec.library
    );
    w!(o, "// snippets back to {} in compiler messages.", spec.file);
    w!(o);
    w!(o, "#include \"{}\"", spec.bridge_header_include());
    w!(o);
    w!(o, "namespace {} {{", spec.namespace);
    for f in spec.all_functions() {
        w!(o);
        let body = matches!(f.imp, CppImpl::Body(_));
        w!(o, "{} {{", signature(spec, f, body));
        w!(o, "  try {{");
        match &f.imp {
            CppImpl::Member(member) => {
                let call = format!("self.{member}({})", call_args(f, false));
                emit_return(&mut o, spec, f.ret, &call);
            }
            CppImpl::Lambda(src) => {
                let native = format!("gen_lambda_({})", call_args(f, true));
                w!(o, "    auto gen_lambda_ =");
                w!(o, "#line {} \"{spec_path}\"", src.line);
                w!(o, "{}", src.code);
                let next = o.next_line() + 1;
                w!(o, "#line {next} \"{out_path}\"");
                w!(o, "    ;");
                emit_return(&mut o, spec, f.ret, &native);
            }
            CppImpl::Body(src) => {
                for p in &f.params {
                    if p.ty == Ty::Str {
                        w!(o, "    const ::std::string {0}({0}_);", p.name);
                    }
                }
                w!(o, "    auto gen_body_ = [&]() {{");
                w!(o, "#line {} \"{spec_path}\"", src.line);
                w!(o, "{}", src.code);
                let next = o.next_line() + 1;
                w!(o, "#line {next} \"{out_path}\"");
                w!(o, "    }};");
                emit_return(&mut o, spec, f.ret, "gen_body_()");
            }
        }
        w!(o, "  }} catch (...) {{");
        w!(
            o,
            "    gen_detail::rethrow_as_std(\"{}::{}\");",
            spec.library,
            f.bridge_name
        );
        w!(o, "  }}");
        w!(o, "}}");
    }
    w!(o);
    w!(o, "}}  // namespace {}", spec.namespace);
    o.finish()
}

fn emit_return(o: &mut Out, spec: &Spec, ret: Ty, native: &str) {
    if ret == Ty::Void {
        w!(o, "    {native};");
    } else {
        w!(o, "    return {};", convert_return(spec, ret, native));
    }
}
