//! Tier 2, Rust side: `#[no_mangle] extern "C"` exports over opaque handles,
//! in the style of rustls-ffi: one prefix, a status code from every fallible
//! call, out-parameters written only on success, every pointer NULL-checked,
//! every export inside `catch_unwind`, a per-thread last-error message, and
//! `_free` functions that accept NULL. The exports call the safe tier.
//!
//! The machinery they share (the panic boundary, the per-thread last error,
//! the pointer and slice checks, handing values to C and freeing them) is
//! not emitted: it lives once in the runtime crate (`crates/capi-runtime`),
//! which the generated code imports as `runtime`. Each generated module keeps
//! its own `Status` enum and tells the runtime about it (`StatusCode`).

use super::abi::{self, STATUSES};
use super::capi_runtime as runtime;
use super::model::{Function, Spec, Ty, do_not_edit};
use super::out::{Out, doc_lines, w};

/// (rust name, handle index, mutable) of every handle argument, receiver first.
fn handle_args(f: &Function) -> Vec<(String, usize, bool)> {
    let mut v = Vec::new();
    if let Some(r) = f.receiver {
        v.push(("this".to_string(), r.handle, !r.is_const));
    }
    for p in &f.params {
        if let Ty::HandleRef { handle, mutable } = p.ty {
            v.push((p.name.clone(), handle, mutable));
        }
    }
    v
}

/// Pairs of handle arguments of one type where one is mutable: they must not alias.
fn alias_pairs(f: &Function) -> Vec<(String, String)> {
    let hs = handle_args(f);
    let mut v = Vec::new();
    for i in 0..hs.len() {
        for j in i + 1..hs.len() {
            if hs[i].1 == hs[j].1 && (hs[i].2 || hs[j].2) {
                v.push((hs[i].0.clone(), hs[j].0.clone()));
            }
        }
    }
    v
}

/// Pairs of slice arguments where one is mutable: their memory must not overlap.
fn overlap_pairs(f: &Function) -> Vec<(String, String)> {
    let slices: Vec<(&str, bool)> = f
        .params
        .iter()
        .filter_map(|p| match p.ty {
            Ty::Slice(_) => Some((p.name.as_str(), false)),
            Ty::SliceMut(_) => Some((p.name.as_str(), true)),
            _ => None,
        })
        .collect();
    let mut v = Vec::new();
    for i in 0..slices.len() {
        for j in i + 1..slices.len() {
            if slices[i].1 || slices[j].1 {
                v.push((slices[i].0.to_string(), slices[j].0.to_string()));
            }
        }
    }
    v
}

fn c_display(name: &str) -> &str {
    if name == "this" { "self" } else { name }
}

fn emit_export(o: &mut Out, spec: &Spec, f: &Function) {
    let params = abi::all_params(spec, f);
    w!(o);
    match &f.doc {
        Some(doc) => doc_lines(o, "", "///", doc),
        None => w!(o, "/// `{}` of {}.", f.name, spec.file),
    }
    w!(o, "///");
    w!(
        o,
        "/// Returns `Status::Ok` and writes the out-parameters on success; on failure"
    );
    w!(
        o,
        "/// writes nothing and records a message for `{}`.",
        spec.last_error_fn()
    );
    w!(o, "///");
    w!(o, "/// # Safety");
    w!(o, "///");
    w!(
        o,
        "/// Each pointer must be NULL (rejected with `Status::NullArgument`) or valid:"
    );
    w!(
        o,
        "/// handles live and from this library, strings NUL-terminated, `p`/`p_len` pairs"
    );
    w!(
        o,
        "/// valid for `p_len` elements, out-parameters valid for writes. A handle must"
    );
    w!(o, "/// not be used from two threads at once.");
    if params.len() > 7 {
        w!(
            o,
            "#[allow(clippy::too_many_arguments)] // slices take two C parameters each"
        );
    }
    w!(o, "#[unsafe(no_mangle)]");
    let sig: Vec<String> = params
        .iter()
        .map(|p| format!("{}: {}", p.rust_name, p.rust_ty))
        .collect();
    w!(
        o,
        "pub unsafe extern \"C\" fn {}({}) -> Status {{",
        f.c_name,
        sig.join(", ")
    );
    w!(o, "    runtime::guard(|| {{");
    // 1. Checks on raw pointers: outputs, aliasing, overlap (before any reference exists).
    for out in abi::lower_return(spec, f.ret) {
        w!(
            o,
            "        let {0} = runtime::out_arg({0}, \"{0}\")?;",
            out.rust_name
        );
    }
    for (a, b) in alias_pairs(f) {
        w!(
            o,
            "        runtime::distinct({a}, {b}, \"{}\", \"{}\")?;",
            c_display(&a),
            c_display(&b)
        );
    }
    for (a, b) in overlap_pairs(f) {
        w!(
            o,
            "        runtime::disjoint({a}, {a}_len, {b}, {b}_len, \"{a}\", \"{b}\")?;"
        );
    }
    // 2. Conversions into references.
    let mut args: Vec<String> = Vec::new();
    if let Some(r) = f.receiver {
        let (helper, what) = if r.is_const {
            ("handle_ref", "NULL or a live handle")
        } else {
            ("handle_mut", "NULL or a live handle not otherwise borrowed")
        };
        w!(
            o,
            "        // SAFETY: the caller passes {what} (see # Safety)."
        );
        w!(
            o,
            "        let this = unsafe {{ runtime::{helper}(this, \"self\") }}?;"
        );
    }
    for p in &f.params {
        let n = &p.name;
        match p.ty {
            Ty::Bool | Ty::Num(_) => {}
            Ty::Str => {
                w!(
                    o,
                    "        // SAFETY: the caller passes NULL or a NUL-terminated string (see # Safety)."
                );
                w!(
                    o,
                    "        let {n} = unsafe {{ runtime::str_arg({n}, \"{n}\") }}?;"
                );
            }
            Ty::Slice(_) => {
                w!(
                    o,
                    "        // SAFETY: the caller passes `{n}` valid for `{n}_len` reads (see # Safety)."
                );
                w!(
                    o,
                    "        let {n} = unsafe {{ runtime::slice_arg({n}, {n}_len, \"{n}\") }}?;"
                );
            }
            Ty::SliceMut(_) => {
                w!(
                    o,
                    "        // SAFETY: `{n}` is valid for `{n}_len` writes (see # Safety) and overlaps no other slice (checked above)."
                );
                w!(
                    o,
                    "        let {n} = unsafe {{ runtime::slice_mut_arg({n}, {n}_len, \"{n}\") }}?;"
                );
            }
            Ty::HandleRef { mutable: false, .. } => {
                w!(
                    o,
                    "        // SAFETY: the caller passes NULL or a live handle (see # Safety)."
                );
                w!(
                    o,
                    "        let {n} = unsafe {{ runtime::handle_ref({n}, \"{n}\") }}?;"
                );
            }
            Ty::HandleRef { mutable: true, .. } => {
                w!(
                    o,
                    "        // SAFETY: the caller passes NULL or a live handle; it aliases no other handle argument (checked above)."
                );
                w!(
                    o,
                    "        let {n} = unsafe {{ runtime::handle_mut({n}, \"{n}\") }}?;"
                );
            }
            Ty::Void | Ty::Vec(_) | Ty::HandleOwned(_) => {}
        }
        args.push(n.clone());
    }
    // 3. The call through the safe tier.
    let mut call = match f.receiver {
        Some(_) => format!("this.{}({})", f.rust_name, args.join(", ")),
        None => format!("safe::{}({})", f.rust_name, args.join(", ")),
    };
    if f.safety.is_some() {
        w!(
            o,
            "        // SAFETY: the C caller upholds the contract in the header (`Safety:`)."
        );
        call = format!("unsafe {{ {call} }}");
    }
    if f.ret == Ty::Void {
        w!(o, "        {call}?;");
    } else {
        w!(o, "        let value = {call}?;");
    }
    // 4. Outputs, only after success.
    match f.ret {
        Ty::Void | Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => {}
        Ty::Bool | Ty::Num(_) => {
            w!(
                o,
                "        // SAFETY: `out` is non-NULL and aligned (checked above) and valid for writes (see # Safety)."
            );
            w!(o, "        unsafe {{ out.write(value) }};");
        }
        Ty::Str => {
            w!(
                o,
                "        let value = runtime::c_string(value, \"{}\")?;",
                f.c_name
            );
            w!(
                o,
                "        // SAFETY: `out` is non-NULL and aligned (checked above) and valid for writes (see # Safety)."
            );
            w!(o, "        unsafe {{ out.write(value.into_raw()) }};");
        }
        Ty::Vec(_) => {
            w!(o, "        let (ptr, len) = runtime::into_array(value);");
            w!(
                o,
                "        // SAFETY: both out-pointers are non-NULL and aligned (checked above) and valid for writes (see # Safety)."
            );
            w!(o, "        unsafe {{");
            w!(o, "            out_ptr.write(ptr);");
            w!(o, "            out_len.write(len);");
            w!(o, "        }}");
        }
        Ty::HandleOwned(_) => {
            w!(
                o,
                "        // SAFETY: `out` is non-NULL and aligned (checked above) and valid for writes (see # Safety)."
            );
            w!(
                o,
                "        unsafe {{ out.write(runtime::into_handle(value)) }};"
            );
        }
    }
    w!(o, "        Ok(())");
    w!(o, "    }})");
    w!(o, "}}");
}

/// Emits `<rust_crate>/src/generated/capi.rs`.
pub fn capi(spec: &Spec) -> String {
    let mut o = Out::new();
    w!(o, "// {}", do_not_edit(&spec.file));
    w!(o);
    w!(
        o,
        "//! Tier 2 of `{}`: the C ABI declared in `{}`.",
        spec.library,
        spec.c_header_path()
    );
    w!(o, "//!");
    w!(
        o,
        "//! Every fallible export returns a [`Status`], writes its out-parameters only"
    );
    w!(
        o,
        "//! on success, NULL-checks every pointer, runs inside `catch_unwind`, and on"
    );
    w!(
        o,
        "//! failure records a message that `{}` copies out.",
        spec.last_error_fn()
    );
    w!(
        o,
        "//! Handles are `Box`es of the safe tier's types; `*_free` accepts NULL."
    );
    w!(o, "//!");
    w!(
        o,
        "//! The checks, the panic boundary and the last error (one per thread, shared"
    );
    w!(
        o,
        "//! with every other C API in the process) come from `{}`.",
        runtime::PACKAGE
    );
    w!(o);
    w!(o, "use super::safe;");
    w!(o, "use std::ffi::c_char;");
    w!(o, "use {} as runtime;", runtime::CRATE);
    w!(o);
    w!(
        o,
        "/// The status every fallible export returns (`{}` in C).",
        spec.c_status()
    );
    w!(o, "#[repr(C)]");
    w!(o, "#[derive(Debug, Clone, Copy, PartialEq, Eq)]");
    w!(o, "pub enum Status {{");
    for (rust, _, v, doc) in STATUSES {
        w!(o, "    /// {}{}", doc[..1].to_uppercase(), &doc[1..]);
        w!(o, "    {rust} = {v},");
    }
    w!(o, "}}");
    w!(o);
    w!(
        o,
        "/// Which [`Status`] values the runtime returns for the failures it detects."
    );
    w!(o, "impl runtime::StatusCode for Status {{");
    for (rust, c, _, _) in STATUSES {
        if runtime::STATUS_CONSTS.contains(c) {
            w!(o, "    const {c}: Self = Self::{rust};");
        }
    }
    w!(o, "}}");
    w!(o);
    w!(
        o,
        "/// An error of the safe tier (a C++ exception) is `Status::Exception`."
    );
    w!(o, "impl From<safe::Error> for runtime::Failure<Status> {{");
    w!(o, "    fn from(e: safe::Error) -> Self {{");
    w!(o, "        Self::new(Status::Exception, e.to_string())");
    w!(o, "    }}");
    w!(o, "}}");
    // Fixed exports.
    w!(o);
    w!(
        o,
        "/// Copies this thread's last error message into `buf` (at most `len - 1` bytes"
    );
    w!(
        o,
        "/// and a NUL terminator) and returns the message's full length in bytes, like"
    );
    w!(
        o,
        "/// `snprintf`. Returns 0 when the last call on this thread succeeded. `buf` may be"
    );
    w!(o, "/// NULL (with any `len`) to query the length.");
    w!(o, "///");
    w!(o, "/// # Safety");
    w!(o, "///");
    w!(o, "/// `buf` is NULL or valid for `len` writes.");
    w!(o, "#[unsafe(no_mangle)]");
    w!(
        o,
        "pub unsafe extern \"C\" fn {}(buf: *mut c_char, len: usize) -> usize {{",
        spec.last_error_fn()
    );
    w!(
        o,
        "    // SAFETY: `buf` is NULL or valid for `len` writes (see # Safety), the runtime's contract."
    );
    w!(o, "    unsafe {{ runtime::last_error_message(buf, len) }}");
    w!(o, "}}");
    for h in &spec.handles {
        w!(o);
        w!(
            o,
            "/// Destroys a `{}` handle (runs the C++ destructor). NULL is a no-op.",
            h.c_name
        );
        w!(
            o,
            "/// Freeing leaves the last error message alone (C code often cleans up before"
        );
        w!(
            o,
            "/// it reports); a panicking destructor is caught and recorded."
        );
        w!(o, "///");
        w!(o, "/// # Safety");
        w!(o, "///");
        w!(
            o,
            "/// `handle` is NULL or a handle from this library that is not used afterwards."
        );
        w!(o, "#[unsafe(no_mangle)]");
        w!(
            o,
            "pub unsafe extern \"C\" fn {}(handle: *mut safe::{}) {{",
            spec.handle_free_fn(h),
            h.name
        );
        w!(
            o,
            "    // SAFETY: NULL or made by `runtime::into_handle` in this module, and not used"
        );
        w!(o, "    // again (see # Safety).");
        w!(
            o,
            "    unsafe {{ runtime::free_handle(handle, \"{}\") }}",
            h.c_name
        );
        w!(o, "}}");
    }
    if spec.returns_str() {
        w!(o);
        w!(
            o,
            "/// Frees a string returned by this library. NULL is a no-op."
        );
        w!(o, "///");
        w!(o, "/// # Safety");
        w!(o, "///");
        w!(
            o,
            "/// `s` is NULL or a string returned by this library, not freed before."
        );
        w!(o, "#[unsafe(no_mangle)]");
        w!(
            o,
            "pub unsafe extern \"C\" fn {}(s: *mut c_char) {{",
            spec.string_free_fn()
        );
        w!(
            o,
            "    // SAFETY: NULL or made by `CString::into_raw` in this module, not freed before"
        );
        w!(o, "    // (see # Safety).");
        w!(o, "    unsafe {{ runtime::free_string(s) }}");
        w!(o, "}}");
    }
    for n in spec.vec_returns() {
        let t = n.rust();
        w!(o);
        w!(
            o,
            "/// Frees an array of `{}` returned by this library. NULL is a no-op.",
            n.c()
        );
        w!(o, "///");
        w!(o, "/// # Safety");
        w!(o, "///");
        w!(
            o,
            "/// `ptr` is NULL or an array returned by this library with its `len`, not freed before."
        );
        w!(o, "#[unsafe(no_mangle)]");
        w!(
            o,
            "pub unsafe extern \"C\" fn {}(ptr: *mut {t}, len: usize) {{",
            spec.array_free_fn(n)
        );
        w!(
            o,
            "    // SAFETY: NULL or made with its `len` by `runtime::into_array` in this module,"
        );
        w!(o, "    // not freed before (see # Safety).");
        w!(o, "    unsafe {{ runtime::free_array(ptr, len) }}");
        w!(o, "}}");
    }
    for f in spec.all_functions() {
        emit_export(&mut o, spec, f);
    }
    o.finish()
}
