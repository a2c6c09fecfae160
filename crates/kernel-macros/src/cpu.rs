//! The CPU emitter: the kernel's body as a Rust closure that
//! `generated::run` calls once per invocation, workgroup by workgroup.
//! Integer arithmetic is `wrapping_*`, division and remainder go through
//! `IntDiv`, arrays through the bounds-checked `Ro`/`Rw` views, so the
//! generated code cannot panic.

use proc_macro2::TokenStream;
use std::collections::HashSet;

use quote::{format_ident, quote};

use crate::ir::*;

fn ty(t: Ty) -> TokenStream {
    let i = format_ident!("{}", t.cpu());
    quote!(#i)
}

/// The `half` type of an f16/bf16 array parameter (its stores round with
/// `from_f32`: to nearest even, as the GPU forms do).
fn half(k: &Kernel, i: usize) -> Option<TokenStream> {
    match k.params[i].kind {
        ParamKind::Array { elem: Ty::F16, .. } => Some(quote!(::unigpu::f16)),
        ParamKind::Array { elem: Ty::Bf16, .. } => Some(quote!(::unigpu::bf16)),
        _ => None,
    }
}

/// Whether parameter `i` is a u8 array (computed as u32).
fn is_byte(k: &Kernel, i: usize) -> bool {
    matches!(k.params[i].kind, ParamKind::Array { elem: Ty::U8, .. })
}

fn param(k: &Kernel, i: usize) -> proc_macro2::Ident {
    format_ident!("p_{}", k.params[i].name)
}

/// The CPU form's body: a call of `generated::run` (one closure call per
/// invocation) or, for a kernel with barriers or shared arrays,
/// `generated::run_groups` with the body split into phases.
///
/// `consts` binds the instance's const parameters (`let c_N: u32 = N as
/// u32;`): the caller puts it before the body, and the fast path again
/// inside its chunk loop's closure, where a value captured from the
/// caller's frame would be a load from the closure's environment (the op
/// of an element-wise kernel then stayed a jump table in every iteration
/// on the CPU, and the loop did not vectorise), while `N` itself is a
/// constant in every function of the instance.
pub fn body(k: &Kernel, consts: &TokenStream) -> TokenStream {
    let g = quote!(::unigpu::kernel::generated);
    // Device functions as nested Rust functions.
    let funcs = k.funcs.iter().map(|f| {
        let mut cx = Cpu::new(k);
        let body = cx.block(&f.body);
        let r = cx.expr(&f.result);
        let name = format_ident!("{}", f.name);
        let params = f.params.iter().map(|(n, t)| {
            let (n, t) = (format_ident!("{}", n), ty(*t));
            quote!(#n: #t)
        });
        let ret = ty(f.ret);
        quote!(fn #name(#(#params),*) -> #ret { #body #r })
    });
    let funcs = quote!(#(#funcs)*);
    if !k.phased() {
        let b = Cpu::new(k).block(&k.body);
        if let Some(s) = crate::stride::analyse(k) {
            let fast = grid_stride(k, &s, consts);
            return quote! {
                #funcs
                let __grid = __args.grid();
                #fast
                else {
                    #g::run(__grid, move |__ids: &#g::Ids| { #b });
                }
            };
        }
        return quote! {
            #funcs
            #g::run(__args.grid(), move |__ids: &#g::Ids| { #b });
        };
    }
    let p = phased(k);
    quote!(#funcs #p)
}

/// The fast path of an independent grid-stride kernel (stride.rs): an
/// `if` that, in a 1-D launch whose indices cannot wrap and where every
/// sliced array holds `end` elements, runs the iterations `0..end` in
/// contiguous chunks on rayon's pool, the sliced arrays as plain slices
/// (the written ones cut with `chunks_mut`, so each chunk owns its part),
/// each chunk's loop under `generated::simd` (compiled for the widest SIMD
/// the CPU has); the caller appends the `else` (the general form).
fn grid_stride(k: &Kernel, s: &crate::stride::GridStride, consts: &TokenStream) -> TokenStream {
    let g = quote!(::unigpu::kernel::generated);
    let mut cx = Cpu::new(k);
    cx.fast = Some(Fast {
        var: s.var.clone(),
        sliced: s.sliced.clone(),
        at: format_ident!("__j"),
        lens: true,
        hoisted: Vec::new(),
    });
    let lens = k.arrays().map(|(i, _)| {
        let (l, p) = (format_ident!("__len_{}", i), param(k, i));
        quote!(let #l: u32 = #p.len();)
    });
    let lets: Vec<TokenStream> = s.lets.iter().map(|st| cx.stmt(st)).collect();
    let end = cx.expr(s.end);
    let body = cx.block(s.body);
    // Loads at a literal index of an array nothing writes (clamp's bounds,
    // an op's parameters) are the same in every iteration, but each is a
    // bounds-checked read that may record a fault, which LLVM neither
    // hoists nor vectorises (clamp ran at 0.5-0.7x numpy's speed). Each is
    // read once a chunk, without a fault; where all are in bounds the loop
    // runs with them as locals, else the plain loop runs and faults as
    // it would have.
    let hoisted = hoistable_loads(k, s);
    let (peeks, with_locals) = if hoisted.is_empty() {
        (quote!(), None)
    } else {
        let peeks: Vec<TokenStream> = hoisted
            .iter()
            .map(|(a, index, local)| {
                let p = param(k, *a);
                quote!(let #local = #p.peek(#index);)
            })
            .collect();
        let locals: Vec<_> = hoisted.iter().map(|(_, _, l)| l.clone()).collect();
        if let Some(f) = cx.fast.as_mut() {
            f.hoisted = hoisted;
        }
        let fast_body = cx.block(s.body);
        if let Some(f) = cx.fast.as_mut() {
            f.hoisted.clear();
        }
        (quote!(#(#peeks)*), Some((locals, fast_body)))
    };
    let fits = s.sliced.iter().map(|&a| {
        let l = format_ident!("__len_{}", a);
        quote!(&& #l >= __end)
    });
    let parts = s.sliced.iter().map(|&a| {
        let (pv, guard) = (
            format_ident!("__parts_{}", a),
            format_ident!("__guard_{}", a),
        );
        match k.params[a].kind {
            ParamKind::Array { writable: true, .. } => {
                quote!(let #pv = #g::chunks_mut(&mut #guard[..__end as usize], __chunk);)
            }
            _ => quote!(let #pv = #g::chunks(&#guard[..__end as usize], __chunk);),
        }
    });
    let pvs: Vec<_> = s
        .sliced
        .iter()
        .map(|&a| format_ident!("__parts_{}", a))
        .collect();
    let svs: Vec<_> = s
        .sliced
        .iter()
        .map(|&a| format_ident!("__s_{}", a))
        .collect();
    let (first, rest) = (&pvs[0], &pvs[1..]);
    // ((a, b), c) from the zips, as one flat tuple.
    let (s0, srest) = (&svs[0], &svs[1..]);
    let mut pat = quote!(#s0);
    for v in srest {
        pat = quote!((#pat, #v));
    }
    // Every part as long as the first (the chunks are cut alike), so
    // LLVM drops the bounds checks of the loop over `0..__n`.
    let recut = srest
        .iter()
        .zip(&s.sliced[1..])
        .map(|(v, &a)| match k.params[a].kind {
            ParamKind::Array { writable: true, .. } => quote!(let #v = &mut #v[..__n];),
            _ => quote!(let #v = &#v[..__n];),
        });
    let var = format_ident!("{}", s.var);
    let plain = quote! {
        for __j in 0..__n {
            let #var: u32 = __lo.wrapping_add(__j as u32);
            #body
        }
    };
    let loops = match with_locals {
        None => plain,
        Some((locals, fast_body)) => quote! {
            #peeks
            if let (#(::core::option::Option::Some(#locals),)*) = (#(#locals,)*) {
                for __j in 0..__n {
                    let #var: u32 = __lo.wrapping_add(__j as u32);
                    #fast_body
                }
            } else {
                #plain
            }
        },
    };
    quote! {
        let __ids = &#g::Ids::of_grid(&__grid);
        #(#lens)*
        #(#lets)*
        let __end: u32 = #end;
        if #g::grid_stride_fits(&__grid, __end) #(#fits)* {
            let __chunk = #g::chunk_len(__end);
            #(#parts)*
            let __all: ::std::vec::Vec<_> = #first.into_iter()
                #(.zip(#rest))*
                .map(|#pat| (#(#svs,)*))
                .collect();
            #g::run_chunks(__all, __chunk, move |__lo: u32, (#(#svs,)*)| {
                let __n = #s0.len();
                #(#recut)*
                #g::simd(#[inline(always)] || {
                    #consts
                    #loops
                });
            });
        }
    }
}

/// The iteration's loads at a literal index of a read-only array that the
/// fast path does not slice, once each, with the local each is read into.
fn hoistable_loads(
    k: &Kernel,
    s: &crate::stride::GridStride,
) -> Vec<(usize, u32, proc_macro2::Ident)> {
    let mut found: Vec<(usize, u32, proc_macro2::Ident)> = Vec::new();
    crate::ir::visit_exprs(s.body, &mut |e| {
        if let ExprKind::Load(a, index, _) = &e.kind
            && let ExprKind::Lit(Lit::Int(n)) = index.kind
            && let Ok(key) = u32::try_from(n)
            && matches!(
                k.params[*a].kind,
                ParamKind::Array {
                    writable: false,
                    ..
                }
            )
            && !s.sliced.contains(a)
            && !found.iter().any(|(b, i, _)| b == a && *i == key)
        {
            let local = format_ident!("__const_{}_{}", a, found.len());
            found.push((*a, key, local));
        }
    });
    found
}

/// The view of a grid-stride loop's iteration that the fast path and the
/// rows emit it with: the loop variable and the arrays loaded (or stored)
/// at it, which are plain slices `__s_N` indexed at the position in the
/// chunk (`__j`) or the row (`__li`).
struct Fast {
    var: String,
    sliced: Vec<usize>,
    /// The position in the slices: `__j` (a chunk) or `__li` (a row).
    at: proc_macro2::Ident,
    /// Whether lengths are the precomputed `__len_N` (the grid-stride
    /// fast path, where the written arrays' views are not in scope).
    lens: bool,
    /// Loads of read-only arrays at literal indices, read once a chunk
    /// (`peek`) into the locals named here: (array, index, local). Empty
    /// where the iteration is emitted in its plain form.
    hoisted: Vec<(usize, u32, proc_macro2::Ident)>,
}

impl Fast {
    fn slice(&self, a: usize, index: &Expr) -> Option<proc_macro2::Ident> {
        let at_var = matches!(&index.kind, ExprKind::Var(n) if *n == self.var);
        (at_var && self.sliced.contains(&a)).then(|| format_ident!("__s_{}", a))
    }
}

/// Emits expressions and statements; in the phased form, `lifted` names
/// the variables held per invocation (`v[__li]`) across phases.
struct Cpu<'k> {
    k: &'k Kernel,
    lifted: HashSet<String>,
    phased: bool,
    /// Loops opened inside the current work-item loop: a `break` or
    /// `continue` at depth 0 leaves a workgroup-level loop.
    depth: usize,
    /// In the grid-stride fast path: the sliced arrays.
    fast: Option<Fast>,
    /// The phase being emitted (`usize::MAX` in a uniform condition),
    /// and the phases each variable is named in: a variable named in one
    /// phase only needs no per-invocation array.
    phase: std::cell::Cell<usize>,
    uses: std::cell::RefCell<std::collections::HashMap<String, HashSet<usize>>>,
    /// Off while emitting code whose names must not count (the general
    /// form of a phase run row by row, which names what the rows name).
    recording: std::cell::Cell<bool>,
    /// Per-invocation variables every invocation holds the same value of
    /// ([`scalars`]): one per workgroup, assigned once, not per invocation.
    scalars: HashSet<String>,
    /// Variables of the phased form that only hold the local x id
    /// ([`is_local_x`]): read from the invocation's ids wherever they are
    /// named, never stored (a tree sum's `l` was an array per task, written
    /// in the first phase and loaded in every level).
    local_x: HashSet<String>,
    /// Per-invocation variables that [`rows`]' whole-rows loop holds in a
    /// local across its rows (named as plain locals, not `v[__li]`).
    registers: HashSet<String>,
    /// Whether the kernel has a `return` (else no invocation is ever done
    /// early, and the phases skip the `__done` checks).
    returns: bool,
    /// Whether f32 `exp`, `exp2`, `ln`, `log2` and `tanh` are the
    /// vectorisable ones (`unigpu::simd::math`): in a kernel with the
    /// grid-stride fast path (stride.rs), whose chunk loop LLVM vectorises,
    /// and there in both of its forms and its device functions, so a
    /// kernel computes them one way. Elsewhere libm's: in a loop that stays
    /// scalar, libm's table-driven `expf` was about twice as fast as the
    /// earlier f64 series (softmax's rows took 31 ms where they took 15). Both are
    /// within 1 ulp (docs/kernels.md).
    vector_math: bool,
}

impl<'k> Cpu<'k> {
    fn new(k: &'k Kernel) -> Self {
        Cpu {
            k,
            lifted: HashSet::new(),
            phased: false,
            depth: 0,
            fast: None,
            phase: std::cell::Cell::new(0),
            uses: Default::default(),
            recording: std::cell::Cell::new(true),
            scalars: HashSet::new(),
            local_x: HashSet::new(),
            registers: HashSet::new(),
            returns: true,
            vector_math: !k.phased() && crate::stride::analyse(k).is_some(),
        }
    }

    fn block(&mut self, stmts: &[Stmt]) -> TokenStream {
        let s: Vec<TokenStream> = stmts.iter().map(|s| self.stmt(s)).collect();
        quote!(#(#s)*)
    }

    fn var(&self, name: &str) -> TokenStream {
        if self.recording.get() {
            self.uses
                .borrow_mut()
                .entry(name.to_string())
                .or_default()
                .insert(self.phase.get());
        }
        if self.local_x.contains(name) {
            return quote!((__ids.local[0usize]));
        }
        let n = format_ident!("{}", name);
        if self.lifted.contains(name)
            && !self.scalars.contains(name)
            && !self.registers.contains(name)
        {
            quote!(#n[__li])
        } else {
            quote!(#n)
        }
    }

    fn looped(&mut self, body: &[Stmt]) -> TokenStream {
        self.depth += 1;
        let b = self.block(body);
        self.depth -= 1;
        b
    }

    fn stmt(&mut self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::Let {
                name,
                ty: t,
                mutable,
                init,
            } => {
                if self.local_x.contains(name) {
                    return quote!();
                }
                let v = self.expr(init);
                if self.phased {
                    // Recorded for the lifted-or-not choice.
                    let _ = self.var(name);
                }
                if self.lifted.contains(name) || self.scalars.contains(name) {
                    let n = self.var(name);
                    return quote!(#n = #v;);
                }
                let (n, t) = (format_ident!("{}", name), ty(*t));
                if *mutable {
                    quote!(let mut #n: #t = #v;)
                } else {
                    quote!(let #n: #t = #v;)
                }
            }
            Stmt::Assign { name, value } => {
                let (n, v) = (self.var(name), self.expr(value));
                quote!(#n = #v;)
            }
            Stmt::Store {
                array,
                index,
                value,
                site,
            } => {
                if let Some(f) = &self.fast
                    && let Some(s) = f.slice(*array, index)
                {
                    let (v, at) = (self.expr(value), &f.at);
                    if is_byte(self.k, *array) {
                        return quote!(#s[#at] = (#v) as u8;);
                    }
                    return quote!(#s[#at] = #v;);
                }
                let (p, i, v) = (param(self.k, *array), self.expr(index), self.expr(value));
                match half(self.k, *array) {
                    Some(h) => quote!(#p.set(#i, #h::from_f32(#v), &__fault, #site);),
                    // The low 8 bits, as the GPU forms store them.
                    None if is_byte(self.k, *array) => {
                        quote!(#p.set(#i, (#v) as u8, &__fault, #site);)
                    }
                    None => quote!(#p.set(#i, #v, &__fault, #site);),
                }
            }
            Stmt::SharedStore {
                array,
                index,
                value,
                site,
            } => {
                let s = format_ident!("{}", self.k.shared[*array].name);
                let (i, v) = (self.expr(index), self.expr(value));
                quote!(#s.set(__g.part(__li), #i, #v, &__fault, #site);)
            }
            Stmt::Eval(e) => {
                let v = self.expr(e);
                quote!(let _ = #v;)
            }
            // Phases are split at barriers before statements are emitted.
            Stmt::Barrier(_) => quote!(),
            Stmt::Block(b) => {
                let b = self.block(b);
                quote!({ #b })
            }
            Stmt::If { cond, then, els } => {
                let (c, t) = (self.expr(cond), self.block(then));
                if els.is_empty() {
                    quote!(if #c { #t })
                } else {
                    let e = self.block(els);
                    quote!(if #c { #t } else { #e })
                }
            }
            Stmt::For {
                name,
                start,
                end,
                body,
                ..
            } => {
                let (n, a, b) = (format_ident!("{}", name), self.expr(start), self.expr(end));
                let body = self.looped(body);
                quote!(for #n in (#a)..(#b) { #body })
            }
            Stmt::While { cond, body } => {
                let (c, b) = (self.expr(cond), self.looped(body));
                quote!(while #c { #b })
            }
            Stmt::Loop(body) => {
                let b = self.looped(body);
                quote!(loop { #b })
            }
            // A uniform exit from a workgroup-level loop: every invocation
            // takes it (the uniformity check), so each records it and
            // skips the rest of its phase; the loop leaves after the phase.
            Stmt::Break(_) if self.phased && self.depth == 0 => {
                quote! { __brk = true; continue '__items; }
            }
            Stmt::Continue(_) if self.phased && self.depth == 0 => {
                quote! { __cont = true; continue '__items; }
            }
            Stmt::Break(_) => quote!(break;),
            Stmt::Continue(_) => quote!(continue;),
            Stmt::Return(_) if self.phased => {
                quote! { __done[__li] = true; __ndone += 1; continue '__items; }
            }
            Stmt::Return(_) => quote!(return;),
            Stmt::ReturnValue(v) => {
                let v = self.expr(v);
                quote!(return #v;)
            }
        }
    }

    fn expr(&self, e: &Expr) -> TokenStream {
        expr(self, e)
    }
}

/// The phased form (PoCL's and MCUDA's work-item loops): each statement
/// list that holds a barrier is cut at its barriers and at the statements
/// that hold one; each run of barrier-free statements becomes a loop over
/// the workgroup's invocations, and a statement that holds a barrier (a
/// branch or loop whose condition is uniform, by the uniformity check)
/// runs once for the workgroup, its condition evaluated as invocation 0.
/// Variables declared in such lists live across phases, so they are held
/// per invocation; shared arrays are zeroed per workgroup.
fn phased(k: &Kernel) -> TokenStream {
    let g = quote!(::unigpu::kernel::generated);
    let returns = crate::stride::has_return(&k.body);
    let (lifted, held) = lifted(k);
    let mut cx = Cpu::new(k);
    cx.phased = true;
    cx.returns = returns;
    cx.lifted = lifted
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| !held.contains(n))
        .collect();
    cx.scalars = held;
    cx.local_x = declared(k)
        .into_iter()
        .filter(|n| holds_local_x(k, n))
        .collect();
    let region = region(&mut cx, &k.body, false);
    let decls = lifted.iter().filter(|(n, _)| !cx.local_x.contains(n)).map(|(n, t)| {
        let (n, t) = (format_ident!("{}", n), ty(*t));
        if cx.scalars.contains(&n.to_string()) {
            return quote!(let mut #n: #t = <#t as ::core::default::Default>::default(););
        }
        quote!(let mut #n: ::std::vec::Vec<#t> = ::std::vec![<#t as ::core::default::Default>::default(); __n];)
    });
    let together = together(k, &cx.scalars);
    // Which invocations returned: only in a kernel that returns.
    let done = if returns {
        quote! {
            let mut __done = ::std::vec![false; __n];
            let mut __ndone = 0usize;
        }
    } else {
        quote!()
    };
    let shared = k.shared.iter().map(|s| {
        let (n, t, len) = (format_ident!("{}", s.name), ty(s.elem), &s.len);
        quote!(let #n = #g::Shared::<#t>::new(#len, __g);)
    });
    quote! {
        #g::run_groups(__args.grid(), #together, |__g: &#g::Group| {
            let __n = __g.len();
            #done
            let mut __brk = false;
            let mut __cont = false;
            #(#shared)*
            #(#decls)*
            #region
        });
    }
}

/// The phased form's variables that live across phases (`lift`), and
/// which of them every invocation holds the same value of ([`scalars`]).
/// First with every candidate lifted, to see which phases name each; then
/// only those named in more than one phase (or in a uniform condition)
/// stay lifted: the others are locals of their phase's loop.
fn lifted(k: &Kernel) -> (Vec<(String, Ty)>, HashSet<String>) {
    let mut lifted = Vec::new();
    lift(&k.body, &mut lifted);
    let mut first = Cpu::new(k);
    first.phased = true;
    first.returns = crate::stride::has_return(&k.body);
    first.lifted = lifted.iter().map(|(n, _)| n.clone()).collect();
    let _ = region(&mut first, &k.body, false);
    let uses = first.uses.into_inner();
    lifted.retain(|(n, _)| {
        uses.get(n)
            .is_some_and(|p| p.len() > 1 || p.contains(&usize::MAX))
    });
    let held = scalars(k, &lifted);
    (lifted, held)
}

/// Whether the phased form runs a task's workgroups side by side
/// (`NAME::CPU_TOGETHER`; [`together`]).
pub fn runs_together(k: &Kernel) -> bool {
    k.phased() && together(k, &lifted(k).1)
}

/// The lifted variables every invocation holds the same value of, so the
/// phased form keeps one per workgroup and runs their `let`s and
/// assignments once, between the invocation loops, instead of once per
/// invocation: each `let` and assignment of one is a statement of a phase
/// itself (not inside a branch or loop of it), in a phase without a
/// workgroup-level `break`/`continue`, and its value is made of literals,
/// scalar arguments, lengths, `workgroup_id()`, `workgroup_size()`,
/// `num_workgroups()`, const parameters and other such variables (no
/// memory, no call). Running it once between the loops is the schedule
/// where every invocation reaches it together, which the GPU allows, and
/// every invocation computes the same value there.
fn scalars(k: &Kernel, lifted: &[(String, Ty)]) -> HashSet<String> {
    let declared = declared(k);
    // Each variable's lets and assignments: (value, whether it is a
    // phase's own statement in a phase without exits).
    let mut defs: std::collections::HashMap<String, Vec<(&Expr, bool)>> = Default::default();
    fn walk<'a>(
        stmts: &'a [Stmt],
        region: bool,
        defs: &mut std::collections::HashMap<String, Vec<(&'a Expr, bool)>>,
    ) {
        // In a list holding a barrier, each run of barrier-free
        // statements is a phase.
        let region = region && stmts.iter().any(Stmt::has_barrier);
        let mut run: Vec<&Stmt> = Vec::new();
        let flush =
            |run: &mut Vec<&'a Stmt>,
             defs: &mut std::collections::HashMap<String, Vec<(&'a Expr, bool)>>| {
                let ok = !exits(run);
                for s in run.drain(..) {
                    match s {
                        Stmt::Let { name, init: v, .. } | Stmt::Assign { name, value: v } => {
                            defs.entry(name.clone())
                                .or_default()
                                .push((v, region && ok));
                        }
                        other => walk(std::slice::from_ref(other), false, defs),
                    }
                }
            };
        for s in stmts {
            if region && s.has_barrier() {
                flush(&mut run, defs);
                match s {
                    Stmt::Block(b) | Stmt::Loop(b) => walk(b, true, defs),
                    Stmt::If { then, els, .. } => {
                        walk(then, true, defs);
                        walk(els, true, defs);
                    }
                    Stmt::For { body, .. } | Stmt::While { body, .. } => walk(body, true, defs),
                    _ => {}
                }
            } else if region {
                run.push(s);
            } else {
                match s {
                    Stmt::Let { name, init: v, .. } | Stmt::Assign { name, value: v } => {
                        defs.entry(name.clone()).or_default().push((v, false));
                    }
                    Stmt::Block(b) | Stmt::Loop(b) => walk(b, false, defs),
                    Stmt::If { then, els, .. } => {
                        walk(then, false, defs);
                        walk(els, false, defs);
                    }
                    Stmt::For { body, .. } | Stmt::While { body, .. } => walk(body, false, defs),
                    _ => {}
                }
            }
        }
        flush(&mut run, defs);
    }
    walk(&k.body, true, &mut defs);
    let mut held: HashSet<String> = lifted
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| defs.get(n).is_some_and(|d| d.iter().all(|(_, top)| *top)))
        .collect();
    // Drop those whose values name anything else, until none is dropped.
    loop {
        let before = held.len();
        let keep: HashSet<String> = held
            .iter()
            .filter(|n| {
                defs[*n]
                    .iter()
                    .all(|(v, _)| same_for_all(v, &held, &declared))
            })
            .cloned()
            .collect();
        held = keep;
        if held.len() == before {
            return held;
        }
    }
}

/// Whether the phased form may run a task's workgroups side by side,
/// phase by phase, as one `Group` (`generated::run_groups`): what a
/// workgroup decides as one must not depend on which workgroup it is.
/// So: every condition and bound around a barrier, and every
/// per-workgroup value ([`scalars`], kept once for all of them), is made
/// of literals, scalar parameters, lengths, the grid's sizes, such
/// values and the counters of loops around barriers; and no loop around
/// a barrier is left by `break` or `continue` (one workgroup's could
/// leave while another's goes on).
fn together(k: &Kernel, scalars: &HashSet<String>) -> bool {
    fn walk<'a>(stmts: &'a [Stmt], loops: &mut HashSet<String>, conds: &mut Vec<&'a Expr>) -> bool {
        let mut run: Vec<&Stmt> = Vec::new();
        for s in stmts {
            if !s.has_barrier() {
                run.push(s);
                continue;
            }
            if exits(&run) {
                return false;
            }
            run.clear();
            let ok = match s {
                Stmt::Block(b) | Stmt::Loop(b) => walk(b, loops, conds),
                Stmt::If { cond, then, els } => {
                    conds.push(cond);
                    walk(then, loops, conds) && walk(els, loops, conds)
                }
                Stmt::For {
                    name,
                    start,
                    end,
                    body,
                    ..
                } => {
                    loops.insert(name.clone());
                    conds.extend([start, end]);
                    walk(body, loops, conds)
                }
                Stmt::While { cond, body } => {
                    conds.push(cond);
                    walk(body, loops, conds)
                }
                _ => true,
            };
            if !ok {
                return false;
            }
        }
        !exits(&run)
    }
    fn defs<'a>(stmts: &'a [Stmt], names: &HashSet<String>, out: &mut Vec<&'a Expr>) {
        for s in stmts {
            match s {
                Stmt::Let { name, init: v, .. } | Stmt::Assign { name, value: v }
                    if names.contains(name) =>
                {
                    out.push(v)
                }
                Stmt::Block(b) | Stmt::Loop(b) => defs(b, names, out),
                Stmt::If { then, els, .. } => {
                    defs(then, names, out);
                    defs(els, names, out);
                }
                Stmt::For { body, .. } | Stmt::While { body, .. } => defs(body, names, out),
                _ => {}
            }
        }
    }
    let (mut names, mut conds) = (HashSet::new(), Vec::new());
    if !walk(&k.body, &mut names, &mut conds) {
        return false;
    }
    defs(&k.body, scalars, &mut conds);
    names.extend(scalars.iter().cloned());
    let names: HashSet<&str> = names.iter().map(String::as_str).collect();
    conds.iter().all(|e| crate::stride::is_uniform(e, &names))
}

/// Every name the kernel declares (what is not is a const parameter).
fn declared(k: &Kernel) -> HashSet<String> {
    let mut out = HashSet::new();
    each_definition(&k.body, &mut |name, s| {
        if !matches!(s, Stmt::Assign { .. }) {
            out.insert(name.to_string());
        }
    });
    out
}

/// A value every invocation of a workgroup computes alike (see
/// [`scalars`]).
fn same_for_all(e: &Expr, held: &HashSet<String>, declared: &HashSet<String>) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Scalar(_) | ExprKind::Len(_) => true,
        ExprKind::Id(b, _) => matches!(b, Builtin::Group | Builtin::Groups | Builtin::Size),
        ExprKind::Var(n) => held.contains(n) || !declared.contains(n),
        ExprKind::Bin(_, l, r) => {
            same_for_all(l, held, declared) && same_for_all(r, held, declared)
        }
        ExprKind::Neg(v) | ExprKind::Not(v) | ExprKind::Cast(v) => same_for_all(v, held, declared),
        ExprKind::Math(_, a) => a.iter().all(|x| same_for_all(x, held, declared)),
        ExprKind::Load(..)
        | ExprKind::SharedLoad(..)
        | ExprKind::Atomic { .. }
        | ExprKind::Call(..) => false,
    }
}

/// The variables declared directly in statement lists that hold a barrier.
fn lift(stmts: &[Stmt], out: &mut Vec<(String, Ty)>) {
    if !stmts.iter().any(Stmt::has_barrier) {
        return;
    }
    for s in stmts {
        match s {
            Stmt::Let { name, ty, .. } => out.push((name.clone(), *ty)),
            Stmt::If { then, els, .. } => {
                lift(then, out);
                lift(els, out);
            }
            Stmt::Block(b) | Stmt::Loop(b) => lift(b, out),
            Stmt::For { body, .. } | Stmt::While { body, .. } => lift(body, out),
            _ => {}
        }
    }
}

/// A statement list that holds a barrier, at workgroup level.
fn region(cx: &mut Cpu, stmts: &[Stmt], in_loop: bool) -> TokenStream {
    let mut out = TokenStream::new();
    let mut run: Vec<&Stmt> = Vec::new();
    for s in stmts {
        if !s.has_barrier() {
            run.push(s);
            continue;
        }
        out.extend(phase(cx, &run, in_loop));
        run.clear();
        out.extend(match s {
            Stmt::Barrier(_) => quote!(),
            Stmt::Block(b) => {
                let b = region(cx, b, in_loop);
                quote!({ #b })
            }
            Stmt::If { cond, then, els } => {
                let c = uniform(cx, cond);
                let (t, e) = (region(cx, then, in_loop), region(cx, els, in_loop));
                quote!(if #c { #t } else { #e })
            }
            Stmt::For {
                name,
                start,
                end,
                body,
                ..
            } => {
                let (n, a, b) = (
                    format_ident!("{}", name),
                    uniform(cx, start),
                    uniform(cx, end),
                );
                let body = region(cx, body, true);
                quote!(for #n in (#a)..(#b) { #body })
            }
            Stmt::While { cond, body } => {
                let c = uniform(cx, cond);
                let body = region(cx, body, true);
                quote!(while #c { #body })
            }
            Stmt::Loop(body) => {
                let body = region(cx, body, true);
                quote!(loop { #body })
            }
            _ => quote!(),
        });
    }
    out.extend(phase(cx, &run, in_loop));
    out
}

/// A uniform value, computed as invocation 0 sees it.
fn uniform(cx: &Cpu, e: &Expr) -> TokenStream {
    let phase = cx.phase.replace(usize::MAX);
    let v = cx.expr(e);
    cx.phase.set(phase);
    quote!({ let __li = 0usize; let __ids = &__g.ids(0); #v })
}

/// One phase: barrier-free statements run by every invocation in turn
/// (a grid-stride loop among them row by row, where stride.rs allows).
fn phase(cx: &mut Cpu, stmts: &[&Stmt], in_loop: bool) -> TokenStream {
    if !exits(stmts)
        && let Some(p) = crate::stride::phase_loop(cx.k, stmts)
    {
        return rows(cx, stmts, &p, in_loop);
    }
    plain_phase(cx, stmts, in_loop)
}

/// Whether some phase of the phased form runs a grid-stride loop row by
/// row (`NAME::CPU_ROWS`): the phases as [`region`] cuts them.
pub fn has_rows(k: &Kernel) -> bool {
    fn list(k: &Kernel, stmts: &[Stmt]) -> bool {
        let mut run: Vec<&Stmt> = Vec::new();
        let mut found = false;
        for s in stmts {
            if !s.has_barrier() {
                run.push(s);
                continue;
            }
            found |= taken(k, &run);
            run.clear();
            found |= match s {
                Stmt::Block(b) | Stmt::Loop(b) => list(k, b),
                Stmt::If { then, els, .. } => list(k, then) || list(k, els),
                Stmt::For { body, .. } | Stmt::While { body, .. } => list(k, body),
                _ => false,
            };
        }
        found || taken(k, &run)
    }
    fn taken(k: &Kernel, run: &[&Stmt]) -> bool {
        !run.is_empty() && !exits(run) && crate::stride::phase_loop(k, run).is_some()
    }
    k.phased() && list(k, &k.body)
}

/// Whether a `break` or `continue` of a workgroup-level loop is among
/// `stmts` (outside the loops they open).
fn exits(stmts: &[&Stmt]) -> bool {
    fn any(s: &Stmt) -> bool {
        match s {
            Stmt::Break(_) | Stmt::Continue(_) => true,
            Stmt::Block(b) => b.iter().any(any),
            Stmt::If { then, els, .. } => then.iter().any(any) || els.iter().any(any),
            _ => false,
        }
    }
    stmts.iter().any(|s| any(s))
}

/// Rows a pass of [`rows`] takes together while all of them are whole.
const ROWS: usize = 4;

/// Passes of [`ROWS`] rows from which the rows run under the SIMD
/// dispatch (a call into a function compiled for the CPU's widest SIMD,
/// which the loop cannot be inlined across).
const SIMD_PASSES: u64 = 8;

/// A phase with a grid-stride loop (stride.rs, `PhaseLoop`): the
/// statements before it as a phase, then the loop row by row (row `k`
/// runs the iteration of every invocation whose `i = first + li + k * S`
/// is below the end, `li` in order), then the statements after it. Where
/// the rows cannot run (a workgroup that is not 1-D, `end + S` past
/// 2^32, a sliced array shorter than the end), the phase as it is.
fn rows(cx: &mut Cpu, stmts: &[&Stmt], p: &crate::stride::PhaseLoop, in_loop: bool) -> TokenStream {
    let g = quote!(::unigpu::kernel::generated);
    // The general form names what the rows name: not counted.
    let recording = cx.recording.replace(false);
    let whole = plain_phase(cx, stmts, in_loop);
    cx.recording.set(recording);
    let before: Vec<&Stmt> = stmts[..p.at]
        .iter()
        .filter(|s| !matches!(s, Stmt::Let { name, .. } if *name == p.var))
        .copied()
        .collect();
    let before = plain_phase(cx, &before, false);
    cx.phase.set(cx.phase.get() + 1);
    let end = uniform(cx, p.end);
    let fast = cx.fast.replace(Fast {
        var: p.var.clone(),
        sliced: p.sliced.clone(),
        at: format_ident!("__li"),
        lens: false,
        hoisted: Vec::new(),
    });
    // The per-invocation variables the iteration names, cut to the row.
    let mut named = HashSet::new();
    visit_exprs(p.body, &mut |e| {
        if let ExprKind::Var(n) = &e.kind {
            named.insert(n.clone());
        }
    });
    written(p.body, &mut named);
    let mut held: Vec<String> = named
        .into_iter()
        .filter(|n| cx.lifted.contains(n) && !cx.scalars.contains(n))
        .collect();
    held.sort();
    cx.depth += 1;
    let body = cx.block(p.body);
    // The whole rows' form of the iteration: the held variables are locals
    // of the invocation's pass over its rows (loaded before them, stored
    // after), so they stay in registers: written `v[__li]`, the compiler
    // must store each row's value, not knowing the arrays apart.
    let recording = cx.recording.replace(false);
    cx.registers = held.iter().cloned().collect();
    let body_in_registers = cx.block(p.body);
    cx.registers.clear();
    cx.recording.set(recording);
    cx.depth -= 1;
    cx.fast = fast;
    let mut changed = HashSet::new();
    written(p.body, &mut changed);
    let (mut load, mut store) = (Vec::new(), Vec::new());
    for n in &held {
        let (v, a) = (format_ident!("{}", n), format_ident!("__held_{}", n));
        if changed.contains(n) {
            load.push(quote!(let mut #v = #a[__li];));
            store.push(quote!(#a[__li] = #v;));
        } else {
            load.push(quote!(let #v = #a[__li];));
        }
    }
    let held_whole: Vec<TokenStream> = held
        .iter()
        .map(|n| {
            let (v, a) = (format_ident!("{}", n), format_ident!("__held_{}", n));
            quote!(let #a = &mut #v[..__cnt];)
        })
        .collect();
    let held: Vec<TokenStream> = held
        .iter()
        .map(|n| {
            let n = format_ident!("{}", n);
            quote!(let #n = &mut #n[..__cnt];)
        })
        .collect();
    let fits = p.sliced.iter().map(|&a| {
        let q = param(cx.k, a);
        quote!(&& #q.len() >= __end)
    });
    let slices = p.sliced.iter().map(|&a| {
        let (q, s) = (param(cx.k, a), format_ident!("__s_{}", a));
        quote!(let #s = &#q.slice()[__lo as usize..][..__cnt];)
    });
    let after = plain_phase(cx, &stmts[p.at + 1..], in_loop);
    let i = format_ident!("{}", p.var);
    // ROWS rows at a time while they are all whole: for each invocation,
    // its next ROWS iterations in order (a schedule the kernel allows, as
    // the rows are), so an accumulator stays in a register across them
    // instead of going through memory each row.
    let row_slices = (0..ROWS)
        .flat_map(|r| p.sliced.iter().map(move |&a| (r, a)))
        .map(|(r, a)| {
            let q = param(cx.k, a);
            let s = format_ident!("__s_{}_{}", a, r);
            let r = r as u64;
            quote!(let #s = &#q.slice()[(__lo as u64 + #r * __stride as u64) as usize..][..__n];)
        });
    let rows_of = (0..ROWS).map(|r| {
        let rebind = p.sliced.iter().map(|&a| {
            let (s, sr) = (format_ident!("__s_{}", a), format_ident!("__s_{}_{}", a, r));
            quote!(let #s = #sr;)
        });
        let r = r as u32;
        quote!({
            #(#rebind)*
            let #i: u32 = __lo.wrapping_add(#r.wrapping_mul(__stride)).wrapping_add(__li as u32);
            #body_in_registers
        })
    });
    let rows_const = ROWS as u64;
    // The passes as a block giving the row they stopped at: run under the
    // SIMD dispatch or as they are (below).
    let passes = quote!({
        let (__g, __stride, __end, __n, mut __lo) = (*__g, __stride, __end, __n, __lo);
        while (__lo as u64) + (#rows_const - 1) * __stride as u64 + __n as u64 <= __end as u64 {
            let __cnt = __n;
            #(#held_whole)*
            #(#row_slices)*
            for __li in 0..__n {
                let __ids = &__g.ids(__li);
                #(#load)*
                #(#rows_of)*
                #(#store)*
            }
            __lo = ((__lo as u64) + #rows_const * __stride as u64) as u32;
        }
        __lo
    });
    quote! {
        let __end: u32 = #end;
        match __g.rows(__end) {
            ::core::option::Option::Some((__first, __stride)) if true #(#fits)* => {
                #before
                let mut __lo: u32 = __first;
                // All ROWS rows whole: the last ends by `__end`. Where the
                // passes are many, under the SIMD dispatch, as the fast
                // path's chunks (the tree sum's rows: SSE2 → AVX2 on the
                // 2-core box), with copies of the values the loop reads made
                // inside the closure: read through its captured references,
                // any of them could alias the held stores, and the loop
                // stayed scalar. Where they are few (a row reduction's one
                // pass a workgroup), the dispatch's call costs more than it
                // gains (sum over rows of 1024: 2.03 → 2.31 ms), so the
                // same loop runs without it.
                let __passes = (__end as u64).saturating_sub(__lo as u64)
                    / (#rows_const * __stride as u64).max(1);
                __lo = if __passes >= #SIMD_PASSES {
                    #g::simd(#[inline(always)] || #passes)
                } else {
                    #passes
                };
                while __lo < __end {
                    let __cnt = ::core::cmp::min(__n as u32, __end - __lo) as usize;
                    #(#held)*
                    #(#slices)*
                    for __li in 0..__cnt {
                        let __ids = &__g.ids(__li);
                        let #i: u32 = __lo.wrapping_add(__li as u32);
                        #body
                    }
                    // No wrap: `__lo < __end` and `__end + __stride <= 2^32`.
                    __lo = __lo.wrapping_add(__stride);
                }
                #after
            }
            _ => { #whole }
        }
    }
}

/// The variables `stmts` assign or declare by `let`, at any depth (a
/// lifted variable's `let` assigns its per-invocation slot).
fn written(stmts: &[Stmt], out: &mut HashSet<String>) {
    for s in stmts {
        match s {
            Stmt::Assign { name, .. } | Stmt::Let { name, .. } => {
                out.insert(name.clone());
            }
            Stmt::Block(b) | Stmt::Loop(b) => written(b, out),
            Stmt::For { body, .. } | Stmt::While { body, .. } => written(body, out),
            Stmt::If { then, els, .. } => {
                written(then, out);
                written(els, out);
            }
            _ => {}
        }
    }
}

/// One phase, every statement run by every invocation in turn.
fn plain_phase(cx: &mut Cpu, stmts: &[&Stmt], in_loop: bool) -> TokenStream {
    if stmts.is_empty() {
        return quote!();
    }

    cx.phase.set(cx.phase.get() + 1);
    // Invocation loops, cut at the statements that set a per-workgroup
    // scalar (`scalars`), which run once between them.
    let mut loops = TokenStream::new();
    let mut run: Vec<&Stmt> = Vec::new();
    for s in stmts {
        let once = match s {
            Stmt::Let { name, .. } | Stmt::Assign { name, .. } => cx.scalars.contains(name),
            _ => false,
        };
        if !once {
            run.push(s);
            continue;
        }
        loops.extend(invocations(cx, &run));
        run.clear();
        let st = cx.stmt(s);
        loops.extend(quote!({ let __li = 0usize; let __ids = &__g.ids(0); #st }));
    }
    loops.extend(invocations(cx, &run));
    let exits = if in_loop {
        quote! {
            if __brk { __brk = false; break; }
            if __cont { __cont = false; continue; }
        }
    } else {
        quote!()
    };
    if !cx.returns {
        // No invocation ends early.
        return quote! {
            #loops
            #exits
        };
    }
    quote! {
        #loops
        // Every invocation returned: the rest of the kernel has nothing to do.
        if __ndone == __n { return; }
        #exits
    }
}

/// `stmts` run by every invocation in turn: one loop over them, or, for
/// one `if` on the local x id against a per-workgroup value
/// ([`local_x_range`]), a loop over only the invocations it lets through
/// (a tree's level `if l < stride` passes over `stride` invocations a
/// workgroup, not all of them: the tree sum's nine levels cost 8x the
/// invocations they needed, most of a small sum's time on the CPU).
fn invocations(cx: &mut Cpu, stmts: &[&Stmt]) -> TokenStream {
    if let [Stmt::If { cond, then, els }] = stmts
        && els.is_empty()
        && !exits(&then.iter().collect::<Vec<_>>())
        && let Some(range) = local_x_range(cx, cond)
    {
        let (lo, hi) = match range {
            LocalX::Below(v) => (quote!(0usize), uniform(cx, v)),
            LocalX::At(v) => {
                let v = uniform(cx, v);
                (quote!(#v), quote!(((#v) as usize).saturating_add(1)))
            }
        };
        let body = cx.block(then);
        let each = items_in(cx, &[body], quote!(__span.clone()));
        return quote! {{
            let __w = __g.width();
            let __lo = ::core::cmp::min((#lo) as usize, __w);
            let __hi = ::core::cmp::min((#hi) as usize, __w);
            for __row in (0..__n).step_by(__w) {
                let __span = (__row + __lo)..(__row + __hi);
                #each
            }
        }};
    }
    let body: Vec<TokenStream> = stmts.iter().map(|s| cx.stmt(s)).collect();
    items(cx, &body)
}

/// The local x ids a condition holds for ([`local_x_range`]).
enum LocalX<'e> {
    /// `x < v`: `0..v`.
    Below(&'e Expr),
    /// `x == v`: `v..v + 1`.
    At(&'e Expr),
}

/// For a condition `x < v`, `v > x`, `x == v` or `v == x` where `x` is the
/// local x id (`local_id().x` or an immutable variable that holds it) and
/// `v` a per-workgroup value ([`same_for_all`]): the local x ids it holds
/// for (`v` may be past the workgroup's width: the caller clips).
fn local_x_range<'e>(cx: &Cpu, cond: &'e Expr) -> Option<LocalX<'e>> {
    let ExprKind::Bin(op, l, r) = &cond.kind else {
        return None;
    };
    let declared = declared(cx.k);
    let uniform = |e: &Expr| same_for_all(e, &cx.scalars, &declared);
    let local = |e: &Expr| is_local_x(cx.k, e);
    match op {
        BinOp::Lt if local(l) && uniform(r) => Some(LocalX::Below(r)),
        BinOp::Gt if local(r) && uniform(l) => Some(LocalX::Below(l)),
        BinOp::Eq if local(l) && uniform(r) => Some(LocalX::At(r)),
        BinOp::Eq if local(r) && uniform(l) => Some(LocalX::At(l)),
        _ => None,
    }
}

/// Whether `e` is the local x id: `local_id().x`, or a variable with one
/// immutable `let` that holds it and no assignment.
fn is_local_x(k: &Kernel, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Id(Builtin::Local, 0) => true,
        ExprKind::Var(n) => holds_local_x(k, n),
        _ => false,
    }
}

/// Whether variable `name` has one immutable `let`, of the local x id, and
/// no assignment ([`is_local_x`]).
fn holds_local_x(k: &Kernel, name: &str) -> bool {
    let mut defs = Vec::new();
    each_definition(&k.body, &mut |n, s| {
        if n == name {
            defs.push(s);
        }
    });
    matches!(defs.as_slice(), [Stmt::Let { mutable: false, init, .. }] if is_local_x(k, init))
}

/// One loop over the workgroup's invocations running `body`.
fn items(cx: &Cpu, body: &[TokenStream]) -> TokenStream {
    items_in(cx, body, quote!(0..__n))
}

/// One loop over the invocations of `range` running `body`.
fn items_in(cx: &Cpu, body: &[TokenStream], range: TokenStream) -> TokenStream {
    if body.is_empty() {
        return quote!();
    }
    let skip = if cx.returns {
        quote!(if __done[__li] {
            continue;
        })
    } else {
        quote!()
    };
    quote! {
        '__items: for __li in #range {
            #skip
            let __ids = &__g.ids(__li);
            #(#body)*
        }
    }
}

fn expr(cx: &Cpu, e: &Expr) -> TokenStream {
    let k = cx.k;
    match &e.kind {
        ExprKind::Lit(l) => lit(*l, e.ty),
        ExprKind::Var(n) => cx.var(n),
        ExprKind::Atomic {
            op,
            mem,
            index,
            value,
            current,
            site,
        } => {
            // A shared array's part is the invocation's workgroup's.
            let (arr, part) = match *mem {
                Mem::Global(a) => (param(k, a), quote!()),
                Mem::Shared(a) => (
                    format_ident!("{}", k.shared[a].name),
                    quote!(__g.part(__li),),
                ),
            };
            let o = format_ident!("{}", op.name());
            let (i, v) = (expr(cx, index), expr(cx, value));
            let t = ty(e.ty);
            // Evaluated in source order: index, current, value.
            let c = match current {
                Some(c) => expr(cx, c),
                None => quote!(<#t as ::core::default::Default>::default()),
            };
            quote!({
                let __i: u32 = #i;
                let __c: #t = #c;
                let __v: #t = #v;
                #arr.atomic(#part ::unigpu::kernel::generated::AtomicOp::#o, __i, __v, __c, &__fault, #site)
            })
        }
        ExprKind::SharedLoad(a, index, site) => {
            let (s, i) = (format_ident!("{}", k.shared[*a].name), expr(cx, index));
            quote!(#s.get(__g.part(__li), #i, &__fault, #site))
        }
        ExprKind::Scalar(i) => {
            let p = param(k, *i);
            quote!(#p)
        }
        ExprKind::Len(i) if cx.fast.as_ref().is_some_and(|f| f.lens) => {
            let l = format_ident!("__len_{}", i);
            quote!(#l)
        }
        ExprKind::Len(i) => {
            let p = param(k, *i);
            quote!(#p.len())
        }
        ExprKind::Load(a, index, _)
            if cx.fast.as_ref().and_then(|f| f.slice(*a, index)).is_some() =>
        {
            let s = format_ident!("__s_{}", a);
            let at = cx.fast.as_ref().map(|f| &f.at);
            if is_byte(k, *a) {
                quote!(u32::from(#s[#at]))
            } else {
                quote!(#s[#at])
            }
        }
        ExprKind::Load(a, index, site) => {
            let (p, i) = (param(k, *a), expr(cx, index));
            let hoisted = match (&index.kind, &cx.fast) {
                (ExprKind::Lit(Lit::Int(n)), Some(f)) => f
                    .hoisted
                    .iter()
                    .find(|(b, i, _)| b == a && u64::from(*i) == *n)
                    .map(|(_, _, local)| local.clone()),
                _ => None,
            };
            let v = match hoisted {
                Some(local) => quote!(#local),
                None => quote!(#p.get(#i, &__fault, #site)),
            };
            if half(k, *a).is_some() {
                // Exact: every f16 and bf16 is an f32.
                quote!(#v.to_f32())
            } else if is_byte(k, *a) {
                quote!(u32::from(#v))
            } else {
                v
            }
        }
        ExprKind::Bin(op, l, r) => binary(cx, *op, l, r),
        ExprKind::Neg(v) => {
            let x = expr(cx, v);
            if v.ty.is_float() {
                quote!((-(#x)))
            } else {
                quote!((#x).wrapping_neg())
            }
        }
        ExprKind::Not(v) => {
            let x = expr(cx, v);
            quote!((!(#x)))
        }
        ExprKind::Cast(v) => {
            // Rust's `as` is the language's cast: wrapping between
            // integers, saturating (NaN to 0) from floats to integers.
            let (x, t) = (expr(cx, v), ty(e.ty));
            quote!(((#x) as #t))
        }
        // A subgroup of one on the CPU: each invocation runs alone between
        // barriers, so it is its own subgroup (docs/kernels.md).
        ExprKind::Id(Builtin::SubgroupSize, _) => quote!(1u32),
        ExprKind::Id(Builtin::SubgroupLane, _) => quote!(0u32),
        ExprKind::Id(Builtin::SubgroupId, _) => {
            let [wx, wy, _] = cx.k.workgroup;
            quote!((__ids.local[0] + #wx * (__ids.local[1] + #wy * __ids.local[2])))
        }
        ExprKind::Id(b, axis) => {
            let field = match b {
                Builtin::SubgroupSize | Builtin::SubgroupLane | Builtin::SubgroupId => {
                    unreachable!("matched above")
                }
                Builtin::Global => quote!(global),
                Builtin::Local => quote!(local),
                Builtin::Group => quote!(group),
                Builtin::Size => quote!(size),
                Builtin::Groups => quote!(groups),
            };
            quote!(__ids.#field[#axis])
        }
        ExprKind::Math(f, args) => math(cx, *f, args, e.ty),
        ExprKind::Call(f, args) => {
            let name = format_ident!("{}", k.funcs[*f].name);
            let a = args.iter().map(|x| expr(cx, x));
            quote!(#name(#(#a),*))
        }
    }
}

fn binary(cx: &Cpu, op: BinOp, l: &Expr, r: &Expr) -> TokenStream {
    use BinOp::*;
    let t = l.ty;
    let (a, b) = (expr(cx, l), expr(cx, r));
    let g = quote!(::unigpu::kernel::generated);
    match op {
        Add if t.is_int() => quote!((#a).wrapping_add(#b)),
        Sub if t.is_int() => quote!((#a).wrapping_sub(#b)),
        Mul if t.is_int() => quote!((#a).wrapping_mul(#b)),
        Div if t.is_int() => quote!(#g::IntDiv::div(#a, #b)),
        Rem if t.is_int() => quote!(#g::IntDiv::rem(#a, #b)),
        Shl => quote!((#a).wrapping_shl((#b) as u32)),
        Shr => quote!((#a).wrapping_shr((#b) as u32)),
        Add => quote!((#a + #b)),
        Sub => quote!((#a - #b)),
        Mul => quote!((#a * #b)),
        Div => quote!((#a / #b)),
        Rem => quote!((#a % #b)),
        BitAnd => quote!((#a & #b)),
        BitOr => quote!((#a | #b)),
        BitXor => quote!((#a ^ #b)),
        Eq => quote!((#a == #b)),
        Ne => quote!((#a != #b)),
        Lt => quote!((#a < #b)),
        Le => quote!((#a <= #b)),
        Gt => quote!((#a > #b)),
        Ge => quote!((#a >= #b)),
        And => quote!((#a && #b)),
        Or => quote!((#a || #b)),
    }
}

fn math(cx: &Cpu, f: Math, args: &[Expr], t: Ty) -> TokenStream {
    let a: Vec<TokenStream> = args.iter().map(|e| expr(cx, e)).collect();
    let x = &a[0];
    match f {
        Math::ToBits => return quote!(f32::to_bits(#x)),
        Math::FromBits => return quote!(f32::from_bits(#x)),
        // Over a subgroup of one (see `Builtin::SubgroupSize` above).
        Math::SubgroupAdd | Math::SubgroupMax | Math::SubgroupMin => return quote!((#x)),
        _ => {}
    }
    if t.is_int() {
        return match f {
            Math::MulHi => mul_hi(&a),
            Math::Abs => quote!((#x).wrapping_abs()),
            Math::Min => {
                let y = &a[1];
                quote!(::core::cmp::Ord::min(#x, #y))
            }
            Math::Max => {
                let y = &a[1];
                quote!(::core::cmp::Ord::max(#x, #y))
            }
            _ => {
                let (lo, hi) = (&a[1], &a[2]);
                quote!(::core::cmp::Ord::min(::core::cmp::Ord::max(#x, #lo), #hi))
            }
        };
    }
    let tt = ty(t);
    // f32's transcendental functions: the vectorisable branch-free ones
    // (`unigpu::simd::math`) where the loop vectorises (`vector_math`),
    // since libm's would be a call per element that keeps it scalar.
    // `pow` stays libm's: the f64 form's special cases kept its loop
    // scalar, at 3.6x libm's time.
    if t == Ty::F32 && cx.vector_math {
        let m = quote!(::unigpu::kernel::generated::math);
        match f {
            Math::Exp => return quote!(#m::exp(#x)),
            Math::Exp2 => return quote!(#m::exp2(#x)),
            Math::Ln => return quote!(#m::ln(#x)),
            Math::Log2 => return quote!(#m::log2(#x)),
            Math::Tanh => return quote!(#m::tanh(#x)),
            _ => {}
        }
    }
    match f {
        Math::Sqrt => quote!(#tt::sqrt(#x)),
        Math::Rsqrt => quote!((1.0 / #tt::sqrt(#x))),
        Math::Abs => quote!(#tt::abs(#x)),
        Math::Min => {
            let y = &a[1];
            quote!(#tt::min(#x, #y))
        }
        Math::Max => {
            let y = &a[1];
            quote!(#tt::max(#x, #y))
        }
        Math::Clamp => {
            let (lo, hi) = (&a[1], &a[2]);
            quote!(#tt::min(#tt::max(#x, #lo), #hi))
        }
        Math::Floor => quote!(#tt::floor(#x)),
        Math::Ceil => quote!(#tt::ceil(#x)),
        Math::Exp => quote!(#tt::exp(#x)),
        Math::Exp2 => quote!(#tt::exp2(#x)),
        Math::Ln => quote!(#tt::ln(#x)),
        Math::Log2 => quote!(#tt::log2(#x)),
        Math::Sin => quote!(#tt::sin(#x)),
        Math::Cos => quote!(#tt::cos(#x)),
        Math::Tan => quote!(#tt::tan(#x)),
        Math::Tanh => quote!(#tt::tanh(#x)),
        Math::Round => quote!(#tt::round(#x)),
        Math::Pow => {
            let y = &a[1];
            quote!(#tt::powf(#x, #y))
        }
        // One rounding: the hardware's fma or libm's exact one.
        Math::Fma => {
            let (y, z) = (&a[1], &a[2]);
            quote!(#tt::mul_add(#x, #y, #z))
        }
        Math::Powi => {
            let n = &a[1];
            let f = format_ident!("powi_{}", t.tag());
            quote!(::unigpu::kernel::generated::#f(#x, #n))
        }
        // On u32 only (the front end says so); printed the same anyway.
        Math::MulHi => mul_hi(&a),
        Math::ToBits
        | Math::FromBits
        | Math::SubgroupAdd
        | Math::SubgroupMax
        | Math::SubgroupMin => unreachable!("returned above"),
    }
}

/// `mul_hi(a, b)`: the high word of the u64 product.
fn mul_hi(a: &[TokenStream]) -> TokenStream {
    let (x, y) = (&a[0], &a[1]);
    quote!(((((#x) as u64) * ((#y) as u64)) >> 32) as u32)
}

fn lit(l: Lit, t: Ty) -> TokenStream {
    match l {
        Lit::Bool(b) => quote!(#b),
        Lit::Int(bits) => {
            let t = ty(t);
            quote!((#bits as #t))
        }
        Lit::F32(v) => {
            let bits = v.to_bits();
            quote!(f32::from_bits(#bits))
        }
        Lit::F64(v) => {
            let bits = v.to_bits();
            quote!(f64::from_bits(#bits))
        }
    }
}
