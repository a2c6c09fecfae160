//! The backends, one folder each: `cpu/`, `cuda/` and (feature `torch`)
//! `torch/`. Each holds its own buffers, streams, events and ops.

mod code;
mod contract;
pub(crate) mod cpu;
pub(crate) mod cuda;
mod dispatch;
mod driver;
#[cfg(feature = "torch")]
mod interop;
mod kind;
#[cfg(feature = "torch")]
pub(crate) mod torch;
#[cfg(not(feature = "torch"))]
#[path = "torch_missing/mod.rs"]
pub(crate) mod torch;

pub(crate) use code::{KernelCode, KernelRef, Lookup, ModuleCode};
pub(crate) use contract::Api;
pub use cpu::{CpuArgs, CpuKernelFn};
pub(crate) use dispatch::{ArgImpl, DeviceImpl, EventImpl, Storage, StreamImpl};
pub use driver::cache::{CACHE_DIR_ENV, disk_dir};
pub use kind::{Backend, BackendAttempt, Outcome};
