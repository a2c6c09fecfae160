//! Tier 3: safe Rust wrappers. Each handle is an owning struct over a
//! `cxx::UniquePtr` (dropping it runs the C++ destructor); every call returns
//! `Result<_, Error>` carrying the C++ exception message.

use super::model::{Function, Spec, Ty, do_not_edit};
use super::out::{Out, doc_lines, w};

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
        } => format!("&mut {}", spec.handles[handle].name),
        Ty::Void | Ty::Vec(_) | Ty::HandleOwned(_) => "()".into(),
    }
}

fn return_type(spec: &Spec, ty: Ty) -> String {
    match ty {
        Ty::Void => "()".into(),
        Ty::Bool => "bool".into(),
        Ty::Num(n) => n.rust().into(),
        Ty::Str => "String".into(),
        Ty::Vec(n) => format!("Vec<{}>", n.rust()),
        Ty::HandleOwned(h) => spec.handles[h].name.clone(),
        Ty::Slice(_) | Ty::SliceMut(_) | Ty::HandleRef { .. } => "()".into(),
    }
}

/// The argument expression passed to the bridge for a parameter.
fn arg(p_name: &str, ty: Ty) -> String {
    match ty {
        Ty::HandleRef { mutable: false, .. } => format!("{p_name}.cpp()?"),
        Ty::HandleRef { mutable: true, .. } => format!("{p_name}.cpp_mut()?"),
        _ => p_name.to_string(),
    }
}

fn emit_fn(o: &mut Out, spec: &Spec, f: &Function, indent: &str) {
    let mut params: Vec<String> = Vec::new();
    let mut args: Vec<String> = Vec::new();
    if let Some(r) = f.receiver {
        if r.is_const {
            params.push("&self".into());
            args.push("self.cpp()?".into());
        } else {
            params.push("&mut self".into());
            args.push("self.cpp_mut()?".into());
        }
    }
    for p in &f.params {
        params.push(format!("{}: {}", p.name, param_type(spec, p.ty)));
        args.push(arg(&p.name, p.ty));
    }
    match &f.doc {
        Some(doc) => doc_lines(o, indent, "///", doc),
        None => w!(o, "{indent}/// Calls `{}` of {}.", f.name, spec.file),
    }
    w!(o, "{indent}///");
    w!(o, "{indent}/// # Errors");
    w!(o, "{indent}///");
    w!(
        o,
        "{indent}/// Returns the message of the C++ exception if the call throws."
    );
    if let Some(safety) = &f.safety {
        w!(o, "{indent}///");
        w!(o, "{indent}/// # Safety");
        w!(o, "{indent}///");
        doc_lines(o, indent, "///", safety);
    }
    if params.len() > 7 {
        w!(
            o,
            "{indent}#[allow(clippy::too_many_arguments)] // mirrors the spec's parameter list"
        );
    }
    w!(
        o,
        "{indent}pub {}fn {}({}) -> Result<{}> {{",
        if f.safety.is_some() { "unsafe " } else { "" },
        f.rust_name,
        params.join(", "),
        return_type(spec, f.ret)
    );
    let context = match f.receiver {
        Some(r) => format!("{}::{}", spec.handles[r.handle].name, f.rust_name),
        None => f.rust_name.clone(),
    };
    let mut call = format!("ffi::{}({})", f.bridge_name, args.join(", "));
    if f.safety.is_some() {
        w!(
            o,
            "{indent}    // SAFETY: forwarded from this function's `# Safety` contract."
        );
        call = format!("unsafe {{ {call} }}");
    }
    let mapped = format!("{call}.map_err(|e| Error::cpp(\"{context}\", &e))");
    match f.ret {
        Ty::HandleOwned(h) => {
            w!(
                o,
                "{indent}    {}::from_unique({mapped}?, \"{context}\")",
                spec.handles[h].name
            );
        }
        _ => w!(o, "{indent}    {mapped}"),
    }
    w!(o, "{indent}}}");
}

/// Whether any method has handle `i` as its receiver, or any call takes it
/// as a parameter, with this mutability: decides which accessors to emit.
fn takes_handle(spec: &Spec, i: usize, mutable: bool) -> bool {
    spec.methods.iter().any(|m| {
        m.receiver
            .is_some_and(|r| r.handle == i && r.is_const != mutable)
    }) || spec.all_functions().any(|f| {
        f.params
            .iter()
            .any(|p| p.ty == Ty::HandleRef { handle: i, mutable })
    })
}

/// Emits `<rust_crate>/src/generated/safe.rs`.
pub fn safe(spec: &Spec) -> String {
    let mut o = Out::new();
    w!(o, "// {}", do_not_edit(&spec.file));
    w!(o);
    w!(
        o,
        "//! Tier 3 of `{}`: safe Rust wrappers with RAII over the cxx bridge.",
        spec.library
    );
    w!(o, "//!");
    w!(
        o,
        "//! Handles own their C++ object and destroy it on drop. Every call returns"
    );
    w!(
        o,
        "//! `Result<_, Error>`; a C++ exception becomes an `Error` with its message."
    );
    if let Some(doc) = &spec.doc {
        w!(o, "//!");
        doc_lines(&mut o, "", "//!", doc);
    }
    w!(o);
    w!(o, "use super::bridge::ffi;");
    if spec
        .methods
        .iter()
        .any(|m| m.receiver.is_some_and(|r| !r.is_const))
        || spec.all_functions().any(|f| {
            f.params
                .iter()
                .any(|p| matches!(p.ty, Ty::HandleRef { mutable: true, .. }))
        })
    {
        w!(o, "use std::pin::Pin;");
    }
    w!(o, "use std::fmt;");
    w!(o);
    w!(
        o,
        "/// An error from the C++ side of `{}`: the exception's message and the call that raised it.",
        spec.library
    );
    w!(o, "#[derive(Debug, Clone, PartialEq, Eq)]");
    w!(o, "pub struct Error {{");
    w!(o, "    context: &'static str,");
    w!(o, "    message: String,");
    w!(o, "}}");
    w!(o);
    w!(o, "impl Error {{");
    w!(
        o,
        "    fn cpp(context: &'static str, e: &cxx::Exception) -> Self {{"
    );
    w!(
        o,
        "        Self {{ context, message: e.what().to_string() }}"
    );
    w!(o, "    }}");
    w!(o);
    w!(o, "    /// The call that failed, e.g. `Counter::add`.");
    w!(o, "    pub fn context(&self) -> &'static str {{");
    w!(o, "        self.context");
    w!(o, "    }}");
    w!(o);
    w!(o, "    /// The C++ exception message (`what()`).");
    w!(o, "    pub fn message(&self) -> &str {{");
    w!(o, "        &self.message");
    w!(o, "    }}");
    w!(o, "}}");
    w!(o);
    w!(o, "impl fmt::Display for Error {{");
    w!(
        o,
        "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{"
    );
    w!(
        o,
        "        write!(f, \"{}: {{}}: {{}}\", self.context, self.message)",
        spec.library
    );
    w!(o, "    }}");
    w!(o, "}}");
    w!(o);
    w!(o, "impl std::error::Error for Error {{}}");
    w!(o);
    w!(o, "/// `Result` with this tier's [`Error`].");
    w!(
        o,
        "pub type Result<T, E = Error> = std::result::Result<T, E>;"
    );
    for (i, h) in spec.handles.iter().enumerate() {
        w!(o);
        match &h.doc {
            Some(doc) => doc_lines(&mut o, "", "///", doc),
            None => w!(o, "/// An owned `{}`.", h.cpp_type),
        }
        w!(o, "///");
        w!(
            o,
            "/// Owns the C++ object (`{}`); dropping the handle destroys it.",
            h.cpp_type
        );
        if let Some(reason) = &h.thread_safe {
            w!(o, "///");
            doc_lines(&mut o, "", "///", &format!("Send + Sync: {reason}"));
        }
        let (needs_ref, needs_mut) = (takes_handle(spec, i, false), takes_handle(spec, i, true));
        w!(o, "pub struct {} {{", h.name);
        if !needs_ref && !needs_mut {
            // A handle nothing takes (a guard) is held only for its Drop.
            w!(o, "    #[allow(dead_code)]");
        }
        w!(o, "    ptr: cxx::UniquePtr<ffi::{}>,", h.name);
        w!(o, "}}");
        w!(o);
        w!(o, "impl fmt::Debug for {} {{", h.name);
        w!(
            o,
            "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{"
        );
        w!(
            o,
            "        f.debug_struct(\"{}\").finish_non_exhaustive()",
            h.name
        );
        w!(o, "    }}");
        w!(o, "}}");
        w!(o);
        w!(o, "impl {} {{", h.name);
        w!(
            o,
            "    fn from_unique(ptr: cxx::UniquePtr<ffi::{}>, context: &'static str) -> Result<Self> {{",
            h.name
        );
        w!(o, "        if ptr.is_null() {{");
        w!(
            o,
            "            return Err(Error {{ context, message: \"the C++ side returned a null {}\".to_string() }});",
            h.name
        );
        w!(o, "        }}");
        w!(o, "        Ok(Self {{ ptr }})");
        w!(o, "    }}");
        if needs_ref {
            w!(o);
            w!(
                o,
                "    /// The C++ object. Never fails for a handle built by this module (it is never null)."
            );
            w!(o, "    fn cpp(&self) -> Result<&ffi::{}> {{", h.name);
            w!(
                o,
                "        self.ptr.as_ref().ok_or_else(|| Error {{ context: \"{}\", message: \"null handle\".to_string() }})",
                h.name
            );
            w!(o, "    }}");
        }
        if needs_mut {
            w!(o);
            w!(
                o,
                "    /// The C++ object, mutably. Never fails for a handle built by this module."
            );
            w!(
                o,
                "    fn cpp_mut(&mut self) -> Result<Pin<&mut ffi::{}>> {{",
                h.name
            );
            w!(
                o,
                "        self.ptr.as_mut().ok_or_else(|| Error {{ context: \"{}\", message: \"null handle\".to_string() }})",
                h.name
            );
            w!(o, "    }}");
        }
        for m in spec
            .methods
            .iter()
            .filter(|m| m.receiver.is_some_and(|r| r.handle == i))
        {
            w!(o);
            emit_fn(&mut o, spec, m, "    ");
        }
        w!(o, "}}");
    }
    for f in &spec.functions {
        w!(o);
        emit_fn(&mut o, spec, f, "");
    }
    o.finish()
}
