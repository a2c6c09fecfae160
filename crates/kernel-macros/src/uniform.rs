//! The uniformity check: every invocation of a workgroup must reach each
//! `barrier()` (CUDA's `__syncthreads()` and WGSL's `workgroupBarrier()`
//! hang or are undefined otherwise, and the CPU form's phases assume it).
//! A value is thread-dependent when it comes from `global_id()` or
//! `local_id()`, directly or through a variable assigned from one (or
//! assigned under a branch on one); a barrier under a branch or loop on
//! such a value, or after an exit (`return`, `break`, `continue`) taken on
//! one, is a compile error with the span of the barrier or the exit.
//!
//! Subgroup operations (`subgroup_add(v)`, ...) follow the same rule one
//! level down: every invocation of a *subgroup* must reach each (CUDA's
//! `__shfl_xor_sync` over the full warp and WGSL's subgroup built-ins need
//! them all). There a value is lane-dependent when it comes from
//! `global_id()`, `local_id()` or `subgroup_invocation_id()`; `subgroup_id()`
//! and a subgroup operation's result are the same across a subgroup, so a
//! loop over rows by `subgroup_id()` may hold subgroup operations (but not
//! a barrier). Each is the whole value of a `let` or an assignment
//! (lower.rs), so a statement holds at most one and they come in source
//! order, the order of their spans.

use std::collections::HashSet;

use proc_macro2::Span;

use crate::ir::*;

type Result<T> = std::result::Result<T, syn::Error>;

/// Which invocations must reach a collective together.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// All of a workgroup: `barrier()`.
    Workgroup,
    /// All of a subgroup: the subgroup operations.
    Subgroup,
}

impl Level {
    /// The values that may differ between the invocations that must
    /// reach this level's collectives together, and the words for them.
    fn varies(self) -> &'static str {
        match self {
            Level::Workgroup => {
                "depends on the thread index (global_id()/local_id(), or a variable computed from one)"
            }
            Level::Subgroup => {
                "differs within a subgroup (global_id()/local_id()/subgroup_invocation_id(), or a variable computed from one)"
            }
        }
    }

    fn collective(self) -> &'static str {
        match self {
            Level::Workgroup => "a `barrier()`",
            Level::Subgroup => "a subgroup operation",
        }
    }

    fn why(self) -> &'static str {
        match self {
            Level::Workgroup => "every invocation of a workgroup must reach each `barrier()`",
            Level::Subgroup => {
                "every invocation of a subgroup must reach each subgroup operation together"
            }
        }
    }
}

/// Checks `body`, the kernel's statements; `subgroup_calls` are its
/// subgroup operations' spans in source order.
pub fn check(body: &[Stmt], subgroup_calls: &[Span]) -> Result<()> {
    for level in [Level::Workgroup, Level::Subgroup] {
        if !body.iter().any(|s| holds(s, level)) {
            continue;
        }
        // Dependent variables, to a fixed point: a loop may assign a
        // variable after the branch that reads it.
        let mut dep = HashSet::new();
        loop {
            let before = dep.len();
            taint(body, false, &mut dep, level);
            if dep.len() == before {
                break;
            }
        }
        let cx = Walk { dep, level };
        let mut ret = None;
        let mut calls = subgroup_calls.iter().copied();
        cx.walk(body, false, &mut ret, &mut calls)?;
    }
    Ok(())
}

/// Whether `s` is an assignment whose whole value is a subgroup operation.
fn is_subgroup_op(s: &Stmt) -> bool {
    let v = match s {
        Stmt::Let { init: v, .. }
        | Stmt::Assign { value: v, .. }
        | Stmt::Store { value: v, .. }
        | Stmt::SharedStore { value: v, .. } => v,
        _ => return false,
    };
    matches!(&v.kind, ExprKind::Math(f, _) if f.is_subgroup())
}

/// Whether `s` holds one of `level`'s collectives, at any depth.
fn holds(s: &Stmt, level: Level) -> bool {
    match s {
        Stmt::Barrier(_) => level == Level::Workgroup,
        Stmt::Block(b) | Stmt::Loop(b) => b.iter().any(|s| holds(s, level)),
        Stmt::If { then, els, .. } => {
            then.iter().any(|s| holds(s, level)) || els.iter().any(|s| holds(s, level))
        }
        Stmt::For { body, .. } | Stmt::While { body, .. } => body.iter().any(|s| holds(s, level)),
        s => level == Level::Subgroup && is_subgroup_op(s),
    }
}

/// Whether `e`'s value may differ between the invocations of a workgroup
/// (`Level::Workgroup`) or of a subgroup (`Level::Subgroup`).
fn depends(e: &Expr, dep: &HashSet<String>, level: Level) -> bool {
    let d = |x: &Expr| depends(x, dep, level);
    match &e.kind {
        ExprKind::Id(b, _) => match b {
            Builtin::Global | Builtin::Local | Builtin::SubgroupLane => true,
            Builtin::SubgroupId => level == Level::Workgroup,
            Builtin::Group | Builtin::Size | Builtin::Groups | Builtin::SubgroupSize => false,
        },
        // One result for the subgroup; each subgroup has its own.
        ExprKind::Math(f, _) if f.is_subgroup() => level == Level::Workgroup,
        ExprKind::Var(n) => dep.contains(n),
        ExprKind::Lit(_) | ExprKind::Scalar(_) | ExprKind::Len(_) => false,
        ExprKind::Load(_, i, _) | ExprKind::SharedLoad(_, i, _) => d(i),
        ExprKind::Bin(_, l, r) => d(l) || d(r),
        ExprKind::Neg(v) | ExprKind::Not(v) | ExprKind::Cast(v) => d(v),
        // Device functions read no memory and no thread index.
        ExprKind::Math(_, a) | ExprKind::Call(_, a) => a.iter().any(d),
        // The old value each invocation gets differs.
        ExprKind::Atomic { .. } => true,
    }
}

fn taint(stmts: &[Stmt], ctl: bool, dep: &mut HashSet<String>, level: Level) {
    for s in stmts {
        match s {
            Stmt::Let { name, init: v, .. } | Stmt::Assign { name, value: v }
                if ctl || depends(v, dep, level) =>
            {
                dep.insert(name.clone());
            }
            Stmt::If { cond, then, els } => {
                let c = ctl || depends(cond, dep, level);
                taint(then, c, dep, level);
                taint(els, c, dep, level);
            }
            Stmt::For {
                name,
                start,
                end,
                body,
                ..
            } => {
                let c = ctl
                    || depends(start, dep, level)
                    || depends(end, dep, level)
                    || exit(body, true, dep, level).is_some();
                if c {
                    dep.insert(name.clone());
                }
                taint(body, c, dep, level);
            }
            Stmt::While { cond, body } => {
                let c = ctl || depends(cond, dep, level) || exit(body, true, dep, level).is_some();
                taint(body, c, dep, level);
            }
            Stmt::Loop(body) => {
                let c = ctl || exit(body, true, dep, level).is_some();
                taint(body, c, dep, level);
            }
            Stmt::Block(b) => taint(b, ctl, dep, level),
            _ => {}
        }
    }
}

/// The first exit from the loop whose body is `stmts` (or, below
/// `own == false`, from an enclosing loop: only `return`) taken under a
/// dependent condition.
fn exit(stmts: &[Stmt], own: bool, dep: &HashSet<String>, level: Level) -> Option<Span> {
    let d = |e: &Expr| depends(e, dep, level);
    fn go(stmts: &[Stmt], own: bool, div: bool, d: &dyn Fn(&Expr) -> bool) -> Option<Span> {
        stmts.iter().find_map(|s| match s {
            Stmt::Break(sp) | Stmt::Continue(sp) if own && div => Some(*sp),
            Stmt::Return(sp) if div => Some(*sp),
            Stmt::If { cond, then, els } => {
                let dv = div || d(cond);
                go(then, own, dv, d).or_else(|| go(els, own, dv, d))
            }
            Stmt::Block(b) => go(b, own, div, d),
            Stmt::For {
                start, end, body, ..
            } => go(body, false, div || d(start) || d(end), d),
            Stmt::While { cond, body } => go(body, false, div || d(cond), d),
            Stmt::Loop(body) => go(body, false, div, d),
            _ => None,
        })
    }
    go(stmts, own, false, &d)
}

type Spans<'a> = std::iter::Copied<std::slice::Iter<'a, Span>>;

/// One level's walk over the body with its dependent variables.
struct Walk {
    dep: HashSet<String>,
    level: Level,
}

impl Walk {
    fn depends(&self, e: &Expr) -> bool {
        depends(e, &self.dep, self.level)
    }

    /// The collective `s` is at this level, with its span.
    fn collective(&self, s: &Stmt, calls: &mut Spans) -> Option<Span> {
        match (self.level, s) {
            (Level::Workgroup, Stmt::Barrier(sp)) => Some(*sp),
            // Every subgroup operation takes its span, at either level,
            // so the spans stay in step with the statements.
            (level, s) if is_subgroup_op(s) => {
                let sp = calls.next().unwrap_or_else(Span::call_site);
                (level == Level::Subgroup).then_some(sp)
            }
            _ => None,
        }
    }

    fn walk(
        &self,
        stmts: &[Stmt],
        div: bool,
        ret: &mut Option<Span>,
        calls: &mut Spans,
    ) -> Result<()> {
        let (varies, what, why) = (
            self.level.varies(),
            self.level.collective(),
            self.level.why(),
        );
        for s in stmts {
            if let Some(sp) = self.collective(s, calls) {
                if let Some(r) = ret {
                    return Err(syn::Error::new(
                        *r,
                        format!(
                            "this `return` is taken on a condition that {varies}, and {what} follows it: {why}"
                        ),
                    ));
                }
                if div {
                    let named = match s {
                        Stmt::Barrier(_) => "`barrier()`",
                        _ => "a subgroup operation",
                    };
                    return Err(syn::Error::new(
                        sp,
                        format!("{named} inside a branch or loop whose condition {varies}: {why}"),
                    ));
                }
                continue;
            }
            match s {
                Stmt::Return(sp) if div && ret.is_none() => *ret = Some(*sp),
                Stmt::If { cond, then, els } => {
                    let d = div || self.depends(cond);
                    self.walk(then, d, ret, calls)?;
                    self.walk(els, d, ret, calls)?;
                }
                Stmt::Block(b) => self.walk(b, div, ret, calls)?,
                Stmt::For {
                    start, end, body, ..
                } => {
                    let d = div || self.depends(start) || self.depends(end);
                    self.walk_loop(body, d, ret, calls)?;
                }
                Stmt::While { cond, body } => {
                    self.walk_loop(body, div || self.depends(cond), ret, calls)?
                }
                Stmt::Loop(body) => self.walk_loop(body, div, ret, calls)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn walk_loop(
        &self,
        body: &[Stmt],
        div: bool,
        ret: &mut Option<Span>,
        calls: &mut Spans,
    ) -> Result<()> {
        if !div && body.iter().any(|s| holds(s, self.level)) {
            if let Some(sp) = exit(body, true, &self.dep, self.level) {
                let (varies, what, why) = (
                    self.level.varies(),
                    self.level.collective(),
                    self.level.why(),
                );
                return Err(syn::Error::new(
                    sp,
                    format!(
                        "this exit from a loop that holds {what} is taken on a condition that {varies}: {why}"
                    ),
                ));
            }
        }
        self.walk(body, div, ret, calls)
    }
}
