//! The backends, one folder each: `cpu/`, `cuda/` and (feature `torch`)
//! `torch/`. Each holds its own buffers, streams, events and ops.

pub(crate) mod cpu;
pub(crate) mod cuda;
mod kind;
#[cfg(feature = "torch")]
pub(crate) mod torch;

pub use kind::{Backend, BackendAttempt, Outcome};
