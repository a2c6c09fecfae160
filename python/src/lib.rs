//! `unigpu._unigpu`: the Python extension behind the `unigpu` package.
//!
//! PyO3 directly over the Rust facade (not over the C ABI): arrays, streams
//! and events are the facade's own handles inside Python objects, and
//! `unigpu::Error` becomes a Python exception with the same message.
//!
//! # Rules of this crate
//! - No `unsafe` outside `dlpack` (`deny`; DLPack capsules are raw CPython
//!   objects, so that module allows it, each block with a `// SAFETY:`
//!   comment).
//! - Every call that blocks or does real work runs with the GIL released
//!   (`Python::detach`): the CPU backend runs stream work on worker threads,
//!   and a kernel's Python CPU implementation needs the GIL there.
//! - Array locks ([`array::Shared`]) are taken only with the GIL released,
//!   several at once by the bindings' one rule (`unigpu::binding`, shared
//!   with the C API): each once, in address order, so two threads cannot
//!   wait on each other; an output that is also an input reads a copy.
//! - User input never panics: bad values raise `TypeError`/`ValueError`,
//!   facade errors raise the `unigpu.UnigpuError` subclass of their variant.

#![deny(unsafe_code)]

mod array;
mod comm;
mod context;
mod dlpack;
mod dtype;
mod errors;
mod kernel;
mod ops;
mod pending;
mod pinned;
mod random;
mod stream;
mod unified;

use pyo3::prelude::*;

/// The `unigpu._unigpu` module.
#[pymodule]
fn _unigpu(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<context::PyContext>()?;
    m.add_class::<context::PyDeviceInfo>()?;
    m.add_class::<array::PyArray>()?;
    m.add_class::<stream::PyStream>()?;
    m.add_class::<pinned::PyPinned>()?;
    m.add_class::<random::PyGenerator>()?;
    m.add_class::<stream::PyEvent>()?;
    m.add_class::<stream::PyGraph>()?;
    m.add_class::<kernel::PyModule_>()?;
    m.add_class::<kernel::PyKernel>()?;
    m.add_class::<ops::PyOps>()?;
    m.add_class::<comm::PyCommunicator>()?;
    m.add_function(wrap_pyfunction!(context::devices, m)?)?;
    m.add_function(wrap_pyfunction!(context::backends, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::blocks_for, m)?)?;
    m.add_function(wrap_pyfunction!(pending::drain, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    ops::register(m)?;
    Ok(())
}
