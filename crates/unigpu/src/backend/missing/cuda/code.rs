//! Kernel code of a build without cuda: CUDA modules and functions cannot
//! be loaded, so there are none (its own empty types, not the backend's
//! `Missing`, so that `backend/code.rs` reaches no other file here).
//!
//! Each type is a struct around a private empty type: code outside that
//! holds one by value (`impl From<Program>` in `backend/code.rs`) is then
//! not flagged as unreachable, while none can be made.

use crate::error::Result;
use crate::kernel::options::Origin;

#[derive(Debug, Clone)]
enum Never {}

/// A compiled CUDA program: there are none.
#[derive(Debug)]
pub(crate) struct Program(Never);

/// A loaded CUDA module: there are none.
#[derive(Debug)]
pub(crate) struct Module(Never);

/// A loaded CUDA function: there are none.
#[derive(Debug, Clone)]
pub(crate) struct Function(Never);

pub(crate) fn parts(p: Program) -> (Origin, String, Module) {
    match p.0 {}
}

pub(crate) fn function(module: &Module, _: &str) -> Result<Option<Function>> {
    match module.0 {}
}

pub(crate) fn param_sizes(f: &Function) -> Result<Option<Vec<usize>>> {
    match f.0 {}
}
