//! Tier 1, Rust side: the `#[cxx::bridge]` module. Every function returns
//! `Result`, so cxx catches C++ exceptions and returns them as `Err`.

use super::model::{Function, Spec, Ty, do_not_edit};
use super::out::{Out, doc_lines, w};

/// The Rust type of a bridge parameter.
fn param_type(spec: &Spec, ty: Ty) -> String {
    match ty {
        Ty::Bool => "bool".into(),
        Ty::Num(n) => n.rust().into(),
        Ty::Str => "&str".into(),
        Ty::Slice(n) => format!("&[{}]", n.rust()),
        Ty::SliceMut(n) => format!("&mut [{}]", n.rust()),
        Ty::HandleRef {
            handle,
            mutable: false,
        } => format!("&{}", spec.handles[handle].name),
        Ty::HandleRef {
            handle,
            mutable: true,
        } => format!("Pin<&mut {}>", spec.handles[handle].name),
        Ty::Void | Ty::Vec(_) | Ty::HandleOwned(_) => "()".into(),
    }
}

/// The `Ok` type of a bridge function's `Result`.
fn return_type(spec: &Spec, ty: Ty) -> String {
    match ty {
        Ty::Void => "()".into(),
        Ty::Bool => "bool".into(),
        Ty::Num(n) => n.rust().into(),
        Ty::Str => "String".into(),
        Ty::Vec(n) => format!("Vec<{}>", n.rust()),
        Ty::HandleOwned(h) => format!("UniquePtr<{}>", spec.handles[h].name),
        Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => "()".into(),
    }
}

fn declaration(spec: &Spec, f: &Function) -> String {
    let mut params: Vec<String> = Vec::new();
    if let Some(r) = f.receiver {
        let name = &spec.handles[r.handle].name;
        params.push(if r.is_const {
            format!("self_: &{name}")
        } else {
            format!("self_: Pin<&mut {name}>")
        });
    }
    for p in &f.params {
        params.push(format!("{}: {}", p.name, param_type(spec, p.ty)));
    }
    format!(
        "{}fn {}({}) -> Result<{}>;",
        if f.safety.is_some() { "unsafe " } else { "" },
        f.bridge_name,
        params.join(", "),
        return_type(spec, f.ret)
    )
}

/// Emits `<rust_crate>/src/generated/bridge.rs`.
pub fn bridge(spec: &Spec) -> String {
    let mut o = Out::new();
    w!(o, "// {}", do_not_edit(&spec.file));
    w!(o);
    w!(
        o,
        "//! Tier 1 (Rust side) of `{}`: the `#[cxx::bridge]` over",
        spec.library
    );
    w!(
        o,
        "//! `{}`. Every function returns `Result`: a C++ exception",
        spec.bridge_header_path()
    );
    w!(
        o,
        "//! becomes an `Err(cxx::Exception)`. Use the safe tier (`super::safe`) instead."
    );
    w!(o);
    w!(
        o,
        "// Opaque C++ types cannot implement Debug; the safe tier's handles do."
    );
    w!(o, "#![allow(missing_debug_implementations)]");
    if spec
        .all_functions()
        .any(|f| f.params.len() + usize::from(f.receiver.is_some()) > 7)
    {
        w!(o, "// The cxx shims mirror the spec's parameter lists.");
        w!(o, "#![allow(clippy::too_many_arguments)]");
    }
    if spec.all_functions().any(|f| f.safety.is_some()) {
        w!(
            o,
            "// cxx's expansion of an `unsafe fn` drops the `# Safety` section written above it."
        );
        w!(o, "#![allow(clippy::missing_safety_doc)]");
    }
    w!(o);
    w!(o, "#[cxx::bridge(namespace = \"{}\")]", spec.namespace);
    w!(o, "pub mod ffi {{");
    w!(o, "    unsafe extern \"C++\" {{");
    w!(o, "        include!(\"{}\");", spec.bridge_header_include());
    for h in &spec.handles {
        w!(o);
        match &h.doc {
            Some(doc) => doc_lines(&mut o, "        ", "///", doc),
            None => w!(o, "        /// The C++ type `{}`.", h.cpp_type),
        }
        w!(o, "        type {};", h.name);
    }
    for f in spec.all_functions() {
        w!(o);
        if let Some(doc) = &f.doc {
            doc_lines(&mut o, "        ", "///", doc);
        }
        if let Some(safety) = &f.safety {
            w!(o, "        ///");
            w!(o, "        /// # Safety");
            w!(o, "        ///");
            doc_lines(&mut o, "        ", "///", safety);
        }
        w!(o, "        {}", declaration(spec, f));
    }
    w!(o, "    }}");
    w!(o, "}}");
    for h in &spec.handles {
        if let Some(reason) = &h.thread_safe {
            let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
            for tr in ["Send", "Sync"] {
                w!(o);
                w!(o, "// SAFETY: {reason}");
                w!(o, "unsafe impl {tr} for ffi::{} {{}}", h.name);
            }
        }
    }
    o.finish()
}
