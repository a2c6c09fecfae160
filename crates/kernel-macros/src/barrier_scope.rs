//! Which `barrier()`s must order global memory as well as shared.
//!
//! The language's `barrier()` is CUDA's `__syncthreads()`: the shared and
//! global writes before it are seen after it. WGSL splits that into
//! `workgroupBarrier()` (shared) and `storageBarrier()` (storage buffers),
//! and the second costs a memory fence on every invocation. A barrier
//! that no global write can precede in the same invocation (no store to a
//! parameter array and no atomic on one before it, nor anywhere in a loop
//! around it, whose next round follows the last) has nothing in global
//! memory to order, so `workgroupBarrier()` alone keeps the promise there.

use crate::ir::*;

/// Per `barrier()`, in the order an emitter walks the body (statements in
/// turn, `then` before `else`): whether a global write can precede it.
pub fn storage_barriers(k: &Kernel) -> Vec<bool> {
    let mut out = Vec::new();
    walk(&k.body, false, &mut out);
    out
}

/// Walks `stmts` with `seen` (a global write may have happened); gives
/// whether one may have happened by their end.
fn walk(stmts: &[Stmt], mut seen: bool, out: &mut Vec<bool>) -> bool {
    for s in stmts {
        seen = match s {
            Stmt::Barrier(_) => {
                out.push(seen);
                seen
            }
            Stmt::Block(b) => walk(b, seen, out),
            Stmt::If { cond, then, els } => {
                let seen = seen || expr_writes(cond);
                let a = walk(then, seen, out);
                walk(els, seen, out) || a
            }
            // A loop's later rounds follow its earlier ones: a write
            // anywhere in it may precede every barrier in it.
            Stmt::For {
                start, end, body, ..
            } => {
                let seen = seen || expr_writes(start) || expr_writes(end);
                let inside = seen || writes(body);
                walk(body, inside, out);
                inside
            }
            Stmt::While { cond, body } => {
                let inside = seen || expr_writes(cond) || writes(body);
                walk(body, inside, out);
                inside
            }
            Stmt::Loop(body) => {
                let inside = seen || writes(body);
                walk(body, inside, out);
                inside
            }
            other => seen || writes(std::slice::from_ref(other)),
        };
    }
    seen
}

/// Whether a global write is anywhere in `stmts`.
fn writes(stmts: &[Stmt]) -> bool {
    let mut found = false;
    visit_exprs(stmts, &mut |e| found |= expr_writes(e));
    found || stmts.iter().any(stmt_stores)
}

fn stmt_stores(s: &Stmt) -> bool {
    match s {
        Stmt::Store { .. } => true,
        Stmt::Block(b) | Stmt::Loop(b) => b.iter().any(stmt_stores),
        Stmt::If { then, els, .. } => then.iter().chain(els).any(stmt_stores),
        Stmt::For { body, .. } | Stmt::While { body, .. } => body.iter().any(stmt_stores),
        _ => false,
    }
}

/// Whether `e` holds an atomic on a parameter array.
fn expr_writes(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        found |= matches!(
            x.kind,
            ExprKind::Atomic {
                mem: Mem::Global(_),
                ..
            }
        )
    });
    found
}
