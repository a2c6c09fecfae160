//! The front end: a `syn` function checked against the kernel language
//! and turned into the IR. Anything outside the language is an error with
//! the span of the code that uses it.

use std::collections::HashMap;

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

use crate::ir::*;

type Result<T> = std::result::Result<T, syn::Error>;

fn err<T>(span: Span, message: impl std::fmt::Display) -> Result<T> {
    Err(syn::Error::new(span, message))
}

fn not_yet<T>(span: Span, what: &str) -> Result<T> {
    err(
        span,
        format!(
            "{what} is not supported in a #[unigpu::kernel] yet (docs/kernels.md lists the language)"
        ),
    )
}

#[derive(Clone)]
enum Binding {
    Local {
        emitted: String,
        ty: Ty,
        mutable: bool,
    },
    Param(usize),
    /// A workgroup-shared array, by position in `Cx::shared`.
    Shared(usize),
    /// A generic kernel's `const N: usize` (its emitted name): a `usize`
    /// value known when the kernel is instantiated (generics.rs).
    Const(String),
}

/// At most this many bytes of shared arrays per kernel: WebGPU's default
/// `maxComputeWorkgroupStorageSize`, below CUDA's 48 KiB.
const SHARED_BYTES: u64 = 16384;

struct Cx {
    params: Vec<Param>,
    shared: Vec<Shared>,
    scopes: Vec<HashMap<String, Binding>>,
    next: usize,
    loops: usize,
    /// The device functions' signatures.
    sigs: Vec<Sig>,
    /// In a device function: its return type.
    device: Option<Ty>,
    /// The device functions called, with the calls' spans.
    calls: Vec<(usize, Span)>,
    /// The array access sites so far (`Kernel::sites`).
    sites: Vec<Site>,
    /// Every subgroup operation's call so far, in source order.
    subgroup_calls: Vec<Span>,
    /// Set just before lowering the whole value of a `let` or a plain
    /// assignment: the one place a subgroup operation may be.
    whole_value: bool,
    /// The declared workgroup size (1, 1, 1 in a device function).
    workgroup: [u32; 3],
}

/// A `#[unigpu::device]` function's signature.
#[derive(Clone)]
struct Sig {
    rust: String,
    emitted: String,
    params: Vec<(String, Ty)>,
    ret: Ty,
}

/// A device function's signature, checked.
pub fn check_sig(f: &syn::ItemFn) -> Result<()> {
    sig(f).map(|_| ())
}

fn sig(f: &syn::ItemFn) -> Result<Sig> {
    let s = &f.sig;
    if let Some(c) = &s.constness {
        return err(c.span(), "a device function cannot be `const`");
    }
    if let Some(a) = &s.asyncness {
        return err(a.span(), "a device function cannot be `async`");
    }
    if let Some(u) = &s.unsafety {
        return err(u.span(), "a device function cannot be `unsafe`");
    }
    if !s.generics.params.is_empty() || s.generics.where_clause.is_some() {
        return not_yet(s.generics.span(), "a generic device function");
    }
    let syn::ReturnType::Type(_, rt) = &s.output else {
        return err(
            s.ident.span(),
            "a #[unigpu::device] function returns a value: `-> f32` (one of f32, f64, i32, u32, i64, u64, usize, bool)",
        );
    };
    let Some(ret) = type_name(rt).as_deref().and_then(Ty::from_name) else {
        return err(
            rt.span(),
            "a device function returns one of f32, f64, i32, u32, i64, u64, usize, bool",
        );
    };
    let mut params = Vec::new();
    for input in &s.inputs {
        let syn::FnArg::Typed(pt) = input else {
            return err(input.span(), "a device function takes no `self`");
        };
        let syn::Pat::Ident(p) = &*pt.pat else {
            return err(
                pt.pat.span(),
                "a device function's parameter is a plain name",
            );
        };
        if p.mutability.is_some() || p.by_ref.is_some() || p.subpat.is_some() {
            return err(
                pt.pat.span(),
                "a device function's parameter is a plain name",
            );
        }
        let Some(t) = type_name(&pt.ty).as_deref().and_then(Ty::from_name) else {
            return err(
                pt.ty.span(),
                "a device function takes values of f32, f64, i32, u32, i64, u64, usize or bool (no arrays)",
            );
        };
        params.push((p.ident.to_string(), t));
    }
    Ok(Sig {
        rust: s.ident.to_string(),
        emitted: format!("d_{}", s.ident),
        params,
        ret,
    })
}

/// The device functions `helpers` (what the kernel calls, transitively),
/// checked: signatures, bodies, and no recursion.
pub fn funcs(helpers: &[syn::ItemFn]) -> Result<Vec<Func>> {
    let mut sigs: Vec<Sig> = Vec::new();
    for h in helpers {
        let s = sig(h)?;
        if sigs.iter().any(|o| o.rust == s.rust) {
            return err(
                h.sig.ident.span(),
                format!("device function `{}` is defined twice", s.rust),
            );
        }
        sigs.push(s);
    }
    let mut out = Vec::new();
    let mut graph = Vec::new();
    for (h, s) in helpers.iter().zip(&sigs) {
        let mut scope = HashMap::new();
        let mut params = Vec::new();
        for (i, (n, t)) in s.params.iter().enumerate() {
            let emitted = format!("a_{n}_{i}");
            scope.insert(
                n.clone(),
                Binding::Local {
                    emitted: emitted.clone(),
                    ty: *t,
                    mutable: false,
                },
            );
            params.push((emitted, *t));
        }
        let mut cx = Cx {
            params: Vec::new(),
            shared: Vec::new(),
            scopes: vec![scope, HashMap::new()],
            next: 0,
            loops: 0,
            sigs: sigs.clone(),
            device: Some(s.ret),
            calls: Vec::new(),
            // A device function has no arrays.
            sites: Vec::new(),
            subgroup_calls: Vec::new(),
            whole_value: false,
            workgroup: [1, 1, 1],
        };
        let Some((last, init)) = h.block.stmts.split_last() else {
            return err(
                h.block.span(),
                "a #[unigpu::device] function ends with the value it returns",
            );
        };
        let mut body = Vec::new();
        for st in init {
            cx.stmt(st, &mut body)?;
        }
        let result = match last {
            syn::Stmt::Expr(e, None) => {
                let v = cx.expr(e, Some(s.ret))?;
                if v.ty != s.ret {
                    return mismatch(e.span(), s.ret, v.ty);
                }
                v
            }
            other => {
                return err(
                    other.span(),
                    "a #[unigpu::device] function ends with the value it returns (an expression without `;`)",
                );
            }
        };
        graph.push(cx.calls.clone());
        out.push(Func {
            name: s.emitted.clone(),
            params,
            ret: s.ret,
            body,
            result,
        });
    }
    // Recursion: a cycle in the call graph, reported at a call in it.
    fn visit(
        n: usize,
        graph: &[Vec<(usize, Span)>],
        state: &mut [u8],
        names: &[Sig],
    ) -> Result<()> {
        state[n] = 1;
        for &(m, span) in &graph[n] {
            if state[m] == 1 {
                return err(
                    span,
                    format!(
                        "`{}` calls `{}` recursively: device functions cannot recurse (GPUs have no call stack for it)",
                        names[n].rust, names[m].rust
                    ),
                );
            }
            if state[m] == 0 {
                visit(m, graph, state, names)?;
            }
        }
        state[n] = 2;
        Ok(())
    }
    let mut state = vec![0u8; sigs.len()];
    for n in 0..sigs.len() {
        if state[n] == 0 {
            visit(n, &graph, &mut state, &sigs)?;
        }
    }
    Ok(out)
}

/// The parameter list, checked.
pub fn params(sig: &syn::Signature) -> Result<Vec<Param>> {
    if let Some(c) = &sig.constness {
        return err(c.span(), "a kernel cannot be `const`");
    }
    if let Some(a) = &sig.asyncness {
        return err(a.span(), "a kernel cannot be `async`");
    }
    if let Some(u) = &sig.unsafety {
        return err(u.span(), "a kernel cannot be `unsafe`");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return not_yet(sig.generics.span(), "a generic kernel");
    }
    if let syn::ReturnType::Type(_, t) = &sig.output {
        return err(
            t.span(),
            "a kernel returns nothing: it writes its results into `&mut [T]` arguments",
        );
    }
    let mut out = Vec::new();
    for input in &sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            return err(input.span(), "a kernel takes no `self`");
        };
        let name = match &*pt.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                if let Some(m) = &p.mutability {
                    return err(
                        m.span(),
                        "kernel parameters are immutable: copy one into a `let mut`",
                    );
                }
                p.ident.to_string()
            }
            other => return err(other.span(), "a kernel parameter is a plain name"),
        };
        if out.iter().any(|p: &Param| p.name == name) {
            return err(
                pt.pat.span(),
                format!("parameter `{name}` is declared twice"),
            );
        }
        if let Some(dyn_ty) = trait_object(&pt.ty) {
            return err(
                dyn_ty.span(),
                "trait objects are not supported in a kernel (a GPU calls no vtables): pass arrays and values, and call #[unigpu::device] functions",
            );
        }
        let kind = match &*pt.ty {
            syn::Type::Reference(r) => {
                if let Some(l) = &r.lifetime {
                    return err(l.span(), "kernel parameters take no lifetimes");
                }
                let syn::Type::Slice(s) = &*r.elem else {
                    return err(r.elem.span(), "an array parameter is `&[T]` or `&mut [T]`");
                };
                ParamKind::Array {
                    elem: element(&s.elem)?,
                    writable: r.mutability.is_some(),
                }
            }
            t => ParamKind::Scalar(scalar_param(t)?),
        };
        out.push(Param { name, kind });
    }
    Ok(out)
}

fn type_name(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// An array's element type.
fn element(t: &syn::Type) -> Result<Ty> {
    match type_name(t).as_deref() {
        Some("f16") => Ok(Ty::F16),
        Some("bf16") => Ok(Ty::Bf16),
        Some("u8") => Ok(Ty::U8),
        Some(n) => match Ty::from_name(n) {
            Some(ty @ (Ty::F32 | Ty::F64 | Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64)) => Ok(ty),
            _ => err(
                t.span(),
                format!(
                    "`{n}` is not an array element type: use f32, f64, i32, u32, i64, u64, f16, bf16 or u8"
                ),
            ),
        },
        None => err(
            t.span(),
            "an array's element type is one of f32, f64, i32, u32, i64, u64, f16, bf16, u8",
        ),
    }
}

/// A `dyn Trait` anywhere in a parameter's type (`&dyn Fn`, `Box<dyn Fn>`).
fn trait_object(t: &syn::Type) -> Option<&syn::Type> {
    match t {
        syn::Type::TraitObject(_) => Some(t),
        syn::Type::Reference(r) => trait_object(&r.elem),
        syn::Type::Paren(p) => trait_object(&p.elem),
        syn::Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                syn::GenericArgument::Type(t) => trait_object(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

/// A scalar parameter's type (what a host `Scalar` can carry).
fn scalar_param(t: &syn::Type) -> Result<Ty> {
    match type_name(t).as_deref().and_then(Ty::from_name) {
        Some(ty) => Ok(ty),
        None => err(
            t.span(),
            "a kernel parameter is `&[T]`, `&mut [T]` or a value of f32, f64, i32, u32, i64, u64, usize or bool",
        ),
    }
}

/// A kernel's checked parameters, shared arrays, body and access sites.
pub type Body = (Vec<Param>, Vec<Shared>, Vec<Stmt>, Vec<Site>);

/// The body, checked against `params` (`consts` names the kernel's `const`
/// parameters).
pub fn body(
    params: Vec<Param>,
    consts: &[String],
    block: &syn::Block,
    helpers: &[syn::ItemFn],
    workgroup: [u32; 3],
) -> Result<Body> {
    let mut sigs = Vec::new();
    for h in helpers {
        sigs.push(sig(h)?);
    }
    let mut top = HashMap::new();
    for (i, p) in params.iter().enumerate() {
        top.insert(p.name.clone(), Binding::Param(i));
    }
    for c in consts {
        top.insert(c.clone(), Binding::Const(const_name(c)));
    }
    let mut cx = Cx {
        params,
        shared: Vec::new(),
        scopes: vec![top],
        next: 0,
        loops: 0,
        sigs,
        device: None,
        calls: Vec::new(),
        sites: Vec::new(),
        subgroup_calls: Vec::new(),
        whole_value: false,
        workgroup,
    };
    let stmts = cx.block(block)?;
    crate::uniform::check(&stmts, &cx.subgroup_calls)?;
    Ok((cx.params, cx.shared, stmts, cx.sites))
}

/// The emitted name of a kernel's `const` parameter (the CUDA and WGSL
/// preambles and the CPU form's `let` define it).
pub fn const_name(rust: &str) -> String {
    format!("c_{rust}")
}

fn lit_is_untyped(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.suffix().is_empty(),
            syn::Lit::Float(f) => f.suffix().is_empty(),
            _ => false,
        },
        syn::Expr::Paren(p) => lit_is_untyped(&p.expr),
        syn::Expr::Group(g) => lit_is_untyped(&g.expr),
        syn::Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && lit_is_untyped(&u.expr),
        _ => false,
    }
}

fn mismatch<T>(span: Span, want: Ty, got: Ty) -> Result<T> {
    let hint = if got == Ty::F64 && want == Ty::F32 {
        " (an unsuffixed float literal whose type nothing fixes is f64: write `1.0f32`, or give the `let` a type)"
    } else if got == Ty::I32 && want != Ty::I32 {
        " (an unsuffixed integer literal whose type nothing fixes is i32: add a suffix, or give the `let` a type)"
    } else {
        ""
    };
    err(
        span,
        format!(
            "mismatched types: expected `{}`, found `{}`{hint}",
            want.name(),
            got.name()
        ),
    )
}

impl Cx {
    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    fn declare(&mut self, name: &str, ty: Ty, mutable: bool) -> String {
        let emitted = format!("v_{name}_{}", self.next);
        self.next += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(
                name.to_string(),
                Binding::Local {
                    emitted: emitted.clone(),
                    ty,
                    mutable,
                },
            );
        }
        emitted
    }

    fn block(&mut self, b: &syn::Block) -> Result<Vec<Stmt>> {
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        for s in &b.stmts {
            self.stmt(s, &mut out)?;
        }
        self.scopes.pop();
        Ok(out)
    }

    fn stmt(&mut self, s: &syn::Stmt, out: &mut Vec<Stmt>) -> Result<()> {
        match s {
            syn::Stmt::Local(l) => self.local(l, out),
            syn::Stmt::Expr(e, _) => {
                out.push(self.stmt_expr(e)?);
                Ok(())
            }
            syn::Stmt::Item(i) => not_yet(
                i.span(),
                "an item (function, constant, use) inside a kernel",
            ),
            syn::Stmt::Macro(m) => not_yet(m.span(), "a macro call inside a kernel"),
        }
    }

    fn local(&mut self, l: &syn::Local, out: &mut Vec<Stmt>) -> Result<()> {
        let (pat, ty) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let syn::Pat::Ident(id) = pat else {
            return not_yet(pat.span(), "a pattern other than a name in `let`");
        };
        if id.by_ref.is_some() || id.subpat.is_some() {
            return not_yet(pat.span(), "a pattern other than a name in `let`");
        }
        if let Some(init) = &l.init {
            if let Some(call) = shared_call(&init.expr) {
                return self.shared_decl(&id.ident.to_string(), ty, call, l.span());
            }
        }
        let want = match ty {
            Some(t) => Some(match type_name(t).as_deref().and_then(Ty::from_name) {
                Some(ty) => ty,
                None => {
                    return err(
                        t.span(),
                        "a local's type is one of f32, f64, i32, u32, i64, u64, usize, bool",
                    );
                }
            }),
            None => None,
        };
        let Some(init) = &l.init else {
            return not_yet(l.span(), "`let` without a value");
        };
        if let Some((_, d)) = &init.diverge {
            return not_yet(d.span(), "`let ... else`");
        }
        self.whole_value = true;
        let init = self.expr(&init.expr, want);
        self.whole_value = false;
        let init = init?;
        if let Some(w) = want {
            if init.ty != w {
                return mismatch(
                    l.init.as_ref().map_or(l.span(), |i| i.expr.span()),
                    w,
                    init.ty,
                );
            }
        }
        let ty = init.ty;
        let name = self.declare(&id.ident.to_string(), ty, id.mutability.is_some());
        out.push(Stmt::Let {
            name,
            ty,
            mutable: id.mutability.is_some(),
            init,
        });
        Ok(())
    }

    fn stmt_expr(&mut self, e: &syn::Expr) -> Result<Stmt> {
        match e {
            syn::Expr::Assign(a) => self.assign(&a.left, None, &a.right, a.span()),
            syn::Expr::Binary(b) if compound(&b.op).is_some() => {
                self.assign(&b.left, compound(&b.op), &b.right, b.span())
            }
            syn::Expr::If(i) => self.if_stmt(i),
            syn::Expr::MethodCall(m) if AtomicOp::from_method(&m.method.to_string()).is_some() => {
                Ok(Stmt::Eval(self.method(m, None)?))
            }
            syn::Expr::Call(c) if is_call_to(c, "barrier") => {
                if self.device.is_some() {
                    return err(
                        c.span(),
                        "`barrier()` is only allowed in the kernel itself, not in a device function",
                    );
                }
                if !c.args.is_empty() {
                    return err(c.args.span(), "`barrier()` takes no arguments");
                }
                Ok(Stmt::Barrier(c.span()))
            }
            syn::Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return not_yet(l.span(), "a labelled block");
                }
                if b.block.stmts.is_empty() {
                    return Ok(Stmt::Block(Vec::new()));
                }
                Ok(Stmt::Block(self.block(&b.block)?))
            }
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::While(w) => {
                if let Some(l) = &w.label {
                    return not_yet(l.span(), "a labelled loop");
                }
                if let syn::Expr::Let(l) = &*w.cond {
                    return not_yet(l.span(), "`while let`");
                }
                let cond = self.bool_expr(&w.cond)?;
                self.loops += 1;
                let body = self.block(&w.body);
                self.loops -= 1;
                Ok(Stmt::While { cond, body: body? })
            }
            syn::Expr::Loop(l) => {
                if let Some(l) = &l.label {
                    return not_yet(l.span(), "a labelled loop");
                }
                self.loops += 1;
                let body = self.block(&l.body);
                self.loops -= 1;
                Ok(Stmt::Loop(body?))
            }
            syn::Expr::Break(b) => {
                if let Some(l) = &b.label {
                    return not_yet(l.span(), "`break` to a label");
                }
                if let Some(v) = &b.expr {
                    return not_yet(v.span(), "`break` with a value");
                }
                if self.loops == 0 {
                    return err(b.span(), "`break` outside of a loop");
                }
                Ok(Stmt::Break(b.span()))
            }
            syn::Expr::Continue(c) => {
                if let Some(l) = &c.label {
                    return not_yet(l.span(), "`continue` to a label");
                }
                if self.loops == 0 {
                    return err(c.span(), "`continue` outside of a loop");
                }
                Ok(Stmt::Continue(c.span()))
            }
            syn::Expr::Return(r) => {
                if let Some(ret) = self.device {
                    let Some(v) = &r.expr else {
                        return err(r.span(), "a device function returns a value: `return v;`");
                    };
                    let x = self.expr(v, Some(ret))?;
                    if x.ty != ret {
                        return mismatch(v.span(), ret, x.ty);
                    }
                    return Ok(Stmt::ReturnValue(x));
                }
                if let Some(v) = &r.expr {
                    return err(v.span(), "a kernel returns no value: write `return;`");
                }
                Ok(Stmt::Return(r.span()))
            }
            syn::Expr::Paren(p) => self.stmt_expr(&p.expr),
            other => {
                // Checked, so an error inside it is reported as such.
                self.expr(other, None)?;
                err(
                    other.span(),
                    "this expression does nothing: a kernel statement is a `let`, an assignment, or control flow",
                )
            }
        }
    }

    fn assign(
        &mut self,
        left: &syn::Expr,
        op: Option<BinOp>,
        right: &syn::Expr,
        span: Span,
    ) -> Result<Stmt> {
        match left {
            syn::Expr::Path(p) => {
                let name = path_name(&p.path)
                    .ok_or_else(|| syn::Error::new(p.span(), "expected a variable name"))?;
                match self.lookup(&name) {
                    Some(Binding::Local {
                        emitted,
                        ty,
                        mutable,
                    }) => {
                        if !mutable {
                            return err(
                                p.span(),
                                format!(
                                    "cannot assign twice to immutable variable `{name}`: declare it `let mut`"
                                ),
                            );
                        }
                        let target = Expr {
                            kind: ExprKind::Var(emitted.clone()),
                            ty,
                        };
                        let value = self.assigned_value(target, ty, op, right, span)?;
                        Ok(Stmt::Assign {
                            name: emitted,
                            value,
                        })
                    }
                    Some(Binding::Const(_)) => err(
                        p.span(),
                        format!(
                            "`{name}` is a const parameter of the kernel: it cannot be assigned"
                        ),
                    ),
                    Some(Binding::Param(_)) => err(
                        p.span(),
                        format!("kernel parameter `{name}` is immutable: copy it into a `let mut`"),
                    ),
                    Some(Binding::Shared(_)) => err(
                        p.span(),
                        format!(
                            "shared array `{name}` is assigned element by element: `{name}[i] = v`"
                        ),
                    ),
                    None => err(p.span(), format!("cannot find `{name}` in this kernel")),
                }
            }
            syn::Expr::Index(ix) if self.shared_of(&ix.expr).is_some() => {
                let (array, elem) = self.shared_of(&ix.expr).unwrap_or((0, Ty::F32));
                let index = self.index(&ix.index)?;
                // A compound assignment reads first: its own site.
                let read = self.site(ix, Access::Read);
                let current = Expr {
                    kind: ExprKind::SharedLoad(array, Box::new(index.clone()), read),
                    ty: elem,
                };
                let value = self.assigned_value(current, elem, op, right, span)?;
                Ok(Stmt::SharedStore {
                    array,
                    index,
                    value,
                    site: self.site(ix, Access::Write),
                })
            }
            syn::Expr::Index(ix) => {
                let (array, elem, writable) = self.array_of(&ix.expr)?;
                if !writable {
                    let name = &self.params[array].name;
                    return err(
                        ix.expr.span(),
                        format!("`{name}` is `&[T]`, read-only: declare it `&mut [T]` to write it"),
                    );
                }
                let index = self.index(&ix.index)?;
                let read = self.site(ix, Access::Read);
                // f16/bf16 elements are computed in f32.
                let current = Expr {
                    kind: ExprKind::Load(array, Box::new(index.clone()), read),
                    ty: elem.value(),
                };
                let value = self.assigned_value(current, elem.value(), op, right, span)?;
                Ok(Stmt::Store {
                    array,
                    index,
                    value,
                    site: self.site(ix, Access::Write),
                })
            }
            syn::Expr::Paren(p) => self.assign(&p.expr, op, right, span),
            other => err(
                other.span(),
                "only a `let mut` variable or an element of a `&mut [T]` can be assigned",
            ),
        }
    }

    fn assigned_value(
        &mut self,
        current: Expr,
        ty: Ty,
        op: Option<BinOp>,
        right: &syn::Expr,
        span: Span,
    ) -> Result<Expr> {
        match op {
            None => {
                self.whole_value = true;
                let v = self.expr(right, Some(ty));
                self.whole_value = false;
                let v = v?;
                if v.ty != ty {
                    return mismatch(right.span(), ty, v.ty);
                }
                Ok(v)
            }
            Some(op) => {
                let want = if matches!(op, BinOp::Shl | BinOp::Shr) {
                    None
                } else {
                    Some(ty)
                };
                let r = self.expr(right, want)?;
                self.binary(op, current, r, span, right.span())
            }
        }
    }

    fn if_stmt(&mut self, i: &syn::ExprIf) -> Result<Stmt> {
        if let syn::Expr::Let(l) = &*i.cond {
            return not_yet(l.span(), "`if let`");
        }
        let cond = self.bool_expr(&i.cond)?;
        let then = self.block(&i.then_branch)?;
        let els = match &i.else_branch {
            None => Vec::new(),
            Some((_, e)) => match &**e {
                syn::Expr::Block(b) => self.block(&b.block)?,
                syn::Expr::If(nested) => vec![self.if_stmt(nested)?],
                other => return err(other.span(), "expected a block or `if` after `else`"),
            },
        };
        Ok(Stmt::If { cond, then, els })
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<Stmt> {
        if let Some(l) = &f.label {
            return not_yet(l.span(), "a labelled loop");
        }
        let syn::Pat::Ident(id) = &*f.pat else {
            return not_yet(f.pat.span(), "a `for` pattern other than a name");
        };
        if id.mutability.is_some() || id.by_ref.is_some() || id.subpat.is_some() {
            return not_yet(f.pat.span(), "a `for` pattern other than a plain name");
        }
        let syn::Expr::Range(r) = strip(&f.expr) else {
            return not_yet(f.expr.span(), "`for` over anything but a range `a..b`");
        };
        if let syn::RangeLimits::Closed(c) = r.limits {
            return not_yet(c.span(), "an inclusive range `a..=b`");
        }
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return err(r.span(), "a `for` range needs both ends: `a..b`");
        };
        let (start, end) = self.pair(start, end)?;
        if !start.ty.is_int() {
            return err(
                r.span(),
                format!("a `for` range is over integers, not `{}`", start.ty.name()),
            );
        }
        let ty = start.ty;
        self.scopes.push(HashMap::new());
        let name = self.declare(&id.ident.to_string(), ty, false);
        self.loops += 1;
        let body = self.block(&f.body);
        self.loops -= 1;
        self.scopes.pop();
        Ok(Stmt::For {
            name,
            ty,
            start,
            end,
            body: body?,
        })
    }

    fn bool_expr(&mut self, e: &syn::Expr) -> Result<Expr> {
        let c = self.expr(e, Some(Ty::Bool))?;
        if c.ty != Ty::Bool {
            return mismatch(e.span(), Ty::Bool, c.ty);
        }
        Ok(c)
    }

    /// An array parameter named by `e`: (position, element, writable).
    fn array_of(&self, e: &syn::Expr) -> Result<(usize, Ty, bool)> {
        let name = match strip(e) {
            syn::Expr::Path(p) => path_name(&p.path),
            _ => None,
        };
        let Some(name) = name else {
            if shared_call(e).is_some() {
                return err(
                    e.span(),
                    "a shared array is declared with `let name = shared::<T, N>();` at the top level of the kernel's body",
                );
            }
            return err(e.span(), "only an array parameter can be indexed");
        };
        match self.lookup(&name) {
            Some(Binding::Param(i)) => match self.params[i].kind {
                ParamKind::Array { elem, writable } => Ok((i, elem, writable)),
                ParamKind::Scalar(t) => err(
                    e.span(),
                    format!("`{name}` is a `{}`, not an array", t.name()),
                ),
            },
            Some(Binding::Local { ty, .. }) => err(
                e.span(),
                format!("`{name}` is a `{}`, not an array", ty.name()),
            ),
            Some(Binding::Shared(_)) => err(
                e.span(),
                format!("shared array `{name}` is indexed (`{name}[i]`), not used whole"),
            ),
            Some(Binding::Const(_)) => err(
                e.span(),
                format!("`{name}` is a const parameter (a `usize`), not an array"),
            ),
            None => err(e.span(), format!("cannot find `{name}` in this kernel")),
        }
    }

    /// Numbers the access `a[i]` (reported, when out of bounds, with the
    /// array's name and the line of `a[i]`).
    fn site(&mut self, ix: &syn::ExprIndex, access: Access) -> u32 {
        self.new_site(&ix.expr, ix.span(), access)
    }

    fn new_site(&mut self, array: &syn::Expr, span: Span, access: Access) -> u32 {
        let array = match strip(array) {
            syn::Expr::Path(p) => path_name(&p.path).unwrap_or_default(),
            other => other.to_token_stream().to_string(),
        };
        self.sites.push(Site {
            array,
            span,
            access,
        });
        (self.sites.len() - 1) as u32
    }

    /// `array.atomic_OP(index, value)` or
    /// `array.atomic_compare_exchange(index, current, new)`.
    fn atomic(&mut self, op: AtomicOp, m: &syn::ExprMethodCall) -> Result<Expr> {
        let (mem, elem) = match self.shared_of(&m.receiver) {
            Some((i, elem)) => (Mem::Shared(i), elem),
            None => {
                let (i, elem, writable) = self.array_of(&m.receiver)?;
                if !writable {
                    let name = &self.params[i].name;
                    return err(
                        m.receiver.span(),
                        format!("`{name}` is `&[T]`, read-only: atomics need `&mut [T]`"),
                    );
                }
                (Mem::Global(i), elem)
            }
        };
        if !matches!(elem, Ty::U32 | Ty::I32) {
            return err(
                m.receiver.span(),
                format!("atomics are on u32 and i32 arrays, not `{}`", elem.name()),
            );
        }
        let arity = if op == AtomicOp::CompareExchange {
            3
        } else {
            2
        };
        if m.args.len() != arity {
            let shape = if arity == 3 {
                "(index, current, new)"
            } else {
                "(index, value)"
            };
            return err(m.span(), format!("`{}` takes {shape}", m.method));
        }
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let index = self.index(args[0])?;
        let mut vals = Vec::new();
        for a in &args[1..] {
            let v = self.expr(a, Some(elem))?;
            if v.ty != elem {
                return mismatch(a.span(), elem, v.ty);
            }
            vals.push(v);
        }
        let value = Box::new(vals.pop().unwrap_or(Expr {
            kind: ExprKind::Lit(Lit::Int(0)),
            ty: elem,
        }));
        let current = vals.pop().map(Box::new);
        let site = self.new_site(&m.receiver, m.span(), Access::Atomic);
        Ok(Expr {
            kind: ExprKind::Atomic {
                op,
                mem,
                index: Box::new(index),
                value,
                current,
                site,
            },
            ty: elem,
        })
    }

    /// A shared array named by `e`: (position, element).
    fn shared_of(&self, e: &syn::Expr) -> Option<(usize, Ty)> {
        let syn::Expr::Path(p) = strip(e) else {
            return None;
        };
        match self.lookup(&path_name(&p.path)?)? {
            Binding::Shared(i) => Some((i, self.shared[i].elem)),
            _ => None,
        }
    }

    /// `let name = shared::<T, N>();`, only at the top level of the body
    /// (each is one array per workgroup, whatever the control flow).
    fn shared_decl(
        &mut self,
        name: &str,
        ty: Option<&syn::Type>,
        call: &syn::ExprCall,
        span: Span,
    ) -> Result<()> {
        if let Some(t) = ty {
            return err(
                t.span(),
                "a shared array's type is given in `shared::<T, N>()`, not on the `let`",
            );
        }
        // The body's own scope sits above the parameters'.
        if self.scopes.len() != 2 || self.device.is_some() {
            return err(
                span,
                "a shared array is declared at the top level of the kernel's body, outside any block, branch or loop",
            );
        }
        if !call.args.is_empty() {
            return err(call.args.span(), "`shared::<T, N>()` takes no arguments");
        }
        let syn::Expr::Path(p) = &*call.func else {
            return err(call.span(), "expected `shared::<T, N>()`");
        };
        let generics = match p.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::AngleBracketed(a)) if a.args.len() == 2 => &a.args,
            _ => {
                return err(
                    call.span(),
                    "a shared array is `shared::<T, N>()`: its element type and its length",
                );
            }
        };
        let syn::GenericArgument::Type(t) = &generics[0] else {
            return err(generics[0].span(), "expected the element type");
        };
        let elem = element(t)?;
        if elem.is_narrow() {
            return not_yet(t.span(), &format!("a shared array of {}", elem.name()));
        }
        let len_arg = &generics[1];
        // `N` parses as a type argument (`shared::<f32, N>`), `{ N }` as a
        // const one.
        let const_arg = match len_arg {
            syn::GenericArgument::Type(t) => type_name(t),
            syn::GenericArgument::Const(syn::Expr::Path(p)) => path_name(&p.path),
            syn::GenericArgument::Const(syn::Expr::Block(b)) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(syn::Expr::Path(p), None)] => path_name(&p.path),
                _ => None,
            },
            _ => None,
        };
        let len = match len_arg {
            syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            })) => Size::Lit(n.base10_parse::<u32>()?),
            _ => match const_arg.and_then(|n| self.lookup(&n)) {
                Some(Binding::Const(c)) => Size::Const(c),
                _ => {
                    return err(
                        len_arg.span(),
                        "a shared array's length is a whole number or one of the kernel's `const N: usize` parameters",
                    );
                }
            },
        };
        if len == Size::Lit(0) {
            return err(len_arg.span(), "a shared array cannot be empty");
        }
        // Lengths given by const parameters are counted when the kernel is
        // instantiated (generated::build_with), where their values are known.
        let bytes: u64 = self
            .shared
            .iter()
            .chain([&Shared {
                name: String::new(),
                elem,
                len: len.clone(),
            }])
            .filter_map(|s| Some(s.len.lit()? as u64 * s.elem.bits() as u64 / 8))
            .sum::<u64>();
        if bytes > SHARED_BYTES {
            return err(
                len_arg.span(),
                format!(
                    "{bytes} bytes of shared arrays: at most {SHARED_BYTES} run on every backend"
                ),
            );
        }
        let i = self.shared.len();
        self.shared.push(Shared {
            name: format!("s_{name}_{}", self.next),
            elem,
            len,
        });
        self.next += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), Binding::Shared(i));
        }
        Ok(())
    }

    fn index(&mut self, e: &syn::Expr) -> Result<Expr> {
        let i = self.expr(e, Some(Ty::Usize))?;
        if i.ty != Ty::Usize {
            return err(
                e.span(),
                format!(
                    "an index is a `usize`, not `{}`: convert it with `as usize`",
                    i.ty.name()
                ),
            );
        }
        Ok(i)
    }

    /// Two operands of one type: an unsuffixed literal takes the other's.
    fn pair(&mut self, l: &syn::Expr, r: &syn::Expr) -> Result<(Expr, Expr)> {
        if lit_is_untyped(l) && !lit_is_untyped(r) {
            let r = self.expr(r, None)?;
            let l = self.expr(l, Some(r.ty))?;
            Ok((l, r))
        } else {
            let l = self.expr(l, None)?;
            let r = self.expr(r, Some(l.ty))?;
            Ok((l, r))
        }
    }

    fn binary(&mut self, op: BinOp, l: Expr, r: Expr, span: Span, rspan: Span) -> Result<Expr> {
        use BinOp::*;
        let t = l.ty;
        let ok = match op {
            Add | Sub | Mul | Div => t != Ty::Bool,
            // On floats Rust's (C's fmod): exact, the sign of the dividend.
            Rem => t.is_int() || t.is_float(),
            BitAnd | BitOr | BitXor => t.is_int() || t == Ty::Bool,
            Shl | Shr => {
                if !t.is_int() || !r.ty.is_int() {
                    return err(
                        span,
                        format!(
                            "shifts take integers, not `{}` and `{}`",
                            t.name(),
                            r.ty.name()
                        ),
                    );
                }
                return Ok(Expr {
                    kind: ExprKind::Bin(op, Box::new(l), Box::new(r)),
                    ty: t,
                });
            }
            Eq | Ne => true,
            Lt | Le | Gt | Ge => t != Ty::Bool,
            And | Or => t == Ty::Bool,
        };
        if r.ty != t {
            return mismatch(rspan, t, r.ty);
        }
        if !ok {
            return err(
                span,
                format!("`{}` cannot be applied to `{}`", op_text(op), t.name()),
            );
        }
        let ty = if matches!(op, Eq | Ne | Lt | Le | Gt | Ge | And | Or) {
            Ty::Bool
        } else {
            t
        };
        Ok(Expr {
            kind: ExprKind::Bin(op, Box::new(l), Box::new(r)),
            ty,
        })
    }

    fn expr(&mut self, e: &syn::Expr, want: Option<Ty>) -> Result<Expr> {
        // Only the outermost expression of a `let`'s or an assignment's
        // value is "whole"; everything inside it is not.
        let whole = std::mem::take(&mut self.whole_value);
        match e {
            syn::Expr::Lit(l) => lit(&l.lit, want),
            syn::Expr::Paren(p) => {
                self.whole_value = whole;
                self.expr(&p.expr, want)
            }
            syn::Expr::Group(g) => {
                self.whole_value = whole;
                self.expr(&g.expr, want)
            }
            syn::Expr::Call(c) if subgroup_op(c).is_some() => self.subgroup_call(c, want, whole),
            syn::Expr::Path(p) => {
                let Some(name) = path_name(&p.path) else {
                    return not_yet(p.span(), "a path other than a variable name");
                };
                match self.lookup(&name) {
                    Some(Binding::Local { emitted, ty, .. }) => Ok(Expr {
                        kind: ExprKind::Var(emitted),
                        ty,
                    }),
                    Some(Binding::Const(emitted)) => Ok(Expr {
                        kind: ExprKind::Var(emitted),
                        ty: Ty::Usize,
                    }),
                    Some(Binding::Param(i)) => match self.params[i].kind {
                        ParamKind::Scalar(ty) => Ok(Expr {
                            kind: ExprKind::Scalar(i),
                            ty,
                        }),
                        ParamKind::Array { .. } => err(
                            p.span(),
                            format!(
                                "array `{name}` can only be indexed (`{name}[i]`) or asked its length (`{name}.len()`)"
                            ),
                        ),
                    },
                    Some(Binding::Shared(_)) => err(
                        p.span(),
                        format!(
                            "shared array `{name}` can only be indexed (`{name}[i]`) or asked its length (`{name}.len()`)"
                        ),
                    ),
                    None => err(p.span(), format!("cannot find `{name}` in this kernel")),
                }
            }
            syn::Expr::Binary(b) => {
                let Some(op) = bin_op(&b.op) else {
                    return err(b.op.span(), "an assignment is a statement, not a value");
                };
                let (l, r) = if matches!(op, BinOp::Shl | BinOp::Shr) {
                    let l = self.expr(&b.left, want)?;
                    let r = self.expr(&b.right, None)?;
                    (l, r)
                } else if matches!(
                    op,
                    BinOp::Add
                        | BinOp::Sub
                        | BinOp::Mul
                        | BinOp::Div
                        | BinOp::Rem
                        | BinOp::BitAnd
                        | BinOp::BitOr
                        | BinOp::BitXor
                ) && want.is_some()
                    && lit_is_untyped(&b.left)
                    && lit_is_untyped(&b.right)
                {
                    (self.expr(&b.left, want)?, self.expr(&b.right, want)?)
                } else {
                    self.pair(&b.left, &b.right)?
                };
                self.binary(op, l, r, b.span(), b.right.span())
            }
            syn::Expr::Unary(u) => match u.op {
                syn::UnOp::Neg(_) => {
                    // `-2147483648i32` is a literal at the edge of its range.
                    let v = self.expr(&u.expr, want)?;
                    if v.ty.is_float() || v.ty.is_signed() {
                        Ok(Expr {
                            ty: v.ty,
                            kind: ExprKind::Neg(Box::new(v)),
                        })
                    } else {
                        err(u.span(), format!("cannot negate `{}`", v.ty.name()))
                    }
                }
                syn::UnOp::Not(_) => {
                    let v = self.expr(&u.expr, want)?;
                    if v.ty.is_float() {
                        return err(u.span(), format!("cannot apply `!` to `{}`", v.ty.name()));
                    }
                    Ok(Expr {
                        ty: v.ty,
                        kind: ExprKind::Not(Box::new(v)),
                    })
                }
                _ => not_yet(u.span(), "dereferencing"),
            },
            syn::Expr::Cast(c) => {
                let Some(to) = type_name(&c.ty).as_deref().and_then(Ty::from_name) else {
                    return err(
                        c.ty.span(),
                        "`as` converts to one of f32, f64, i32, u32, i64, u64, usize",
                    );
                };
                let v = self.expr(&c.expr, None)?;
                if to == Ty::Bool && v.ty != Ty::Bool {
                    return err(
                        c.span(),
                        format!(
                            "cannot cast `{}` as `bool`: compare with 0 instead",
                            v.ty.name()
                        ),
                    );
                }
                if v.ty == Ty::Bool && to.is_float() {
                    return err(
                        c.span(),
                        "cannot cast `bool` as a float: cast it to an integer first",
                    );
                }
                Ok(Expr {
                    kind: ExprKind::Cast(Box::new(v)),
                    ty: to,
                })
            }
            syn::Expr::Index(ix) => {
                if let Some((array, elem)) = self.shared_of(&ix.expr) {
                    let index = self.index(&ix.index)?;
                    let site = self.site(ix, Access::Read);
                    return Ok(Expr {
                        kind: ExprKind::SharedLoad(array, Box::new(index), site),
                        ty: elem,
                    });
                }
                let (array, elem, _) = self.array_of(&ix.expr)?;
                let index = self.index(&ix.index)?;
                let site = self.site(ix, Access::Read);
                Ok(Expr {
                    kind: ExprKind::Load(array, Box::new(index), site),
                    ty: elem.value(),
                })
            }
            syn::Expr::Field(f) => self.thread_index(f),
            syn::Expr::MethodCall(m) => self.method(m, want),
            syn::Expr::Call(c) => self.call(c, want),
            syn::Expr::Closure(c) => err(c.span(), "closures are not supported in a kernel"),
            syn::Expr::Macro(m) => not_yet(m.span(), "a macro call inside a kernel"),
            syn::Expr::Reference(r) => err(r.span(), "references cannot be taken inside a kernel"),
            syn::Expr::If(i) => not_yet(i.span(), "`if` as a value"),
            syn::Expr::Block(b) => not_yet(b.span(), "a block as a value"),
            syn::Expr::Array(a) => not_yet(a.span(), "an array value"),
            syn::Expr::Tuple(t) => not_yet(t.span(), "a tuple"),
            syn::Expr::Struct(s) => not_yet(s.span(), "a struct value"),
            syn::Expr::Range(r) => err(
                r.span(),
                "a range is only allowed as the iterator of a `for` loop",
            ),
            other => not_yet(other.span(), "this expression"),
        }
    }

    fn thread_index(&mut self, f: &syn::ExprField) -> Result<Expr> {
        let axis = match &f.member {
            syn::Member::Named(n) if n == "x" => 0,
            syn::Member::Named(n) if n == "y" => 1,
            syn::Member::Named(n) if n == "z" => 2,
            m => return err(m.span(), "a thread index has fields `x`, `y` and `z`"),
        };
        let builtin = match strip(&f.base) {
            syn::Expr::Call(c) if c.args.is_empty() => match &*c.func {
                syn::Expr::Path(p) => path_name(&p.path).and_then(|n| builtin(&n)),
                _ => None,
            },
            _ => None,
        };
        if builtin.is_some() && self.device.is_some() {
            return err(
                f.span(),
                "thread indices are not available in a device function: pass the value as an argument",
            );
        }
        match builtin {
            Some(b) => Ok(Expr {
                kind: ExprKind::Id(b, axis),
                ty: Ty::Usize,
            }),
            None => not_yet(
                f.span(),
                "a field other than `.x`/`.y`/`.z` of global_id(), local_id(), workgroup_id(), workgroup_size() or num_workgroups()",
            ),
        }
    }

    fn call(&mut self, c: &syn::ExprCall, want: Option<Ty>) -> Result<Expr> {
        if shared_call(&syn::Expr::Call(c.clone())).is_some() {
            return err(
                c.span(),
                "a shared array is declared with `let name = shared::<T, N>();` at the top level of the kernel's body",
            );
        }
        if let syn::Expr::Path(p) = &*c.func
            && let Some(ty) = from_bits_of(&p.path)
        {
            return self.float_of_bits(c, ty);
        }
        let name = match &*c.func {
            syn::Expr::Path(p) => path_name(&p.path),
            _ => None,
        };
        let Some(name) = name else {
            return not_yet(c.func.span(), "calling this");
        };
        if builtin(&name).is_some() {
            return err(
                c.span(),
                format!("`{name}()` is a 3-D index: take one component, `{name}().x`"),
            );
        }
        if let Some(b) = subgroup_builtin(&name) {
            if self.device.is_some() {
                return err(
                    c.span(),
                    format!(
                        "`{name}()` is not available in a device function: pass the value as an argument"
                    ),
                );
            }
            if !c.args.is_empty() {
                return err(c.args.span(), format!("`{name}()` takes no arguments"));
            }
            return Ok(Expr {
                kind: ExprKind::Id(b, 0),
                ty: Ty::Usize,
            });
        }
        let (math, arity) = match name.as_str() {
            "rsqrt" => (Math::Rsqrt, 1),
            "fma" => (Math::Fma, 3),
            "mul_hi" => (Math::MulHi, 2),
            "pow" => (Math::Pow, 2),
            "log" => (Math::Ln, 1),
            "barrier" => {
                return err(
                    c.span(),
                    "`barrier()` is a statement of its own, not a value",
                );
            }
            _ => {
                let Some(f) = self.sigs.iter().position(|s| s.rust == name) else {
                    return err(
                        c.func.span(),
                        format!(
                            "cannot find `{name}`: a kernel calls functions marked #[unigpu::device]"
                        ),
                    );
                };
                let sig = self.sigs[f].clone();
                if c.args.len() != sig.params.len() {
                    return err(
                        c.span(),
                        format!("`{name}` takes {} argument(s)", sig.params.len()),
                    );
                }
                let mut args = Vec::new();
                for (a, (_, t)) in c.args.iter().zip(&sig.params) {
                    let v = self.expr(a, Some(*t))?;
                    if v.ty != *t {
                        return mismatch(a.span(), *t, v.ty);
                    }
                    args.push(v);
                }
                self.calls.push((f, c.func.span()));
                return Ok(Expr {
                    kind: ExprKind::Call(f, args),
                    ty: sig.ret,
                });
            }
        };
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        if args.len() != arity {
            return err(c.span(), format!("`{name}` takes {arity} argument(s)"));
        }
        let first = self.expr(args[0], want)?;
        self.math_call(math, first, &args[1..], c.span())
    }

    fn method(&mut self, m: &syn::ExprMethodCall, want: Option<Ty>) -> Result<Expr> {
        if let Some(t) = &m.turbofish {
            return not_yet(t.span(), "a turbofish");
        }
        let method = m.method.to_string();
        if method == "len" {
            if let Some((array, _)) = self.shared_of(&m.receiver) {
                if !m.args.is_empty() {
                    return err(m.span(), "`len` takes no arguments");
                }
                let kind = match &self.shared[array].len {
                    Size::Lit(n) => ExprKind::Lit(Lit::Int(*n as u64)),
                    Size::Const(c) => ExprKind::Var(c.clone()),
                };
                return Ok(Expr {
                    kind,
                    ty: Ty::Usize,
                });
            }
            let (array, _, _) = self.array_of(&m.receiver)?;
            if !m.args.is_empty() {
                return err(m.span(), "`len` takes no arguments");
            }
            return Ok(Expr {
                kind: ExprKind::Len(array),
                ty: Ty::Usize,
            });
        }
        if let Some(op) = AtomicOp::from_method(&method) {
            return self.atomic(op, m);
        }
        if method == "to_bits" {
            return self.bits_of_float(m);
        }
        let math = match method.as_str() {
            "sqrt" => Math::Sqrt,
            "abs" => Math::Abs,
            "min" => Math::Min,
            "max" => Math::Max,
            "clamp" => Math::Clamp,
            "floor" => Math::Floor,
            "ceil" => Math::Ceil,
            "exp" => Math::Exp,
            "exp2" => Math::Exp2,
            "ln" => Math::Ln,
            "log2" => Math::Log2,
            "sin" => Math::Sin,
            "cos" => Math::Cos,
            "tan" => Math::Tan,
            "tanh" => Math::Tanh,
            "mul_add" => Math::Fma,
            "powf" => Math::Pow,
            "round" => Math::Round,
            "log" => {
                // Rust's `x.log(base)`: `x.ln() / base.ln()`, as std computes it.
                let recv = self.expr(&m.receiver, want)?;
                let args: Vec<&syn::Expr> = m.args.iter().collect();
                let ty = recv.ty;
                let x = self.math_call(Math::Ln, recv, &[], m.span());
                if args.len() != 1 {
                    return err(
                        m.span(),
                        "`log` takes its base: `x.log(b)` (`x.ln()` is the natural logarithm)",
                    );
                }
                let b = self.expr(args[0], Some(ty))?;
                if b.ty != ty {
                    return mismatch(args[0].span(), ty, b.ty);
                }
                let b = self.math_call(Math::Ln, b, &[], args[0].span())?;
                return Ok(Expr {
                    kind: ExprKind::Bin(BinOp::Div, Box::new(x?), Box::new(b)),
                    ty,
                });
            }
            "powi" => Math::Powi,
            _ => return not_yet(m.method.span(), &format!("the method `{method}`")),
        };
        let recv = self.expr(&m.receiver, want)?;
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        self.math_call(math, recv, &args, m.span())
    }

    /// `x.to_bits()`: an f32's bits as a u32.
    fn bits_of_float(&mut self, m: &syn::ExprMethodCall) -> Result<Expr> {
        if !m.args.is_empty() {
            return err(m.span(), "`to_bits` takes no arguments");
        }
        let x = self.expr(&m.receiver, Some(Ty::F32))?;
        match x.ty {
            Ty::F32 => Ok(Expr {
                kind: ExprKind::Math(Math::ToBits, vec![x]),
                ty: Ty::U32,
            }),
            Ty::F64 => not_yet(
                m.method.span(),
                "`to_bits` of an f64 (f32's is built: its bits as a u32)",
            ),
            t => err(
                m.span(),
                format!("`to_bits` takes an f32, not `{}`", t.name()),
            ),
        }
    }

    /// `f32::from_bits(u)` (`ty` is the path's type): the f32 with the
    /// u32 `u`'s bits.
    fn float_of_bits(&mut self, c: &syn::ExprCall, ty: Ty) -> Result<Expr> {
        if ty != Ty::F32 {
            return not_yet(
                c.func.span(),
                "`f64::from_bits` (`f32::from_bits` is built: a u32's bits as an f32)",
            );
        }
        if c.args.len() != 1 {
            return err(c.span(), "`f32::from_bits` takes one u32");
        }
        let u = self.expr(&c.args[0], Some(Ty::U32))?;
        if u.ty != Ty::U32 {
            return mismatch(c.args[0].span(), Ty::U32, u.ty);
        }
        Ok(Expr {
            kind: ExprKind::Math(Math::FromBits, vec![u]),
            ty: Ty::F32,
        })
    }

    /// `subgroup_add(v)`, `subgroup_max(v)`, `subgroup_min(v)`: `whole`
    /// when the call is the whole value of a `let` or an assignment.
    fn subgroup_call(&mut self, c: &syn::ExprCall, want: Option<Ty>, whole: bool) -> Result<Expr> {
        let (f, name) = subgroup_op(c).unwrap_or((Math::SubgroupAdd, "subgroup_add"));
        if self.device.is_some() {
            return err(
                c.span(),
                format!("`{name}` is only allowed in the kernel itself, not in a device function"),
            );
        }
        if !whole {
            return err(
                c.span(),
                format!(
                    "`{name}(..)` must be the whole value of a `let` or an assignment \
                     (`let t = {name}(v);`): every invocation of the subgroup reaches it together"
                ),
            );
        }
        let invocations: u32 = self.workgroup.iter().product();
        if !invocations.is_multiple_of(32) {
            return err(
                c.span(),
                format!(
                    "`{name}` needs a workgroup of a multiple of 32 invocations (a CUDA warp is 32; \
                     this kernel's has {invocations})"
                ),
            );
        }
        if c.args.len() != 1 {
            return err(c.span(), format!("`{name}` takes 1 argument"));
        }
        let v = self.expr(&c.args[0], want)?;
        if !matches!(v.ty, Ty::F32 | Ty::F64 | Ty::I32 | Ty::U32) {
            return err(
                c.args[0].span(),
                format!("`{name}` takes f32, f64, i32 or u32, not `{}`", v.ty.name()),
            );
        }
        self.subgroup_calls.push(c.span());
        let ty = v.ty;
        Ok(Expr {
            kind: ExprKind::Math(f, vec![v]),
            ty,
        })
    }

    fn math_call(&mut self, f: Math, first: Expr, rest: &[&syn::Expr], span: Span) -> Result<Expr> {
        let t = first.ty;
        let (arity, float_only) = match f {
            Math::Abs => (0, false),
            Math::Min | Math::Max => (1, false),
            Math::Clamp => (2, false),
            Math::Powi | Math::Pow => (1, true),
            Math::Fma => (2, true),
            Math::MulHi => (1, false),
            _ => (0, true),
        };
        if f == Math::MulHi && t != Ty::U32 {
            return err(span, format!("`mul_hi` takes two u32, not `{}`", t.name()));
        }
        if rest.len() != arity {
            return err(
                span,
                format!("this function takes {} argument(s)", arity + 1),
            );
        }
        if float_only && !t.is_float() {
            return err(
                span,
                format!("this function takes f32 or f64, not `{}`", t.name()),
            );
        }
        if !t.is_float() && !t.is_int() {
            return err(
                span,
                format!("this function takes a number, not `{}`", t.name()),
            );
        }
        if f == Math::Abs && t.is_int() && !t.is_signed() {
            return err(span, format!("`abs` of an unsigned `{}`", t.name()));
        }
        let mut args = vec![first];
        for a in rest {
            let want = if f == Math::Powi { Ty::I32 } else { t };
            let v = self.expr(a, Some(want))?;
            if v.ty != want {
                return mismatch(a.span(), want, v.ty);
            }
            args.push(v);
        }
        Ok(Expr {
            kind: ExprKind::Math(f, args),
            ty: t,
        })
    }
}

/// `shared::<...>(...)`, whatever its generics.
fn shared_call(e: &syn::Expr) -> Option<&syn::ExprCall> {
    match strip(e) {
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p)
                if p.qself.is_none()
                    && p.path.segments.len() == 1
                    && p.path.segments[0].ident == "shared" =>
            {
                Some(c)
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_call_to(c: &syn::ExprCall, name: &str) -> bool {
    matches!(&*c.func, syn::Expr::Path(p) if path_name(&p.path).as_deref() == Some(name))
}

fn builtin(name: &str) -> Option<Builtin> {
    Some(match name {
        "global_id" => Builtin::Global,
        "local_id" => Builtin::Local,
        "workgroup_id" => Builtin::Group,
        "workgroup_size" => Builtin::Size,
        "num_workgroups" => Builtin::Groups,
        _ => return None,
    })
}

/// The subgroup operation `c` calls, if it calls one.
fn subgroup_op(c: &syn::ExprCall) -> Option<(Math, &'static str)> {
    let syn::Expr::Path(p) = &*c.func else {
        return None;
    };
    Some(match path_name(&p.path)?.as_str() {
        "subgroup_add" => (Math::SubgroupAdd, "subgroup_add"),
        "subgroup_max" => (Math::SubgroupMax, "subgroup_max"),
        "subgroup_min" => (Math::SubgroupMin, "subgroup_min"),
        _ => return None,
    })
}

fn subgroup_builtin(name: &str) -> Option<Builtin> {
    Some(match name {
        "subgroup_size" => Builtin::SubgroupSize,
        "subgroup_id" => Builtin::SubgroupId,
        "subgroup_invocation_id" => Builtin::SubgroupLane,
        _ => return None,
    })
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

/// The float type of a `f32::from_bits` / `f64::from_bits` path.
fn from_bits_of(p: &syn::Path) -> Option<Ty> {
    let [t, f] = [p.segments.first()?, p.segments.last()?];
    if p.segments.len() != 2 || f.ident != "from_bits" {
        return None;
    }
    match t.ident.to_string().as_str() {
        "f32" => Some(Ty::F32),
        "f64" => Some(Ty::F64),
        _ => None,
    }
}

fn path_name(p: &syn::Path) -> Option<String> {
    p.get_ident().map(|i| i.to_string())
}

fn lit(l: &syn::Lit, want: Option<Ty>) -> Result<Expr> {
    match l {
        syn::Lit::Bool(b) => Ok(Expr {
            kind: ExprKind::Lit(Lit::Bool(b.value)),
            ty: Ty::Bool,
        }),
        syn::Lit::Int(i) => {
            let ty = match i.suffix() {
                "" => match want {
                    Some(t) if t.is_int() => t,
                    Some(t) if t.is_float() => {
                        return err(
                            i.span(),
                            format!(
                                "expected `{}`, found an integer literal: write `{}.0`",
                                t.name(),
                                i.base10_digits()
                            ),
                        );
                    }
                    _ => Ty::I32,
                },
                s => match Ty::from_name(s) {
                    Some(t) if t.is_int() => t,
                    Some(t @ (Ty::F32 | Ty::F64)) => {
                        return float_lit(i.base10_digits(), t, i.span());
                    }
                    _ => {
                        return err(
                            i.span(),
                            format!("`{s}` literals are not in the kernel language"),
                        );
                    }
                },
            };
            let v: u128 = i.base10_parse()?;
            // Signed: up to MIN's magnitude, which only a negation makes valid.
            let max: u128 = if ty.is_signed() {
                1u128 << (ty.bits() - 1)
            } else {
                (1u128 << ty.bits()) - 1
            };
            if v > max {
                return err(
                    i.span(),
                    format!("literal out of range for `{}`", ty.name()),
                );
            }
            Ok(Expr {
                kind: ExprKind::Lit(Lit::Int(v as u64)),
                ty,
            })
        }
        syn::Lit::Float(f) => {
            let ty = match f.suffix() {
                "" => match want {
                    Some(t) if t.is_float() => t,
                    Some(t) if t.is_int() => {
                        return err(
                            f.span(),
                            format!("expected `{}`, found a float literal", t.name()),
                        );
                    }
                    _ => Ty::F64,
                },
                "f32" => Ty::F32,
                "f64" => Ty::F64,
                s => {
                    return err(
                        f.span(),
                        format!("`{s}` literals are not in the kernel language"),
                    );
                }
            };
            float_lit(f.base10_digits(), ty, f.span())
        }
        other => err(
            other.span(),
            "only number and bool literals are in the kernel language",
        ),
    }
}

/// A float literal rounded once, from its digits, to its type.
fn float_lit(digits: &str, ty: Ty, span: Span) -> Result<Expr> {
    let lit = if ty == Ty::F32 {
        let v: f32 = digits
            .parse()
            .map_err(|_| syn::Error::new(span, "not a valid f32"))?;
        if v.is_infinite() {
            return err(span, "literal out of range for `f32`");
        }
        Lit::F32(v)
    } else {
        let v: f64 = digits
            .parse()
            .map_err(|_| syn::Error::new(span, "not a valid f64"))?;
        if v.is_infinite() {
            return err(span, "literal out of range for `f64`");
        }
        Lit::F64(v)
    };
    Ok(Expr {
        kind: ExprKind::Lit(lit),
        ty,
    })
}

fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => BinOp::Add,
        B::Sub(_) => BinOp::Sub,
        B::Mul(_) => BinOp::Mul,
        B::Div(_) => BinOp::Div,
        B::Rem(_) => BinOp::Rem,
        B::BitAnd(_) => BinOp::BitAnd,
        B::BitOr(_) => BinOp::BitOr,
        B::BitXor(_) => BinOp::BitXor,
        B::Shl(_) => BinOp::Shl,
        B::Shr(_) => BinOp::Shr,
        B::Eq(_) => BinOp::Eq,
        B::Ne(_) => BinOp::Ne,
        B::Lt(_) => BinOp::Lt,
        B::Le(_) => BinOp::Le,
        B::Gt(_) => BinOp::Gt,
        B::Ge(_) => BinOp::Ge,
        B::And(_) => BinOp::And,
        B::Or(_) => BinOp::Or,
        _ => return None,
    })
}

fn compound(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => BinOp::Add,
        B::SubAssign(_) => BinOp::Sub,
        B::MulAssign(_) => BinOp::Mul,
        B::DivAssign(_) => BinOp::Div,
        B::RemAssign(_) => BinOp::Rem,
        B::BitAndAssign(_) => BinOp::BitAnd,
        B::BitOrAssign(_) => BinOp::BitOr,
        B::BitXorAssign(_) => BinOp::BitXor,
        B::ShlAssign(_) => BinOp::Shl,
        B::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}

pub fn op_text(op: BinOp) -> &'static str {
    use BinOp::*;
    match op {
        Add => "+",
        Sub => "-",
        Mul => "*",
        Div => "/",
        Rem => "%",
        BitAnd => "&",
        BitOr => "|",
        BitXor => "^",
        Shl => "<<",
        Shr => ">>",
        Eq => "==",
        Ne => "!=",
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
        And => "&&",
        Or => "||",
    }
}
