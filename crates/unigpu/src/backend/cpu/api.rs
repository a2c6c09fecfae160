//! The CPU backend's side of the contract.

use std::sync::Arc;

use super::{CpuEvent, CpuStream};
use crate::Result;
use crate::backend::{Api, Backend};

/// The CPU backend: host memory, one worker thread per stream.
#[derive(Debug)]
pub(crate) struct Cpu;

impl Api for Cpu {
    const KIND: Backend = Backend::Cpu;
    type Stream = Arc<CpuStream>;
    type Event = Arc<CpuEvent>;

    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        stream.synchronize()
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.is_idle())
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        match event.fence() {
            Some(fence) => stream.enqueue(Box::new(move || {
                fence.wait();
                Ok(())
            })),
            // Never recorded: nothing to wait for, as on CUDA.
            None => Ok(()),
        }
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        stream.enqueue(Box::new(move || {
            f();
            Ok(())
        }))
    }

    fn native_stream(_: &Self::Stream) -> Option<u64> {
        None
    }

    fn new_event(_: &Self::Stream) -> Result<Self::Event> {
        Ok(Arc::new(CpuEvent::default()))
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        event.record(stream)
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        event.synchronize();
        Ok(())
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.query())
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        start.elapsed_ms(end)
    }
}
