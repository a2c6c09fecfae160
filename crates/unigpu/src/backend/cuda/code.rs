//! This backend's kernel code, as `backend/code.rs` holds it (the torch
//! backend runs the same functions).

pub(crate) use crate::backend::nvrtc::{CudaProgram as Program, LoadedModule as Module};
pub(crate) use unigpu_cuda_safe::CudaFunctionHandle as Function;

use crate::error::Result;
use crate::kernel::options::Origin;

/// A compiled program's origin, compiler log and module.
pub(crate) fn parts(p: Program) -> (Origin, String, Module) {
    (p.origin, p.log, p.module)
}

/// The kernel called `name` in `module`, or `None` when it has none.
pub(crate) fn function(module: &Module, name: &str) -> Result<Option<Function>> {
    module.function(name)
}

/// The size of each of `f`'s parameters, where the driver can list
/// them (`None` where it cannot).
pub(crate) fn param_sizes(f: &Function) -> Result<Option<Vec<usize>>> {
    match f.param_layout() {
        Ok(layout) => Ok(Some(layout.into_iter().map(|(_, size)| size).collect())),
        Err(unigpu_cuda_safe::SafeError::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
