//! The uniformity check: every invocation of a workgroup must reach each
//! `barrier()` (CUDA's `__syncthreads()` and WGSL's `workgroupBarrier()`
//! hang or are undefined otherwise, and the CPU form's phases assume it).
//! A value is thread-dependent when it comes from `global_id()` or
//! `local_id()`, directly or through a variable assigned from one (or
//! assigned under a branch on one); a barrier under a branch or loop on
//! such a value, or after an exit (`return`, `break`, `continue`) taken on
//! one, is a compile error with the span of the barrier or the exit.
//!
//! Subgroup operations (`subgroup_add(v)`, ...) follow the same rule:
//! CUDA's `__shfl_xor_sync` over the full warp and WGSL's subgroup
//! built-ins need every invocation of the subgroup, and a rule for the
//! whole workgroup is the one the language can check. Each is the whole
//! value of a `let` or an assignment (lower.rs), so a statement holds at
//! most one and they come in source order, the order of their spans.

use std::collections::HashSet;

use proc_macro2::Span;

use crate::ir::*;

type Result<T> = std::result::Result<T, syn::Error>;

/// Checks `body`, the kernel's statements; `subgroup_calls` are its
/// subgroup operations' spans in source order.
pub fn check(body: &[Stmt], subgroup_calls: &[Span]) -> Result<()> {
    if !body.iter().any(collective) {
        return Ok(());
    }
    // Thread-dependent variables, to a fixed point: a loop may assign a
    // variable after the branch that reads it.
    let mut dep = HashSet::new();
    loop {
        let before = dep.len();
        taint(body, false, &mut dep);
        if dep.len() == before {
            break;
        }
    }
    let mut ret = None;
    let mut calls = subgroup_calls.iter().copied();
    walk(body, false, &dep, &mut ret, &mut calls)
}

/// The subgroup operation that is `s`'s value, if it is one.
fn subgroup_value(s: &Stmt) -> Option<Math> {
    let v = match s {
        Stmt::Let { init: v, .. }
        | Stmt::Assign { value: v, .. }
        | Stmt::Store { value: v, .. }
        | Stmt::SharedStore { value: v, .. } => v,
        _ => return None,
    };
    match &v.kind {
        ExprKind::Math(f, _) if f.is_subgroup() => Some(*f),
        _ => None,
    }
}

/// Whether `s` holds a `barrier()` or a subgroup operation, at any depth.
fn collective(s: &Stmt) -> bool {
    match s {
        Stmt::Barrier(_) => true,
        Stmt::Block(b) | Stmt::Loop(b) => b.iter().any(collective),
        Stmt::If { then, els, .. } => then.iter().any(collective) || els.iter().any(collective),
        Stmt::For { body, .. } | Stmt::While { body, .. } => body.iter().any(collective),
        s => subgroup_value(s).is_some(),
    }
}

/// Whether `e`'s value may differ between the invocations of a workgroup.
pub fn depends(e: &Expr, dep: &HashSet<String>) -> bool {
    match &e.kind {
        ExprKind::Id(b, _) => matches!(
            b,
            Builtin::Global | Builtin::Local | Builtin::SubgroupId | Builtin::SubgroupLane
        ),
        // Each subgroup has its own result.
        ExprKind::Math(f, _) if f.is_subgroup() => true,
        ExprKind::Var(n) => dep.contains(n),
        ExprKind::Lit(_) | ExprKind::Scalar(_) | ExprKind::Len(_) => false,
        ExprKind::Load(_, i, _) | ExprKind::SharedLoad(_, i, _) => depends(i, dep),
        ExprKind::Bin(_, l, r) => depends(l, dep) || depends(r, dep),
        ExprKind::Neg(v) | ExprKind::Not(v) | ExprKind::Cast(v) => depends(v, dep),
        // Device functions read no memory and no thread index.
        ExprKind::Math(_, a) | ExprKind::Call(_, a) => a.iter().any(|x| depends(x, dep)),
        // The old value each invocation gets differs.
        ExprKind::Atomic { .. } => true,
    }
}

fn taint(stmts: &[Stmt], ctl: bool, dep: &mut HashSet<String>) {
    for s in stmts {
        match s {
            Stmt::Let { name, init: v, .. } | Stmt::Assign { name, value: v }
                if ctl || depends(v, dep) =>
            {
                dep.insert(name.clone());
            }
            Stmt::If { cond, then, els } => {
                let c = ctl || depends(cond, dep);
                taint(then, c, dep);
                taint(els, c, dep);
            }
            Stmt::For {
                name,
                start,
                end,
                body,
                ..
            } => {
                let c = ctl
                    || depends(start, dep)
                    || depends(end, dep)
                    || exit(body, true, dep).is_some();
                if c {
                    dep.insert(name.clone());
                }
                taint(body, c, dep);
            }
            Stmt::While { cond, body } => {
                let c = ctl || depends(cond, dep) || exit(body, true, dep).is_some();
                taint(body, c, dep);
            }
            Stmt::Loop(body) => {
                let c = ctl || exit(body, true, dep).is_some();
                taint(body, c, dep);
            }
            Stmt::Block(b) => taint(b, ctl, dep),
            _ => {}
        }
    }
}

/// The first exit from the loop whose body is `stmts` (or, below
/// `own == false`, from an enclosing loop: only `return`) taken under a
/// thread-dependent condition.
fn exit(stmts: &[Stmt], own: bool, dep: &HashSet<String>) -> Option<Span> {
    fn go(stmts: &[Stmt], own: bool, div: bool, dep: &HashSet<String>) -> Option<Span> {
        stmts.iter().find_map(|s| match s {
            Stmt::Break(sp) | Stmt::Continue(sp) if own && div => Some(*sp),
            Stmt::Return(sp) if div => Some(*sp),
            Stmt::If { cond, then, els } => {
                let d = div || depends(cond, dep);
                go(then, own, d, dep).or_else(|| go(els, own, d, dep))
            }
            Stmt::Block(b) => go(b, own, div, dep),
            Stmt::For {
                start, end, body, ..
            } => go(
                body,
                false,
                div || depends(start, dep) || depends(end, dep),
                dep,
            ),
            Stmt::While { cond, body } => go(body, false, div || depends(cond, dep), dep),
            Stmt::Loop(body) => go(body, false, div, dep),
            _ => None,
        })
    }
    go(stmts, own, false, dep)
}

const WHY: &str = "every invocation of a workgroup must reach each `barrier()`";
const WHY_SUBGROUP: &str = "every invocation of a workgroup must reach each subgroup operation (all of a subgroup take part)";

type Spans<'a> = std::iter::Copied<std::slice::Iter<'a, Span>>;

fn walk(
    stmts: &[Stmt],
    div: bool,
    dep: &HashSet<String>,
    ret: &mut Option<Span>,
    calls: &mut Spans,
) -> Result<()> {
    for s in stmts {
        if subgroup_value(s).is_some() {
            let sp = calls.next().unwrap_or_else(Span::call_site);
            if let Some(r) = ret {
                return Err(syn::Error::new(
                    *r,
                    format!(
                        "this `return` is taken on a condition that depends on the thread index (global_id()/local_id()), and a subgroup operation follows it: {WHY_SUBGROUP}"
                    ),
                ));
            }
            if div {
                return Err(syn::Error::new(
                    sp,
                    format!(
                        "a subgroup operation inside a branch or loop whose condition depends on the thread index (global_id()/local_id(), or a variable computed from one): {WHY_SUBGROUP}"
                    ),
                ));
            }
            continue;
        }
        match s {
            Stmt::Barrier(sp) => {
                if let Some(r) = ret {
                    return Err(syn::Error::new(
                        *r,
                        format!(
                            "this `return` is taken on a condition that depends on the thread index (global_id()/local_id()), and a `barrier()` follows it: {WHY}"
                        ),
                    ));
                }
                if div {
                    return Err(syn::Error::new(
                        *sp,
                        format!(
                            "`barrier()` inside a branch or loop whose condition depends on the thread index (global_id()/local_id(), or a variable computed from one): {WHY}"
                        ),
                    ));
                }
            }
            Stmt::Return(sp) if div && ret.is_none() => *ret = Some(*sp),
            Stmt::If { cond, then, els } => {
                let d = div || depends(cond, dep);
                walk(then, d, dep, ret, calls)?;
                walk(els, d, dep, ret, calls)?;
            }
            Stmt::Block(b) => walk(b, div, dep, ret, calls)?,
            Stmt::For {
                start, end, body, ..
            } => {
                let d = div || depends(start, dep) || depends(end, dep);
                walk_loop(body, d, dep, ret, calls)?;
            }
            Stmt::While { cond, body } => {
                walk_loop(body, div || depends(cond, dep), dep, ret, calls)?
            }
            Stmt::Loop(body) => walk_loop(body, div, dep, ret, calls)?,
            _ => {}
        }
    }
    Ok(())
}

fn walk_loop(
    body: &[Stmt],
    div: bool,
    dep: &HashSet<String>,
    ret: &mut Option<Span>,
    calls: &mut Spans,
) -> Result<()> {
    if body.iter().any(collective) && !div {
        if let Some(sp) = exit(body, true, dep) {
            return Err(syn::Error::new(
                sp,
                format!(
                    "this exit from a loop that holds a `barrier()` or a subgroup operation is taken on a condition that depends on the thread index (global_id()/local_id()): {WHY}"
                ),
            ));
        }
    }
    walk(body, div, dep, ret, calls)
}
