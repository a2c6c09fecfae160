//! The CPU backend: a real backend, not a stub. Arrays live in host memory,
//! each stream is a worker thread with an ordered queue, events are fences
//! the streams signal, and buffers track their pending uses so work on
//! different streams is ordered the way CUDA orders it.
//!
//! The contract is implemented beside each handle's code: `api.rs` names
//! the handle types, `device.rs` (`DeviceApi`), `stream.rs` (`StreamApi`,
//! `GraphApi`), `event.rs` (`EventApi`), `buffer.rs` (`BufferApi`, the
//! shared `PinnedApi`), `args.rs` (`KernelApi`), `ops.rs` (`BuiltinOps`).

mod api;
mod args;
mod buffer;
mod bytes;
mod device;
mod event;
mod fence;
pub(crate) mod memory;
pub(crate) mod ops;
mod staging;
mod stream;
mod tracker;

pub(crate) use buffer::{CpuBuffer, Tracker, check_distinct, replay, submit, submit_replayable};
pub(crate) use device::CpuDevice;
pub(crate) use event::CpuEvent;
pub(crate) use stream::{CpuStream, Recorded, panic_message};

pub(crate) use api::Cpu;
pub use args::{CpuArgs, CpuKernelFn};
pub use bytes::{CpuArgKind, CpuBytes, CpuBytesMut};
