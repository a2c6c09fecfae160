//! The contract every backend implements (see `backend/mod.rs`).

use std::fmt::Debug;

use super::Backend;
use crate::{DeviceInfo, MemoryInfo, Result};

/// One backend: its handle types and every operation on them. Static
/// dispatch: `dispatch.rs` holds one enum variant per backend.
///
/// (Being built up: devices, streams and events so far; buffers, ops and
/// launch follow the plan in docs/design/backend-contract.md.)
pub(crate) trait Api: Sized + 'static {
    /// Which backend this is.
    const KIND: Backend;

    /// An opened device, with whatever the backend keeps per device.
    type Device: Debug + Send + Sync;

    /// How many devices the backend can use here, or why none.
    fn device_count() -> Result<usize>;
    fn open(ordinal: usize) -> Result<Self::Device>;
    fn info(device: &Self::Device) -> Result<DeviceInfo>;
    fn memory_info(device: &Self::Device) -> Result<MemoryInfo>;
    fn same_device(a: &Self::Device, b: &Self::Device) -> bool;
    /// Waits for the work of every stream of the device; returns the first
    /// error.
    fn synchronize(device: &Self::Device) -> Result<()>;
    /// The stream a new context's array operations use.
    fn default_stream(device: &Self::Device) -> Result<Self::Stream>;
    fn new_stream(device: &Self::Device) -> Result<Self::Stream>;

    /// An ordered queue of work. Cheap to clone.
    type Stream: Debug + Clone + Send + Sync;
    /// A marker in a stream's work.
    type Event: Debug + Send + Sync;

    /// Waits for the work enqueued so far; returns the first error any of
    /// it raised (once).
    fn stream_sync(stream: &Self::Stream) -> Result<()>;
    /// True when all enqueued work is done. Never blocks.
    fn stream_is_idle(stream: &Self::Stream) -> Result<bool>;
    /// Later work on `stream` waits for `event`; nothing else orders it.
    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()>;
    /// Runs `f` on the host once the work before it is done; later work
    /// waits for it. A panic in `f` is returned by the next sync.
    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()>;
    /// The native queue handle a foreign library can take (a `CUstream`
    /// for DLPack consumers), where the backend has one.
    fn native_stream(stream: &Self::Stream) -> Option<u64>;

    /// A new, unrecorded event (its query is true).
    fn new_event(stream: &Self::Stream) -> Result<Self::Event>;
    /// Captures the work enqueued on `stream` so far, replacing any earlier
    /// capture.
    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()>;
    fn event_sync(event: &Self::Event) -> Result<()>;
    fn event_query(event: &Self::Event) -> Result<bool>;
    /// Milliseconds from `start` to `end`; waits for both.
    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32>;
}
