//! The backends, one folder each: `cpu/`, `cuda/` and (feature `torch`)
//! `torch/`. Each holds its own buffers, streams, events and ops.

mod contract;
pub(crate) mod cpu;
pub(crate) mod cuda;
mod dispatch;
mod driver;
mod kind;
#[cfg(feature = "torch")]
pub(crate) mod torch;

pub(crate) use contract::Api;
pub(crate) use dispatch::{DeviceImpl, EventImpl, Storage, StreamImpl};
pub use kind::{Backend, BackendAttempt, Outcome};
