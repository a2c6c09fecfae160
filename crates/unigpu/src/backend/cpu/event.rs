//! CPU events: a fence that the recording stream signals when it gets there.

use std::sync::Mutex;
use std::time::Instant;

use super::Cpu;
use super::fence::Fence;
use crate::backend::EventApi;
use crate::lock::lock;
use crate::{Error, Result};
use std::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct CpuEvent {
    /// The fence of the latest `record`; `None` before the first.
    recorded: Mutex<Option<Fence>>,
}

impl CpuEvent {
    pub(crate) fn fence(&self) -> Option<Fence> {
        lock(&self.recorded).clone()
    }

    /// Like cuEventQuery: true when never recorded or when reached.
    pub(crate) fn query(&self) -> bool {
        self.fence().is_none_or(|f| f.done_at().is_some())
    }

    fn timestamp(&self, which: &str) -> Result<Instant> {
        self.fence()
            .map(|f| f.wait())
            .ok_or_else(|| Error::StreamWork {
                message: format!("elapsed_ms: the {which} event was never recorded"),
            })
    }
}

impl EventApi for Cpu {
    fn new_event(_: &Self::Stream, _timed: bool) -> Result<Self::Event> {
        Ok(Arc::new(CpuEvent::default()))
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        let fence = Fence::default();
        let signal = fence.clone();
        stream.enqueue(Box::new(move || {
            signal.signal();
            Ok(())
        }))?;
        *lock(&event.recorded) = Some(fence);
        Ok(())
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        if let Some(f) = event.fence() {
            f.wait();
        }
        Ok(())
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.query())
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        let start = start.timestamp("start")?;
        let stop = end.timestamp("end")?;
        let ms = if stop >= start {
            (stop - start).as_secs_f64() * 1e3
        } else {
            -((start - stop).as_secs_f64() * 1e3)
        };
        Ok(ms as f32)
    }
}
