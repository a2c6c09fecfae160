//! The CPU form's grid-stride analysis: whether a kernel is an
//! independent grid-stride loop, whose iterations the CPU backend may run
//! as one pass over the index range `0..end`, in contiguous chunks, with
//! plain slices for the arrays it writes (docs/kernels.md, "Speed").
//!
//! The shape it accepts, and nothing else:
//!
//! ```text
//! let stride = num_workgroups().x * workgroup_size().x;   // uniform lets
//! let mut i = global_id().x;
//! while i < END {            // END uniform: lengths, scalars, literals
//!     ...                    // the iteration
//!     i += stride;           // the last statement, the only assignment to i
//! }
//! ```
//!
//! with, in the whole kernel: no barrier, shared array or atomic; every
//! load and store of a written array at index `i` exactly; in the
//! iteration, no `return`, no `break`/`continue` of the `while` itself, no
//! thread index but `num_workgroups()`/`workgroup_size()`. Then in a 1-D
//! launch of `S = num_workgroups().x * workgroup_size().x` invocations,
//! invocation `g` runs the iteration for `i = g, g + S, ...` below END:
//! every index of `0..END` once (when `END + S` fits 32 bits, so `i`
//! never wraps). An iteration writes only element `i` of the written
//! arrays and reads them only there, and the other arrays are never
//! written, so no iteration sees another's effects: any order of them,
//! the CPU's chunks included, gives the launch's results. (Soundness does
//! not rest on this: the CPU form hands out the chunks with safe
//! `split_at_mut`; a wrong answer here would give wrong results, never
//! undefined behaviour.)

use std::collections::{HashMap, HashSet};

use crate::ir::*;

/// An accepted kernel, for the CPU emitter.
pub struct GridStride<'k> {
    /// The uniform `let`s before the loop (emitted once per launch).
    pub lets: Vec<&'k Stmt>,
    /// The loop variable `i` (its emitted name).
    pub var: String,
    /// The loop's bound (uniform).
    pub end: &'k Expr,
    /// The iteration: the loop's body without its last `i += stride`.
    pub body: &'k [Stmt],
    /// The arrays indexed only at `i`: every written one the kernel
    /// accesses, and the read-only ones indexed nowhere else.
    pub sliced: Vec<usize>,
}

/// The kernel as an independent grid-stride loop, or `None`.
pub fn analyse(k: &Kernel) -> Option<GridStride<'_>> {
    if k.phased() || !k.atomics().is_empty() {
        return None;
    }
    let (last, prefix) = k.body.split_last()?;
    let Stmt::While { cond, body } = last else {
        return None;
    };
    // The prefix: uniform immutable lets and the one `let mut i = global_id().x`.
    let mut uniform: HashSet<&str> = HashSet::new();
    let mut strides: HashSet<&str> = HashSet::new();
    let mut var = None;
    let mut lets = Vec::new();
    for s in prefix {
        let Stmt::Let {
            name,
            mutable,
            init,
            ty,
        } = s
        else {
            return None;
        };
        if *mutable {
            if var.is_some()
                || *ty != Ty::Usize
                || !matches!(init.kind, ExprKind::Id(Builtin::Global, 0))
            {
                return None;
            }
            var = Some(name.as_str());
            continue;
        }
        if !is_uniform(init, &uniform) {
            return None;
        }
        if is_stride(init, &strides) {
            strides.insert(name);
        }
        uniform.insert(name);
        lets.push(s);
    }
    let var = var?;
    // `i < END` or `END > i`.
    let end = match &cond.kind {
        ExprKind::Bin(BinOp::Lt, l, r) if is_var(l, var) => &**r,
        ExprKind::Bin(BinOp::Gt, l, r) if is_var(r, var) => &**l,
        _ => return None,
    };
    if !is_uniform(end, &uniform) {
        return None;
    }
    // The last statement `i = i + stride` (or `stride + i`).
    let (step, iteration) = body.split_last()?;
    let Stmt::Assign { name, value } = step else {
        return None;
    };
    if name != var {
        return None;
    }
    match &value.kind {
        ExprKind::Bin(BinOp::Add, l, r)
            if (is_var(l, var) && is_stride(r, &strides))
                || (is_var(r, var) && is_stride(l, &strides)) => {}
        _ => return None,
    }
    if !iteration_ok(iteration, var, 0) {
        return None;
    }
    // Every access of a written array at `i`; read-only arrays at `i`
    // only are sliced too.
    let mut at_i: HashMap<usize, bool> = HashMap::new();
    let mut note = |a: usize, index: &Expr| {
        let ok = is_var(index, var);
        *at_i.entry(a).or_insert(true) &= ok;
    };
    visit_exprs(&k.body, &mut |e| {
        if let ExprKind::Load(a, index, _) = &e.kind {
            note(*a, index);
        }
    });
    stores(&k.body, &mut |a, index| note(a, index));
    let mut sliced = Vec::new();
    for (a, p) in k.params.iter().enumerate() {
        let ParamKind::Array { elem, writable } = p.kind else {
            continue;
        };
        match at_i.get(&a) {
            // Half-precision arrays stay on the views (their conversions).
            Some(true) if !elem.is_half() => sliced.push(a),
            Some(_) if writable => return None,
            _ => {}
        }
    }
    let writes = sliced
        .iter()
        .any(|&a| matches!(k.params[a].kind, ParamKind::Array { writable: true, .. }));
    if !writes {
        return None;
    }
    Some(GridStride {
        lets,
        var: var.to_string(),
        end,
        body: iteration,
        sliced,
    })
}

fn is_var(e: &Expr, name: &str) -> bool {
    matches!(&e.kind, ExprKind::Var(n) if n == name)
}

/// `num_workgroups().x * workgroup_size().x` (either order), or a `let`
/// of it.
fn is_stride(e: &Expr, strides: &HashSet<&str>) -> bool {
    match &e.kind {
        ExprKind::Var(n) => strides.contains(n.as_str()),
        ExprKind::Bin(BinOp::Mul, l, r) => matches!(
            (&l.kind, &r.kind),
            (
                ExprKind::Id(Builtin::Groups, 0),
                ExprKind::Id(Builtin::Size, 0)
            ) | (
                ExprKind::Id(Builtin::Size, 0),
                ExprKind::Id(Builtin::Groups, 0)
            )
        ),
        _ => false,
    }
}

/// The same for every invocation and every iteration, with no effect and
/// no memory read: literals, scalars, lengths, the grid's sizes, uniform
/// lets, and arithmetic on them.
fn is_uniform(e: &Expr, uniform: &HashSet<&str>) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Scalar(_) | ExprKind::Len(_) => true,
        ExprKind::Id(b, _) => matches!(b, Builtin::Groups | Builtin::Size),
        ExprKind::Var(n) => uniform.contains(n.as_str()),
        ExprKind::Bin(_, l, r) => is_uniform(l, uniform) && is_uniform(r, uniform),
        ExprKind::Neg(v) | ExprKind::Not(v) | ExprKind::Cast(v) => is_uniform(v, uniform),
        ExprKind::Math(_, a) => a.iter().all(|x| is_uniform(x, uniform)),
        ExprKind::Load(..)
        | ExprKind::SharedLoad(..)
        | ExprKind::Atomic { .. }
        | ExprKind::Call(..) => false,
    }
}

/// The iteration: no `return`, no assignment to `i`, no `break` or
/// `continue` of the grid-stride loop (`depth` counts the loops inside
/// it), no thread index but the grid's sizes.
fn iteration_ok(stmts: &[Stmt], var: &str, depth: usize) -> bool {
    let mut ids_ok = true;
    visit_exprs(stmts, &mut |e| {
        if let ExprKind::Id(b, _) = e.kind {
            ids_ok &= matches!(b, Builtin::Groups | Builtin::Size);
        }
    });
    ids_ok
        && stmts.iter().all(|s| match s {
            Stmt::Assign { name, .. } => name != var,
            Stmt::Return(_) | Stmt::ReturnValue(_) | Stmt::Barrier(_) => false,
            Stmt::Break(_) | Stmt::Continue(_) => depth > 0,
            Stmt::Block(b) => iteration_ok(b, var, depth),
            Stmt::If { then, els, .. } => {
                iteration_ok(then, var, depth) && iteration_ok(els, var, depth)
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::Loop(body) => {
                iteration_ok(body, var, depth + 1)
            }
            Stmt::Let { .. } | Stmt::Store { .. } | Stmt::SharedStore { .. } | Stmt::Eval(_) => {
                true
            }
        })
}

/// Calls `f` with the array and index of every store, at any depth.
fn stores(stmts: &[Stmt], f: &mut impl FnMut(usize, &Expr)) {
    for s in stmts {
        match s {
            Stmt::Store { array, index, .. } => f(*array, index),
            Stmt::Block(b) | Stmt::Loop(b) => stores(b, f),
            Stmt::For { body, .. } | Stmt::While { body, .. } => stores(body, f),
            Stmt::If { then, els, .. } => {
                stores(then, f);
                stores(els, f);
            }
            _ => {}
        }
    }
}
