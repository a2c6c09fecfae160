//! Which array accesses are in bounds for every launch, so the CUDA and
//! WGSL forms may index them without a check (the CPU form keeps Rust's).
//!
//! Two kinds of proof, both from the kernel alone:
//! - **Ranges.** An unsigned index whose every value is below a shared
//!   array's literal length: literals, thread indices within the
//!   workgroup (`local_id()` < `workgroup_size`, which every launch
//!   enforces: `Stream::launch` refuses another block), `for` variables
//!   (`start..end` gives at most `end - 1`) and variables never assigned
//!   after their `let`, through `+ - * / % & >>` and casts, where no step
//!   can wrap.
//! - **Conditions.** Inside `if i < x.len()`, `while i < x.len()` and
//!   `for i in a..x.len()`, the index `i` itself is below `x`'s length
//!   until a statement that assigns `i` (facts are dropped before any
//!   statement that assigns one of their variables anywhere inside it).
//!   `i` may be any expression of variables, literals and arithmetic; an
//!   index that is the same expression is proven.
//! - **Windows.** Inside a condition holding both `C < x.len()` (or `<=`)
//!   and `e < x.len() - C` for a literal `C`, `e + c` is below `x`'s
//!   length for every literal `c <= C`: the first makes `x.len() - C`
//!   exact, so `e + C < x.len()` without wrapping. A row kernel checks a
//!   window once for eight accesses `e, e + 64, ..., e + 448` this way.
//!
//! Anything else keeps its check: an access this cannot prove reports a
//! fault as before. Atomics and 16-bit float arrays always keep theirs.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::ir::*;

/// The access sites (`Kernel::sites` numbers) proven in bounds.
pub fn proven(k: &Kernel) -> BTreeSet<u32> {
    let mut assigned = HashSet::new();
    assigned_in(&k.body, &mut assigned);
    let mut p = Prove {
        k,
        assigned,
        ranges: HashMap::new(),
        lens: HashMap::new(),
        proven: BTreeSet::new(),
    };
    p.block(&k.body, &[]);
    p.proven
}

/// A value's bounds, both inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    lo: u64,
    hi: u64,
}

/// `key + c < len(array)` for every `c <= slack` here, where `key` is an
/// expression's [`key`] and `vars` the variables it reads.
#[derive(Debug, Clone)]
struct Fact {
    key: String,
    vars: Vec<String>,
    array: usize,
    slack: u64,
}

/// A comparable form of an index expression of variables, literals and
/// arithmetic; `None` for anything else (loads, calls, ...).
fn key(e: &Expr) -> Option<String> {
    Some(match &e.kind {
        ExprKind::Var(v) => v.clone(),
        ExprKind::Lit(Lit::Int(n)) => format!("{n}"),
        ExprKind::Scalar(i) => format!("${i}"),
        ExprKind::Bin(op, l, r) => format!("({} {op:?} {})", key(l)?, key(r)?),
        ExprKind::Cast(v) => format!("({} as {:?})", key(v)?, e.ty),
        _ => return None,
    })
}

/// The variables `e` reads.
fn vars(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    e.visit(&mut |x| {
        if let ExprKind::Var(v) = &x.kind {
            out.push(v.clone());
        }
    });
    out
}

struct Prove<'k> {
    k: &'k Kernel,
    /// Every variable some statement assigns after its `let`.
    assigned: HashSet<String>,
    /// Bounds of the variables never assigned (names are unique).
    ranges: HashMap<String, Range>,
    /// Variables never assigned whose value is an array's length.
    lens: HashMap<String, usize>,
    proven: BTreeSet<u32>,
}

/// The largest value of an unsigned index type; `None` for the types the
/// analysis leaves alone.
fn max_of(t: Ty) -> Option<u64> {
    match t {
        Ty::U32 | Ty::Usize => Some(u32::MAX as u64),
        Ty::U64 => Some(u64::MAX),
        _ => None,
    }
}

/// The bounds of `a op b` where no step can wrap (`bits` wide); `None`
/// where it might.
fn binary(op: BinOp, a: Range, b: Range, bits: u32) -> Option<Range> {
    Some(match op {
        BinOp::Add => Range {
            lo: a.lo.checked_add(b.lo)?,
            hi: a.hi.checked_add(b.hi)?,
        },
        BinOp::Mul => Range {
            lo: a.lo.checked_mul(b.lo)?,
            hi: a.hi.checked_mul(b.hi)?,
        },
        // Only where it cannot wrap below zero.
        BinOp::Sub if a.lo >= b.hi => Range {
            lo: a.lo - b.hi,
            hi: a.hi - b.lo,
        },
        // `x / 0 == x` in the language: never above the dividend.
        BinOp::Div if b.lo > 0 => Range {
            lo: a.lo / b.hi,
            hi: a.hi / b.lo,
        },
        BinOp::Div => Range { lo: 0, hi: a.hi },
        // `x % 0 == 0`: below the divisor, and never above the dividend.
        BinOp::Rem => Range {
            lo: 0,
            hi: a.hi.min(b.hi.saturating_sub(1)),
        },
        BinOp::BitAnd => Range {
            lo: 0,
            hi: a.hi.min(b.hi),
        },
        BinOp::Shr if b.lo == b.hi && b.hi < u64::from(bits) => Range {
            lo: a.lo >> b.hi,
            hi: a.hi >> b.hi,
        },
        _ => return None,
    })
}

/// A literal's value whatever its type (a shift's count may be signed).
fn lit(e: &Expr) -> Option<Range> {
    match e.kind {
        ExprKind::Lit(Lit::Int(n)) => Some(Range { lo: n, hi: n }),
        _ => None,
    }
}

/// The operands of `e`'s `&&`s.
fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match &e.kind {
        ExprKind::Bin(BinOp::And, l, r) => {
            conjuncts(l, out);
            conjuncts(r, out);
        }
        _ => out.push(e),
    }
}

fn assigned_in(stmts: &[Stmt], out: &mut HashSet<String>) {
    for s in stmts {
        match s {
            Stmt::Assign { name, .. } => {
                out.insert(name.clone());
            }
            Stmt::Block(b) | Stmt::Loop(b) => assigned_in(b, out),
            Stmt::If { then, els, .. } => {
                assigned_in(then, out);
                assigned_in(els, out);
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } => assigned_in(body, out),
            _ => {}
        }
    }
}

/// Whether `s` assigns `name` anywhere inside it.
fn assigns(s: &Stmt, name: &str) -> bool {
    let mut set = HashSet::new();
    assigned_in(std::slice::from_ref(s), &mut set);
    set.contains(name)
}

impl Prove<'_> {
    /// Bounds of an unsigned value: from what the kernel says, else the
    /// whole type; `None` for the types the analysis leaves alone.
    fn range(&self, e: &Expr) -> Option<Range> {
        let max = max_of(e.ty)?;
        let any = Range { lo: 0, hi: max };
        let r = match &e.kind {
            ExprKind::Lit(Lit::Int(n)) => Range { lo: *n, hi: *n },
            ExprKind::Var(name) => self.ranges.get(name).copied().unwrap_or(any),
            ExprKind::Id(Builtin::Local, axis) => Range {
                lo: 0,
                hi: u64::from(self.k.workgroup[*axis]).saturating_sub(1),
            },
            ExprKind::Id(Builtin::Size, axis) => {
                let n = u64::from(self.k.workgroup[*axis]);
                Range { lo: n, hi: n }
            }
            // Unsigned to unsigned keeps a value that fits; anything else
            // may be any value of the type.
            ExprKind::Cast(v) => self.range(v).filter(|r| r.hi <= max).unwrap_or(any),
            ExprKind::Bin(op, l, r) => match (self.range(l), self.range(r).or_else(|| lit(r))) {
                (Some(a), Some(b)) => binary(*op, a, b, l.ty.bits()).unwrap_or(any),
                _ => any,
            },
            // Never above either side.
            ExprKind::Math(Math::Min, a) if a.len() == 2 => {
                match (self.range(&a[0]), self.range(&a[1])) {
                    (Some(x), Some(y)) => Range {
                        lo: x.lo.min(y.lo),
                        hi: x.hi.min(y.hi),
                    },
                    _ => any,
                }
            }
            _ => any,
        };
        Some(if r.hi <= max { r } else { any })
    }

    /// The facts `cond` being true gives.
    fn facts_of(&self, cond: &Expr, out: &mut Vec<Fact>) {
        let mut all = Vec::new();
        conjuncts(cond, &mut all);
        // `C < len` / `C <= len` (or reversed): `len - C` is exact.
        let mut exact: Vec<(usize, u64)> = Vec::new();
        for c in &all {
            let ExprKind::Bin(op, l, r) = &c.kind else {
                continue;
            };
            let (small, big) = match op {
                BinOp::Lt | BinOp::Le => (l, r),
                BinOp::Gt | BinOp::Ge => (r, l),
                _ => continue,
            };
            if let (Some(n), Some(a)) = (lit(small), self.len_of(big)) {
                exact.push((a, n.hi));
            }
        }
        for c in &all {
            let ExprKind::Bin(op, l, r) = &c.kind else {
                continue;
            };
            let (var, bound) = match op {
                BinOp::Lt => (l, r),
                BinOp::Gt => (r, l),
                _ => continue,
            };
            if max_of(var.ty).is_none() {
                continue;
            }
            let Some(k) = key(var) else {
                continue;
            };
            let (array, slack) = if let Some(a) = self.len_of(bound) {
                (a, 0)
            } else if let ExprKind::Bin(BinOp::Sub, len, sub) = &bound.kind
                && let (Some(a), Some(n)) = (self.len_of(len), lit(sub))
                && exact.iter().any(|&(b, m)| b == a && m >= n.hi)
            {
                (a, n.hi)
            } else {
                continue;
            };
            out.push(Fact {
                key: k,
                vars: vars(var),
                array,
                slack,
            });
        }
    }

    /// The array whose length `e` is, if it is one.
    fn len_of(&self, e: &Expr) -> Option<usize> {
        match &e.kind {
            ExprKind::Len(a) => Some(*a),
            ExprKind::Var(n) => self.lens.get(n).copied(),
            _ => None,
        }
    }

    fn global_ok(&self, array: usize, index: &Expr, facts: &[Fact]) -> bool {
        let ParamKind::Array { elem, .. } = self.k.params[array].kind else {
            return false;
        };
        if elem.is_narrow() {
            return false;
        }
        let mut index = index;
        while let ExprKind::Cast(v) = &index.kind {
            if max_of(v.ty).is_none() || max_of(v.ty) > max_of(index.ty) {
                return false;
            }
            index = v;
        }
        let covered = |e: &Expr, c: u64| {
            key(e).is_some_and(|k| {
                facts
                    .iter()
                    .any(|f| f.array == array && f.key == k && f.slack >= c)
            })
        };
        if covered(index, 0) {
            return true;
        }
        // `e + c` inside a window of `e`.
        match &index.kind {
            ExprKind::Bin(BinOp::Add, e, c) => lit(c).is_some_and(|c| covered(e, c.hi)),
            _ => false,
        }
    }

    fn shared_ok(&self, array: usize, index: &Expr) -> bool {
        let Some(len) = self.k.shared[array].len.lit() else {
            return false;
        };
        self.range(index).is_some_and(|r| r.hi < u64::from(len))
    }

    fn block(&mut self, stmts: &[Stmt], facts: &[Fact]) {
        let mut facts = facts.to_vec();
        for s in stmts {
            facts.retain(|f| !f.vars.iter().any(|v| assigns(s, v)));
            self.stmt(s, &facts);
        }
    }

    fn stmt(&mut self, s: &Stmt, facts: &[Fact]) {
        match s {
            Stmt::Let { name, init, .. } => {
                self.expr(init, facts);
                if !self.assigned.contains(name) {
                    if let Some(r) = self.range(init) {
                        self.ranges.insert(name.clone(), r);
                    }
                    if let ExprKind::Len(a) = init.kind {
                        self.lens.insert(name.clone(), a);
                    }
                }
            }
            Stmt::Assign { value, .. } | Stmt::Eval(value) | Stmt::ReturnValue(value) => {
                self.expr(value, facts)
            }
            Stmt::Store {
                array,
                index,
                value,
                site,
            } => {
                self.expr(index, facts);
                self.expr(value, facts);
                if self.plain(Mem::Global(*array)) && self.global_ok(*array, index, facts) {
                    self.proven.insert(*site);
                }
            }
            Stmt::SharedStore {
                array,
                index,
                value,
                site,
            } => {
                self.expr(index, facts);
                self.expr(value, facts);
                if self.plain(Mem::Shared(*array)) && self.shared_ok(*array, index) {
                    self.proven.insert(*site);
                }
            }
            Stmt::Block(b) | Stmt::Loop(b) => self.block(b, facts),
            Stmt::If { cond, then, els } => {
                self.expr(cond, facts);
                let mut inner = facts.to_vec();
                self.facts_of(cond, &mut inner);
                self.block(then, &inner);
                self.block(els, facts);
            }
            Stmt::While { cond, body } => {
                self.expr(cond, facts);
                let mut inner = facts.to_vec();
                self.facts_of(cond, &mut inner);
                self.block(body, &inner);
            }
            Stmt::For {
                name,
                start,
                end,
                body,
                ..
            } => {
                self.expr(start, facts);
                self.expr(end, facts);
                let mut inner = facts.to_vec();
                if !self.assigned.contains(name) {
                    // Inside the body `start <= name < end`.
                    if let Some(e) = self.range(end).filter(|e| e.hi > 0) {
                        let lo = self.range(start).map_or(0, |s| s.lo);
                        self.ranges.insert(
                            name.clone(),
                            Range {
                                lo: lo.min(e.hi - 1),
                                hi: e.hi - 1,
                            },
                        );
                    }
                    if let Some(a) = self.len_of(end) {
                        inner.push(Fact {
                            key: name.clone(),
                            vars: vec![name.clone()],
                            array: a,
                            slack: 0,
                        });
                    }
                }
                self.block(body, &inner);
            }
            Stmt::Barrier(_) | Stmt::Break(_) | Stmt::Continue(_) | Stmt::Return(_) => {}
        }
    }

    /// Not touched by any atomic (those keep their own checked forms).
    fn plain(&self, m: Mem) -> bool {
        let mut atomic = false;
        visit_exprs(&self.k.body, &mut |e| {
            atomic |= matches!(&e.kind, ExprKind::Atomic { mem, .. } if *mem == m);
        });
        !atomic
    }

    fn expr(&mut self, e: &Expr, facts: &[Fact]) {
        let mut found = Vec::new();
        e.visit(&mut |x| match &x.kind {
            ExprKind::Load(a, index, site) => {
                found.push((Mem::Global(*a), (**index).clone(), *site))
            }
            ExprKind::SharedLoad(a, index, site) => {
                found.push((Mem::Shared(*a), (**index).clone(), *site))
            }
            _ => {}
        });
        for (mem, index, site) in found {
            let ok = self.plain(mem)
                && match mem {
                    Mem::Global(a) => self.global_ok(a, &index, facts),
                    Mem::Shared(a) => self.shared_ok(a, &index),
                };
            if ok {
                self.proven.insert(site);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The kernel `f` lowered with workgroup size `wg`.
    pub(crate) fn kernel(f: syn::ItemFn, wg: [u32; 3]) -> Kernel {
        let params = crate::lower::params(&f.sig).unwrap();
        let (params, shared, body, sites) =
            crate::lower::body(params, &[], &f.block, &[], [64, 1, 1]).unwrap();
        Kernel {
            name: f.sig.ident.to_string(),
            params,
            workgroup: wg,
            shared,
            funcs: Vec::new(),
            body,
            sites,
        }
    }

    /// The proven accesses as "array access", sorted, and the checked ones.
    fn split(k: &Kernel) -> (Vec<String>, Vec<String>) {
        let p = proven(k);
        let mut used = BTreeSet::new();
        visit_exprs(&k.body, &mut |e| match &e.kind {
            ExprKind::Load(_, _, s) | ExprKind::SharedLoad(_, _, s) => {
                used.insert(*s);
            }
            _ => {}
        });
        fn stores(stmts: &[Stmt], used: &mut BTreeSet<u32>) {
            for s in stmts {
                match s {
                    Stmt::Store { site, .. } | Stmt::SharedStore { site, .. } => {
                        used.insert(*site);
                    }
                    Stmt::Block(b) | Stmt::Loop(b) => stores(b, used),
                    Stmt::If { then, els, .. } => {
                        stores(then, used);
                        stores(els, used);
                    }
                    Stmt::For { body, .. } | Stmt::While { body, .. } => stores(body, used),
                    _ => {}
                }
            }
        }
        stores(&k.body, &mut used);
        let name = |i: &u32| {
            let s = &k.sites[*i as usize];
            format!("{} {:?}", s.array, s.access)
        };
        let mut yes: Vec<String> = used.iter().filter(|i| p.contains(i)).map(name).collect();
        let mut no: Vec<String> = used.iter().filter(|i| !p.contains(i)).map(name).collect();
        yes.sort();
        no.sort();
        (yes, no)
    }

    #[test]
    fn tiled_matmul_shared_accesses_are_proven_and_global_ones_checked() {
        let k = kernel(
            syn::parse_quote! {
                fn mm(a: &[f32], b: &[f32], c: &mut [f32], n: u32) {
                    let ta = shared::<f32, 256>();
                    let tb = shared::<f32, 256>();
                    let lx = local_id().x;
                    let ly = local_id().y;
                    let row = global_id().y;
                    let col = global_id().x;
                    let mut acc = 0.0f32;
                    for t in 0..(n as usize) / 16 {
                        ta[ly * 16 + lx] = a[row * (n as usize) + t * 16 + lx];
                        tb[ly * 16 + lx] = b[(t * 16 + ly) * (n as usize) + col];
                        barrier();
                        for j in 0..16usize {
                            acc += ta[ly * 16 + j] * tb[j * 16 + lx];
                        }
                        barrier();
                    }
                    c[row * (n as usize) + col] = acc;
                }
            },
            [16, 16, 1],
        );
        let (proven, checked) = split(&k);
        assert_eq!(
            proven,
            ["ta Read", "ta Write", "tb Read", "tb Write"].map(String::from)
        );
        assert_eq!(checked, ["a Read", "b Read", "c Write"].map(String::from));
    }

    #[test]
    fn one_past_the_range_keeps_its_check() {
        // 15 * 16 + 16 == 256: the last invocation reads one past the end.
        let k = kernel(
            syn::parse_quote! {
                fn near(out: &mut [f32]) {
                    let t = shared::<f32, 256>();
                    let l = local_id().x;
                    let mut acc = 0.0f32;
                    for j in 0..17usize {
                        acc += t[l * 16 + j];
                    }
                    for j in 0..16usize {
                        acc += t[l * 16 + j];
                    }
                    out[global_id().x] = acc;
                }
            },
            [16, 1, 1],
        );
        let (proven, checked) = split(&k);
        assert_eq!(proven, ["t Read"]);
        assert_eq!(checked, ["out Write", "t Read"]);
        // With a workgroup of 17 the second loop reaches 16 * 16 + 15.
        let (proven, _) = split(&kernel(
            syn::parse_quote! {
                fn near(out: &mut [f32]) {
                    let t = shared::<f32, 256>();
                    out[0] = t[local_id().x * 16 + 15];
                }
            },
            [17, 1, 1],
        ));
        assert!(proven.is_empty(), "{proven:?}");
    }

    #[test]
    fn arithmetic_that_could_wrap_proves_nothing() {
        let k = kernel(
            syn::parse_quote! {
                fn wraps(out: &mut [f32]) {
                    let t = shared::<f32, 256>();
                    let l = local_id().x;
                    let a = t[l - 1];
                    let b = t[l * 4294967295usize % 256];
                    let c = t[(l + 4294967295usize) / 16777215];
                    let d = t[l % 256 + 1];
                    out[0] = a + b + c + d;
                }
            },
            [256, 1, 1],
        );
        let (proven, checked) = split(&k);
        // `l * 0xffff_ffff` wraps, but `% 256` bounds whatever it is.
        assert_eq!(proven, ["t Read"]);
        assert_eq!(checked, ["out Write", "t Read", "t Read", "t Read"]);
    }

    #[test]
    fn masks_shifts_divisions_and_remainders_bound_an_index() {
        let k = kernel(
            syn::parse_quote! {
                fn bits(x: &[u32], out: &mut [u32]) {
                    let t = shared::<u32, 256>();
                    let g = global_id().x;
                    let v = x[g];
                    t[g & 255] = v;
                    t[g % 256] = v;
                    t[(g >> 24) as usize] = v;
                    t[g % 257] = v;
                    t[g & 256] = v;
                    t[g >> 23] = v;
                    out[g.min(255)] = t[g.min(255)];
                }
            },
            [256, 1, 1],
        );
        let (proven, checked) = split(&k);
        assert_eq!(
            proven,
            ["t Read", "t Write", "t Write", "t Write"].map(String::from)
        );
        assert_eq!(
            checked,
            ["out Write", "t Write", "t Write", "t Write", "x Read"].map(String::from)
        );
    }

    #[test]
    fn a_condition_proves_its_variable_until_the_variable_changes() {
        let k = kernel(
            syn::parse_quote! {
                fn stride(x: &[f32], y: &mut [f32]) {
                    let n = y.len();
                    let mut i = global_id().x;
                    while i < y.len() {
                        y[i] = x[i] + y[i];
                        i += 1;
                        y[i] = 0.0;
                    }
                    let j = global_id().x;
                    if j < n && j < x.len() {
                        y[j] = x[j];
                    }
                    if j < x.len() {
                        y[j] = 1.0;
                    }
                    for k in 0..x.len() {
                        y[0] = x[k];
                    }
                }
            },
            [64, 1, 1],
        );
        let (proven, checked) = split(&k);
        assert_eq!(
            proven,
            ["x Read", "x Read", "y Read", "y Write", "y Write"].map(String::from)
        );
        assert_eq!(
            checked,
            ["x Read", "y Write", "y Write", "y Write"].map(String::from)
        );
    }

    #[test]
    fn a_window_proves_offsets_up_to_its_slack_only_with_its_exact_guard() {
        let k = kernel(
            syn::parse_quote! {
                fn rows(x: &[f32], y: &mut [f32], n: u32) {
                    let base = workgroup_id().x * (n as usize);
                    let mut j = local_id().x;
                    while j + 128 < (n as usize) && 128 < x.len() && base + j < x.len() - 128 {
                        y[0] = x[base + j] + x[base + j + 64] + x[base + j + 128];
                        y[1] = x[base + j + 129];
                        j += 256;
                        y[2] = x[base + j];
                    }
                    // Without `128 < x.len()`, `x.len() - 128` may wrap.
                    if base < x.len() - 128 {
                        y[3] = x[base + 1];
                    }
                    if 64 <= y.len() && base < y.len() - 64 {
                        y[base + 64] = 1.0;
                        y[base + 65] = 2.0;
                        y[base] = 3.0;
                    }
                }
            },
            [64, 1, 1],
        );
        let (proven, _) = split(&k);
        assert_eq!(
            proven,
            ["x Read", "x Read", "x Read", "y Write", "y Write"].map(String::from)
        );
    }
}
