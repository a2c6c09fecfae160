//! Validation: turns a [`RawSpec`] into a [`Spec`], or reports every problem
//! with `file:line:column` and a hint. Never panics on any input.

use serde_saphyr::Spanned;
use std::collections::HashMap;

use super::error::SpecError;
use super::model::{CppImpl, CppSource, Function, Handle, Num, Param, Receiver, Spec, Ty};
use super::names;
use super::spec::{RawFunction, RawMethod, RawParam, RawSpec, yaml_lines};

/// Position in the spec file.
#[derive(Debug, Clone, Copy)]
struct Pos {
    line: u64,
    column: u64,
}

fn pos<T>(s: &Spanned<T>) -> Pos {
    Pos {
        line: s.referenced.line(),
        column: s.referenced.column(),
    }
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
    errors: Vec<SpecError>,
}

impl Ctx<'_> {
    fn err(&mut self, at: Pos, message: impl Into<String>, hint: impl Into<String>) {
        self.errors.push(SpecError {
            file: self.file.to_string(),
            line: at.line,
            column: at.column,
            message: message.into(),
            hint: hint.into(),
        });
    }

    /// A required field; reports `missing field` at the enclosing mapping.
    fn required(
        &mut self,
        field: &Option<Spanned<String>>,
        name: &str,
        owner: &str,
        at: Pos,
        hint: &str,
    ) -> Option<(String, Pos)> {
        match field {
            Some(v) if !v.value.trim().is_empty() => Some((v.value.trim().to_string(), pos(v))),
            Some(v) => {
                self.err(pos(v), format!("field `{name}` of {owner} is empty"), hint);
                None
            }
            None => {
                self.err(at, format!("missing field `{name}` in {owner}"), hint);
                None
            }
        }
    }

    /// The line where a scalar's content starts: the next line for block
    /// scalars (`|`, `>`), the same line otherwise.
    fn content_line(&self, at: Pos) -> u64 {
        let Some(line) = yaml_lines(self.text).nth(at.line.saturating_sub(1) as usize) else {
            return at.line;
        };
        let c = line.chars().nth(at.column.saturating_sub(1) as usize);
        if matches!(c, Some('|' | '>')) {
            at.line + 1
        } else {
            at.line
        }
    }
}

/// Where a type is used: decides which type forms are allowed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Param,
    Return,
}

const TYPE_HINT: &str = "types are: void, bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, str, &[T], &mut [T], Vec<T> (T a number type), &Handle, &mut Handle, Handle";

fn parse_type(
    s: &str,
    use_: Use,
    handles: &HashMap<String, usize>,
) -> Result<Ty, (String, String)> {
    let s = s.trim();
    let num = |t: &str| Num::from_name(t.trim());
    let bad_elem = |t: &str| {
        (
            format!("unknown element type `{}` in `{s}`", t.trim()),
            "slice and Vec elements are number types: i8..i64, u8..u64, usize, f32, f64"
                .to_string(),
        )
    };
    let ty = if s == "void" {
        Ty::Void
    } else if s == "bool" {
        Ty::Bool
    } else if s == "str" || s == "&str" {
        Ty::Str
    } else if let Some(n) = num(s) {
        Ty::Num(n)
    } else if let Some(inner) = s
        .strip_prefix("&mut")
        .map(str::trim_start)
        .filter(|r| !r.is_empty())
    {
        if let Some(e) = inner.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            Ty::SliceMut(num(e).ok_or_else(|| bad_elem(e))?)
        } else if let Some(&h) = handles.get(inner) {
            Ty::HandleRef {
                handle: h,
                mutable: true,
            }
        } else {
            return Err(unknown_handle(inner, handles));
        }
    } else if let Some(inner) = s.strip_prefix('&').map(str::trim_start) {
        if let Some(e) = inner.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            Ty::Slice(num(e).ok_or_else(|| bad_elem(e))?)
        } else if let Some(&h) = handles.get(inner) {
            Ty::HandleRef {
                handle: h,
                mutable: false,
            }
        } else {
            return Err(unknown_handle(inner, handles));
        }
    } else if let Some(e) = s.strip_prefix("Vec<").and_then(|r| r.strip_suffix('>')) {
        Ty::Vec(num(e).ok_or_else(|| bad_elem(e))?)
    } else if let Some(&h) = handles.get(s) {
        Ty::HandleOwned(h)
    } else if names::is_camel_ident(s) {
        return Err(unknown_handle(s, handles));
    } else {
        return Err((format!("unknown type `{s}`"), TYPE_HINT.to_string()));
    };
    match (use_, ty) {
        (Use::Param, Ty::Void) => Err((
            "`void` is not a parameter type".into(),
            "remove the parameter".into(),
        )),
        (Use::Param, Ty::Vec(n)) => Err((
            format!("`Vec<{}>` is a return type", n.rust()),
            format!(
                "pass input arrays as `&[{0}]` and output buffers as `&mut [{0}]`",
                n.rust()
            ),
        )),
        (Use::Param, Ty::HandleOwned(_)) => Err((
            format!("handle `{s}` cannot be passed by value"),
            format!("handles are passed by reference: write `&{s}` or `&mut {s}`"),
        )),
        (Use::Return, Ty::Slice(n) | Ty::SliceMut(n)) => Err((
            format!("`{s}` is a parameter type"),
            format!("return an owned array as `Vec<{}>`", n.rust()),
        )),
        (Use::Return, Ty::HandleRef { .. }) => Err((
            format!("`{s}` cannot be returned: a borrowed handle has no owner across the FFI"),
            "return an owned handle (`Handle`) instead".into(),
        )),
        _ => Ok(ty),
    }
}

fn unknown_handle(name: &str, handles: &HashMap<String, usize>) -> (String, String) {
    let mut known: Vec<&str> = handles.keys().map(String::as_str).collect();
    known.sort_unstable();
    let hint = if known.is_empty() {
        "declare it under `handle_types` (no handle types are declared)".to_string()
    } else {
        format!(
            "declare it under `handle_types`, or use one of: {}",
            known.join(", ")
        )
    };
    (format!("unknown handle `{name}`"), hint)
}

/// Validates `raw`; `file` is the displayed spec path and `text` its contents.
pub fn validate(file: &str, text: &str, raw: &RawSpec) -> Result<Spec, Vec<SpecError>> {
    let mut cx = Ctx {
        file,
        text,
        errors: Vec::new(),
    };
    let top = Pos { line: 1, column: 1 };

    let library = cx.required(
        &raw.library,
        "library",
        "the spec",
        top,
        "add `library: <snake_case name>`; it names bridge/<library>/",
    );
    if let Some((l, p)) = &library
        && !names::is_snake_ident(l)
    {
        cx.err(
            *p,
            format!("library `{l}` is not a snake_case identifier"),
            "use lower-case letters, digits and single underscores, e.g. `fixture`",
        );
    }
    let prefix = cx.required(
        &raw.prefix,
        "prefix",
        "the spec",
        top,
        "add `prefix: <c_prefix>`; every C symbol starts with it",
    );
    if let Some((p_, p)) = &prefix
        && !names::is_snake_ident(p_)
    {
        cx.err(*p, format!("prefix `{p_}` is not a snake_case identifier"), "use lower-case letters, digits and single underscores, without a trailing `_` (the generator adds it)");
    } else if let (Some((p_, p)), Some((l, _))) = (&prefix, &library)
        && *p_ != format!("ug_{l}")
    {
        // One spec, one name: specs/<library>.yaml, bridge/<library>/, and
        // the C prefix and header include/ug_<library>.h all follow from it.
        cx.err(
            *p,
            format!("prefix `{p_}` does not follow from library `{l}`"),
            format!("write `prefix: ug_{l}`: the C symbols are ug_{l}_* and the header is include/ug_{l}.h"),
        );
    }
    let namespace = cx.required(
        &raw.namespace,
        "namespace",
        "the spec",
        top,
        "add `namespace: <c++::namespace>` for the generated C++ bridge",
    );
    if let Some((ns, p)) = &namespace {
        let ok = !ns.starts_with("::")
            && ns
                .split("::")
                .all(|part| names::is_cpp_ident(part) && names::keyword_of(part) != Some("C++"));
        if !ok {
            cx.err(
                *p,
                format!("namespace `{ns}` is not a C++ namespace name"),
                "write identifiers joined by `::`, e.g. `unigpu_gen::fixture`",
            );
        }
    }
    let rust_crate = cx.required(
        &raw.rust_crate,
        "rust_crate",
        "the spec",
        top,
        "add `rust_crate: crates/<name>`: the crate that hosts the generated Rust tiers",
    );
    if let Some((rc, p)) = &rust_crate
        && (rc.starts_with('/') || rc.split('/').any(|c| c == ".." || c.is_empty()))
    {
        cx.err(
            *p,
            format!("rust_crate `{rc}` must be a relative path inside the repository"),
            "write it like `crates/fixture`",
        );
    }
    let prefix_s = prefix.as_ref().map(|(p, _)| p.clone()).unwrap_or_default();

    let mut includes = Vec::new();
    for inc in &raw.includes {
        let v = inc.value.trim();
        let ok = (v.starts_with('<') && v.ends_with('>') && v.len() > 2)
            || (!v.is_empty() && !v.contains(['"', '<', '>', '\n']));
        if ok {
            includes.push(v.to_string());
        } else {
            cx.err(
                pos(inc),
                format!("invalid include `{v}`"),
                "write a header path (`counter.hpp`) or a system header (`<vector>`)",
            );
        }
    }

    // Every C symbol and bridge name, for duplicate detection.
    let mut c_symbols: HashMap<String, Pos> = HashMap::new();
    let mut bridge_names: HashMap<String, Pos> = HashMap::new();
    let claim = |cx: &mut Ctx<'_>,
                 table: &mut HashMap<String, Pos>,
                 name: String,
                 at: Pos,
                 what: &str| {
        if let Some(first) = table.get(&name) {
            cx.err(
                at,
                format!("duplicate name: {what} `{name}` is already defined at line {}:{}", first.line, first.column),
                "rename one of them (C symbols get the prefix once, so `cuda_x` and `x` collide under prefix `ug_cuda_rt`)",
            );
            false
        } else {
            table.insert(name, at);
            true
        }
    };
    for fixed in ["last_error_message", "string_free", "status"] {
        c_symbols.insert(format!("{prefix_s}_{fixed}"), top);
    }

    let mut handles = Vec::new();
    let mut handle_index = HashMap::new();
    for h in &raw.handle_types {
        let at = pos(h);
        let name = cx.required(
            &h.value.name,
            "name",
            "a handle type",
            at,
            "add `name: CamelCaseName`",
        );
        let cpp_type = cx.required(
            &h.value.cpp_type,
            "cpp_type",
            "a handle type",
            at,
            "add `cpp_type: ns::Class`: the C++ type the handle owns",
        );
        let Some((name, npos)) = name else {
            continue;
        };
        // A missing cpp_type is reported above; the handle is still declared
        // so that its uses cause no follow-up errors.
        let cpp_type = cpp_type.map(|(t, _)| t).unwrap_or_default();
        if !names::is_camel_ident(&name) {
            cx.err(
                npos,
                format!("handle name `{name}` is not CamelCase"),
                "start with an upper-case letter and use only letters and digits, e.g. `Counter`",
            );
            continue;
        }
        if handle_index.contains_key(&name) {
            cx.err(
                npos,
                format!("duplicate name: handle type `{name}` is declared twice"),
                "remove or rename one of them",
            );
            continue;
        }
        let snake = names::snake_case(&name);
        let c_name = names::join_prefix(&prefix_s, &snake);
        let _ = claim(&mut cx, &mut c_symbols, c_name.clone(), npos, "C type")
            && claim(
                &mut cx,
                &mut c_symbols,
                format!("{c_name}_free"),
                npos,
                "C function",
            )
            && claim(
                &mut cx,
                &mut bridge_names,
                name.clone(),
                npos,
                "bridge type",
            );
        let owner = format!("handle type `{name}`");
        let Some(thread_safe) = contract(
            &mut cx,
            &h.value.thread_safe,
            "thread_safe",
            &owner,
            "say why the C++ type may be used from several threads, e.g. \"c10::Stream is an immutable value\"",
        ) else {
            continue;
        };
        handle_index.insert(name.clone(), handles.len());
        handles.push(Handle {
            name,
            snake,
            c_name,
            cpp_type,
            doc: h.value.doc.as_ref().map(|d| d.value.trim().to_string()),
            thread_safe,
        });
    }

    let mut functions = Vec::new();
    for f in &raw.functions {
        if let Some(func) = function(&mut cx, f, &prefix_s, &handle_index) {
            let at = name_pos(&f.value.name, pos(f));
            let _ = claim(
                &mut cx,
                &mut c_symbols,
                func.c_name.clone(),
                at,
                "C function",
            ) && claim(
                &mut cx,
                &mut bridge_names,
                func.bridge_name.clone(),
                at,
                "function",
            );
            functions.push(func);
        }
    }
    let mut methods = Vec::new();
    let mut rust_method_names: HashMap<(usize, String), Pos> = HashMap::new();
    for m in &raw.methods {
        if let Some(func) = method(&mut cx, m, &prefix_s, &handle_index, &handles) {
            let at = name_pos(&m.value.name, pos(m));
            let _ = claim(
                &mut cx,
                &mut c_symbols,
                func.c_name.clone(),
                at,
                "C function",
            ) && claim(
                &mut cx,
                &mut bridge_names,
                func.bridge_name.clone(),
                at,
                "bridge function",
            );
            let key = (
                func.receiver.map_or(0, |r| r.handle),
                func.rust_name.clone(),
            );
            if let Some(first) = rust_method_names.get(&key) {
                cx.err(
                    at,
                    format!(
                        "duplicate name: method `{}` is already defined at line {}:{}",
                        func.name, first.line, first.column
                    ),
                    "rename one of them",
                );
            } else {
                rust_method_names.insert(key, at);
            }
            methods.push(func);
        }
    }

    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let (Some((library, at)), Some((prefix, _)), Some((namespace, _)), Some((rust_crate, _))) =
        (library, prefix, namespace, rust_crate)
    else {
        // Unreachable in practice: a missing field recorded an error above.
        return Err(vec![SpecError {
            file: file.to_string(),
            line: 1,
            column: 1,
            message: "incomplete spec".into(),
            hint: "add library, prefix, namespace and rust_crate".into(),
        }]);
    };
    // Functions are emitted in spec order; methods grouped by handle, in spec order.
    methods.sort_by_key(|m| m.receiver.map_or(0, |r| r.handle));
    Ok(Spec {
        file: file.to_string(),
        library,
        library_at: (at.line, at.column),
        prefix,
        namespace,
        rust_crate,
        doc: raw.doc.as_ref().map(|d| d.value.trim().to_string()),
        includes,
        handles,
        functions,
        methods,
    })
}

fn name_pos(name: &Option<Spanned<String>>, fallback: Pos) -> Pos {
    name.as_ref().map_or(fallback, pos)
}

fn params(
    cx: &mut Ctx<'_>,
    raw: &[Spanned<RawParam>],
    owner: &str,
    handles: &HashMap<String, usize>,
) -> Option<Vec<Param>> {
    let mut out: Vec<Param> = Vec::new();
    let mut ok = true;
    for p in raw {
        let at = pos(p);
        let name = p.value.name.trim();
        if !names::is_snake_ident(name) {
            cx.err(
                at,
                format!("parameter name `{name}` of {owner} is not a snake_case identifier"),
                "use lower-case letters, digits and single underscores, not ending in `_`",
            );
            ok = false;
            continue;
        }
        if let Some(lang) = names::keyword_of(name) {
            cx.err(
                at,
                format!("parameter name `{name}` of {owner} is a {lang} keyword"),
                "rename the parameter",
            );
            ok = false;
            continue;
        }
        if matches!(name, "out" | "out_len" | "out_ptr" | "this") || name.ends_with("_len") {
            cx.err(
                at,
                format!("parameter name `{name}` of {owner} is reserved by the generator"),
                "rename it: `out*`, `this` and `*_len` name generated C parameters",
            );
            ok = false;
            continue;
        }
        if out.iter().any(|q| q.name == name) {
            cx.err(
                at,
                format!("duplicate name: parameter `{name}` of {owner} is given twice"),
                "rename one of them",
            );
            ok = false;
            continue;
        }
        match parse_type(&p.value.ty.value, Use::Param, handles) {
            Ok(ty) => out.push(Param {
                name: name.to_string(),
                ty,
            }),
            Err((msg, hint)) => {
                cx.err(
                    pos(&p.value.ty),
                    format!("{msg} (parameter `{name}` of {owner})"),
                    hint,
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

fn ret(
    cx: &mut Ctx<'_>,
    raw: &Option<Spanned<String>>,
    owner: &str,
    handles: &HashMap<String, usize>,
) -> Option<Ty> {
    let Some(r) = raw else { return Some(Ty::Void) };
    match parse_type(&r.value, Use::Return, handles) {
        Ok(t) => Some(t),
        Err((msg, hint)) => {
            cx.err(pos(r), format!("{msg} (return type of {owner})"), hint);
            None
        }
    }
}

fn cpp_source(cx: &Ctx<'_>, s: &Spanned<String>) -> CppSource {
    CppSource {
        code: s.value.trim_end().to_string(),
        line: cx.content_line(pos(s)),
    }
}

fn function(
    cx: &mut Ctx<'_>,
    f: &Spanned<RawFunction>,
    prefix: &str,
    handles: &HashMap<String, usize>,
) -> Option<Function> {
    let at = pos(f);
    let raw = &f.value;
    let (name, npos) = cx.required(
        &raw.name,
        "name",
        "a function",
        at,
        "add `name: snake_case_name`",
    )?;
    if !names::is_snake_ident(&name) {
        cx.err(
            npos,
            format!("function name `{name}` is not a snake_case identifier"),
            "use lower-case letters, digits and single underscores",
        );
        return None;
    }
    let owner = format!("function `{name}`");
    let rust_name = names::strip_prefix(prefix, &name);
    if let Some(lang) = names::keyword_of(&rust_name) {
        cx.err(
            npos,
            format!("{owner} is named `{rust_name}` in Rust, a {lang} keyword"),
            "rename the function",
        );
        return None;
    }
    let params = params(cx, &raw.params, &owner, handles);
    let ret = ret(cx, &raw.ret, &owner, handles);
    let imp = match (&raw.cpp_fn, &raw.cpp_body) {
        (Some(a), Some(_)) => {
            cx.err(pos(a), format!("{owner} has both `cpp_fn` and `cpp_body`"), "keep one: `cpp_fn` is a lambda called with the parameters, `cpp_body` is a function body with the parameters in scope");
            None
        }
        (Some(l), None) if l.value.trim().is_empty() => {
            cx.err(pos(l), format!("field `cpp_fn` of {owner} is empty"), "write a C++ lambda, e.g. `[](std::int64_t x) { return x + 1; }`, or use `cpp_body`");
            None
        }
        (Some(l), None) if !l.value.trim_start().starts_with('[') => {
            cx.err(pos(l), format!("field `cpp_fn` of {owner} is not a lambda"), "start it with a capture list, e.g. `[](std::int64_t x) { return x + 1; }`, or write a body under `cpp_body`");
            None
        }
        (Some(l), None) => Some(CppImpl::Lambda(cpp_source(cx, l))),
        (None, Some(b)) if b.value.trim().is_empty() => {
            cx.err(
                pos(b),
                format!("field `cpp_body` of {owner} is empty"),
                "write the C++ body; the parameters are in scope",
            );
            None
        }
        (None, Some(b)) => Some(CppImpl::Body(cpp_source(cx, b))),
        (None, None) => {
            cx.err(
                at,
                format!("missing field `cpp_fn` or `cpp_body` in {owner}"),
                "add `cpp_fn: <lambda>` or `cpp_body: <C++ body>`",
            );
            None
        }
    };
    Some(Function {
        c_name: names::join_prefix(prefix, &name),
        bridge_name: rust_name.clone(),
        rust_name,
        name,
        doc: raw.doc.as_ref().map(|d| d.value.trim().to_string()),
        params: params?,
        ret: ret?,
        imp: imp?,
        receiver: None,
        safety: contract(
            cx,
            &raw.safety,
            "safety",
            &owner,
            "say what the caller must guarantee, e.g. \"`ptr` points to a live at::Tensor\"",
        )?,
    })
}

fn method(
    cx: &mut Ctx<'_>,
    m: &Spanned<RawMethod>,
    prefix: &str,
    handles: &HashMap<String, usize>,
    hlist: &[Handle],
) -> Option<Function> {
    let at = pos(m);
    let raw = &m.value;
    let name = cx.required(
        &raw.name,
        "name",
        "a method",
        at,
        "add `name: snake_case_name`",
    );
    let handle = cx.required(
        &raw.handle,
        "handle",
        "a method",
        at,
        "add `handle: <a name from handle_types>`",
    );
    let (name, npos) = name?;
    let owner = format!("method `{name}`");
    if !names::is_snake_ident(&name) {
        cx.err(
            npos,
            format!("method name `{name}` is not a snake_case identifier"),
            "use lower-case letters, digits and single underscores",
        );
        return None;
    }
    if let Some(lang) = names::keyword_of(&name) {
        cx.err(
            npos,
            format!("{owner} is a {lang} keyword"),
            "rename the method",
        );
        return None;
    }
    let (handle, hpos) = handle?;
    let Some(&hidx) = handles.get(&handle) else {
        let (msg, hint) = unknown_handle(&handle, handles);
        cx.err(hpos, format!("{msg} (handle of {owner})"), hint);
        return None;
    };
    let h = &hlist[hidx];
    let is_const = raw.is_const.as_ref().is_some_and(|c| c.value);
    let params = params(cx, &raw.params, &owner, handles);
    let ret = ret(cx, &raw.ret, &owner, handles);
    let imp = match (&raw.cpp_method, &raw.cpp_body) {
        (Some(a), Some(_)) => {
            cx.err(pos(a), format!("{owner} has both `cpp_method` and `cpp_body`"), "keep one: `cpp_method` names a member function (or is a lambda taking `self` first), `cpp_body` is a body with `self` in scope");
            None
        }
        (Some(c), None) if c.value.trim().is_empty() => {
            cx.err(pos(c), format!("field `cpp_method` of {owner} is empty and there is no `cpp_body`"), format!("name the member function of `{}` to call, or replace `cpp_method` with a `cpp_body`", h.cpp_type));
            None
        }
        (Some(c), None) => {
            let v = c.value.trim();
            if v.starts_with('[') {
                Some(CppImpl::Lambda(cpp_source(cx, c)))
            } else if names::is_cpp_ident(v) {
                Some(CppImpl::Member(v.to_string()))
            } else {
                cx.err(pos(c), format!("field `cpp_method` of {owner} is neither a member function name nor a lambda: `{v}`"), "write the member name (`value`) or a lambda taking the handle first (`[](const T& self) { ... }`)");
                None
            }
        }
        (None, Some(b)) if b.value.trim().is_empty() => {
            cx.err(
                pos(b),
                format!("field `cpp_body` of {owner} is empty"),
                "write the C++ body; `self` and the parameters are in scope",
            );
            None
        }
        (None, Some(b)) => Some(CppImpl::Body(cpp_source(cx, b))),
        (None, None) => {
            cx.err(
                at,
                format!("missing field `cpp_method` or `cpp_body` in {owner}"),
                "add `cpp_method: <member function>` or `cpp_body: <C++ body>`",
            );
            None
        }
    };
    let member = format!("{}_{name}", h.snake);
    Some(Function {
        c_name: names::join_prefix(prefix, &format!("{}_{name}", h.c_name)),
        bridge_name: member,
        rust_name: name.clone(),
        name,
        doc: raw.doc.as_ref().map(|d| d.value.trim().to_string()),
        params: params?,
        ret: ret?,
        imp: imp?,
        receiver: Some(Receiver {
            handle: hidx,
            is_const,
        }),
        safety: contract(
            cx,
            &raw.safety,
            "safety",
            &owner,
            "say what the caller must guarantee, e.g. \"`ptr` points to a live at::Tensor\"",
        )?,
    })
}

/// A justification field (`safety:`, `thread_safe:`), which must not be
/// empty. `Some(None)` when absent; `None` after reporting an empty one.
fn contract(
    cx: &mut Ctx<'_>,
    raw: &Option<Spanned<String>>,
    field: &str,
    owner: &str,
    hint: &str,
) -> Option<Option<String>> {
    match raw {
        None => Some(None),
        Some(s) if s.value.trim().is_empty() => {
            cx.err(pos(s), format!("field `{field}` of {owner} is empty"), hint);
            None
        }
        Some(s) => Some(Some(s.value.trim().to_string())),
    }
}
