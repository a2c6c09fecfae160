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
//! `chunks_mut`; a wrong answer here would give wrong results, never
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
    if !iteration_ok(iteration, var, 0, false) {
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
            // f16/bf16 arrays stay on the views (their conversions); u8
            // ones are sliced, widened and narrowed where they are used.
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
pub(crate) fn is_uniform(e: &Expr, uniform: &HashSet<&str>) -> bool {
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
fn iteration_ok(stmts: &[Stmt], var: &str, depth: usize, ids: bool) -> bool {
    let mut ids_ok = true;
    visit_exprs(stmts, &mut |e| {
        if let ExprKind::Id(b, _) = e.kind {
            ids_ok &= ids || matches!(b, Builtin::Groups | Builtin::Size);
        }
    });
    ids_ok
        && stmts.iter().all(|s| match s {
            Stmt::Assign { name, .. } => name != var,
            Stmt::Return(_) | Stmt::ReturnValue(_) | Stmt::Barrier(_) => false,
            Stmt::Break(_) | Stmt::Continue(_) => depth > 0,
            Stmt::Block(b) => iteration_ok(b, var, depth, ids),
            Stmt::If { then, els, .. } => {
                iteration_ok(then, var, depth, ids) && iteration_ok(els, var, depth, ids)
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::Loop(body) => {
                iteration_ok(body, var, depth + 1, ids)
            }
            Stmt::Let { .. } | Stmt::Store { .. } | Stmt::SharedStore { .. } | Stmt::Eval(_) => {
                true
            }
        })
}

/// Calls `f` with the array and index of every store, at any depth.
pub fn stores(stmts: &[Stmt], f: &mut impl FnMut(usize, &Expr)) {
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

/// A grid-stride loop inside one phase of a phased kernel (one with
/// barriers or shared arrays), which the CPU form may run row by row: for
/// `k = 0, 1, ...`, the iteration of every invocation of the workgroup
/// whose `i = global_id().x + k * S` is below END, invocation by
/// invocation. Each invocation still runs its iterations in order, and
/// invocations between barriers may interleave any way (on a GPU they do),
/// so this lockstep is one schedule the kernel already allows; unlike the
/// grid-stride fast path it needs no independence of iterations. What it
/// buys: `i` is `first + li` in a row, so an accumulator held per
/// invocation (`v += x[i]`) becomes a loop over contiguous elements.
pub struct PhaseLoop<'k> {
    /// The `while`'s position in the phase's statements.
    pub at: usize,
    /// The loop variable `i`.
    pub var: String,
    /// The loop's bound (uniform, naming no variable).
    pub end: &'k Expr,
    /// The iteration: the loop's body without its last `i += stride`.
    pub body: &'k [Stmt],
    /// The read-only arrays the iteration loads at `i`: a row reads them
    /// as a plain slice where they hold END elements.
    pub sliced: Vec<usize>,
}

/// The first grid-stride loop of a phase's statements `stmts` that the
/// CPU form may run row by row, or `None`. Its `i` is declared in the
/// phase by `let mut i = global_id().x` and named nowhere but there and
/// in the loop, whose last statement is `i += stride` (`stride` a `let`
/// of `num_workgroups().x * workgroup_size().x` in the phase, or that
/// product); the iteration has no `return` and no `break`/`continue` of
/// the loop; the kernel has no `return` (no invocation ends early) and a
/// 1-D workgroup size.
pub fn phase_loop<'k>(k: &'k Kernel, stmts: &[&'k Stmt]) -> Option<PhaseLoop<'k>> {
    if k.workgroup[1] != 1 || k.workgroup[2] != 1 || has_return(&k.body) {
        return None;
    }
    let mut strides: HashSet<&str> = HashSet::new();
    let mut vars: HashSet<&str> = HashSet::new();
    for (at, s) in stmts.iter().enumerate() {
        match s {
            Stmt::Let {
                name,
                mutable,
                init,
                ty,
            } => {
                if !*mutable && is_stride(init, &strides) {
                    strides.insert(name);
                }
                if *mutable
                    && *ty == Ty::Usize
                    && matches!(init.kind, ExprKind::Id(Builtin::Global, 0))
                {
                    vars.insert(name);
                }
            }
            Stmt::While { cond, body } => {
                let Some(p) = row_loop(k, cond, body, &vars, &strides) else {
                    continue;
                };
                // `i` named only by its `let` and this loop.
                let (mut outside, mut inside) = (0usize, 0usize);
                count(&k.body, &p.var, &mut outside);
                count(std::slice::from_ref(*s), &p.var, &mut inside);
                if outside != inside + 1 {
                    continue;
                }
                return Some(PhaseLoop { at, ..p });
            }
            _ => {}
        }
    }
    None
}

fn row_loop<'k>(
    k: &'k Kernel,
    cond: &'k Expr,
    body: &'k [Stmt],
    vars: &HashSet<&str>,
    strides: &HashSet<&str>,
) -> Option<PhaseLoop<'k>> {
    let (var, end) = match &cond.kind {
        ExprKind::Bin(BinOp::Lt, l, r) => (l, &**r),
        _ => return None,
    };
    let ExprKind::Var(var) = &var.kind else {
        return None;
    };
    if !vars.contains(var.as_str()) || !is_uniform(end, &HashSet::new()) {
        return None;
    }
    let (step, iteration) = body.split_last()?;
    let Stmt::Assign { name, value } = step else {
        return None;
    };
    if name != var {
        return None;
    }
    match &value.kind {
        ExprKind::Bin(BinOp::Add, l, r)
            if (is_var(l, var) && is_stride(r, strides))
                || (is_var(r, var) && is_stride(l, strides)) => {}
        _ => return None,
    }
    if !iteration_ok(iteration, var, 0, true) {
        return None;
    }
    let mut sliced = Vec::new();
    visit_exprs(iteration, &mut |e| {
        if let ExprKind::Load(a, index, _) = &e.kind {
            let ro = matches!(k.params[*a].kind, ParamKind::Array { writable: false, elem } if !elem.is_half());
            if ro && is_var(index, var) && !sliced.contains(a) {
                sliced.push(*a);
            }
        }
    });
    Some(PhaseLoop {
        at: 0,
        var: var.clone(),
        end,
        body: iteration,
        sliced,
    })
}

/// How many times `name` is named (read or assigned) in `stmts`.
fn count(stmts: &[Stmt], name: &str, n: &mut usize) {
    visit_exprs(stmts, &mut |e| {
        if is_var(e, name) {
            *n += 1;
        }
    });
    each_definition(stmts, &mut |a, _| {
        if a == name {
            *n += 1;
        }
    });
}

/// Whether a `return` is in `stmts`, at any depth.
pub fn has_return(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Return(_) => true,
        Stmt::Block(b) | Stmt::Loop(b) => has_return(b),
        Stmt::For { body, .. } | Stmt::While { body, .. } => has_return(body),
        Stmt::If { then, els, .. } => has_return(then) || has_return(els),
        _ => false,
    })
}
