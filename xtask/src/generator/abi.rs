//! The C ABI lowering shared by the tier-2 Rust exports and the C header:
//! how each spec parameter and return value becomes C parameters.

use super::model::{Function, Spec, Ty};

/// One C-level parameter.
#[derive(Debug, Clone)]
pub struct CParam {
    /// Parameter name in the Rust export.
    pub rust_name: String,
    /// Its Rust type in the export.
    pub rust_ty: String,
    /// Its declaration in the C header (`const char* name`).
    pub c_decl: String,
}

fn cp(
    rust_name: impl Into<String>,
    rust_ty: impl Into<String>,
    c_decl: impl Into<String>,
) -> CParam {
    CParam {
        rust_name: rust_name.into(),
        rust_ty: rust_ty.into(),
        c_decl: c_decl.into(),
    }
}

/// The C parameters for one spec parameter.
pub fn lower_param(spec: &Spec, name: &str, ty: Ty) -> Vec<CParam> {
    match ty {
        Ty::Bool => vec![cp(name, "bool", format!("bool {name}"))],
        Ty::Num(n) => vec![cp(name, n.rust(), format!("{} {name}", n.c()))],
        Ty::Str => vec![cp(name, "*const c_char", format!("const char* {name}"))],
        Ty::Slice(n) => vec![
            cp(
                name,
                format!("*const {}", n.rust()),
                format!("const {}* {name}", n.c()),
            ),
            cp(format!("{name}_len"), "usize", format!("size_t {name}_len")),
        ],
        Ty::SliceMut(n) => vec![
            cp(
                name,
                format!("*mut {}", n.rust()),
                format!("{}* {name}", n.c()),
            ),
            cp(format!("{name}_len"), "usize", format!("size_t {name}_len")),
        ],
        Ty::HandleRef { handle, mutable } => {
            let h = &spec.handles[handle];
            if mutable {
                vec![cp(
                    name,
                    format!("*mut safe::{}", h.name),
                    format!("{}* {name}", h.c_name),
                )]
            } else {
                vec![cp(
                    name,
                    format!("*const safe::{}", h.name),
                    format!("const {}* {name}", h.c_name),
                )]
            }
        }
        Ty::Void | Ty::Vec(_) | Ty::HandleOwned(_) => Vec::new(),
    }
}

/// The out-parameters for a return type.
pub fn lower_return(spec: &Spec, ty: Ty) -> Vec<CParam> {
    match ty {
        Ty::Void | Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => Vec::new(),
        Ty::Bool => vec![cp("out", "*mut bool", "bool* out")],
        Ty::Num(n) => vec![cp(
            "out",
            format!("*mut {}", n.rust()),
            format!("{}* out", n.c()),
        )],
        Ty::Str => vec![cp("out", "*mut *mut c_char", "char** out")],
        Ty::Vec(n) => vec![
            cp(
                "out_ptr",
                format!("*mut *mut {}", n.rust()),
                format!("{}** out_ptr", n.c()),
            ),
            cp("out_len", "*mut usize", "size_t* out_len"),
        ],
        Ty::HandleOwned(h) => {
            let h = &spec.handles[h];
            vec![cp(
                "out",
                format!("*mut *mut safe::{}", h.name),
                format!("{}** out", h.c_name),
            )]
        }
    }
}

/// The receiver parameter of a method (`self` in C, `this` in Rust).
pub fn lower_receiver(spec: &Spec, f: &Function) -> Option<CParam> {
    f.receiver.map(|r| {
        let h = &spec.handles[r.handle];
        if r.is_const {
            cp(
                "this",
                format!("*const safe::{}", h.name),
                format!("const {}* self", h.c_name),
            )
        } else {
            cp(
                "this",
                format!("*mut safe::{}", h.name),
                format!("{}* self", h.c_name),
            )
        }
    })
}

/// All C parameters of an export, in order: receiver, parameters, outputs.
pub fn all_params(spec: &Spec, f: &Function) -> Vec<CParam> {
    let mut v: Vec<CParam> = lower_receiver(spec, f).into_iter().collect();
    for p in &f.params {
        v.extend(lower_param(spec, &p.name, p.ty));
    }
    v.extend(lower_return(spec, f.ret));
    v
}

/// The status codes every export returns, with their meaning.
pub const STATUSES: &[(&str, &str, u32, &str)] = &[
    ("Ok", "OK", 0, "success; out-parameters were written"),
    (
        "NullArgument",
        "NULL_ARGUMENT",
        1,
        "a required pointer argument was NULL",
    ),
    (
        "InvalidArgument",
        "INVALID_ARGUMENT",
        2,
        "an argument was malformed (misaligned or aliased pointer, oversized length, NUL in a returned string)",
    ),
    (
        "InvalidUtf8",
        "INVALID_UTF8",
        3,
        "a string argument was not valid UTF-8",
    ),
    (
        "Exception",
        "EXCEPTION",
        4,
        "the C++ library threw; the message holds what()",
    ),
    (
        "Panic",
        "PANIC",
        5,
        "a Rust panic was caught at the boundary (a bug)",
    ),
];
