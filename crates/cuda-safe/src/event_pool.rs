//! A per-device pool of CUDA events, so that recording an event or ordering
//! one stream after another costs one `cuEventRecord` instead of an event
//! creation and destruction (measured on an H200: a record takes 0.16 µs
//! untimed and 0.81 µs timed, a create + destroy 0.22–0.34 µs more).

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaEvent, sys::CUevent_flags};

use crate::error::{Context as _, Result};

/// Events kept for reuse, per timing kind. More than this are destroyed on
/// return, bounding what a burst of events leaves behind.
const KEEP: usize = 1024;

#[derive(Debug)]
pub(crate) struct EventPool {
    ctx: Arc<CudaContext>,
    untimed: Mutex<Vec<CudaEvent>>,
    timed: Mutex<Vec<CudaEvent>>,
}

impl EventPool {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Arc<Self> {
        Arc::new(EventPool {
            ctx,
            untimed: Mutex::default(),
            timed: Mutex::default(),
        })
    }

    fn shelf(&self, timed: bool) -> &Mutex<Vec<CudaEvent>> {
        if timed { &self.timed } else { &self.untimed }
    }

    /// An event from the pool, or a new one. Its state is whatever its last
    /// record left; every user records it before relying on it.
    pub(crate) fn take(self: &Arc<Self>, timed: bool) -> Result<PooledEvent> {
        let reused = self
            .shelf(timed)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let event = match reused {
            Some(e) => e,
            None => {
                let flags = if timed {
                    CUevent_flags::CU_EVENT_DEFAULT
                } else {
                    CUevent_flags::CU_EVENT_DISABLE_TIMING
                };
                self.ctx.new_event(Some(flags)).call("cuEventCreate")?
            }
        };
        Ok(PooledEvent {
            event: Some(event),
            pool: self.clone(),
            timed,
        })
    }

    fn put(&self, event: CudaEvent, timed: bool) {
        let mut shelf = self.shelf(timed).lock().unwrap_or_else(|e| e.into_inner());
        if shelf.len() < KEEP {
            shelf.push(event);
        }
    }
}

/// An event borrowed from its device's pool; goes back on drop. A stream
/// that waited on it keeps waiting for the record it saw (CUDA captures an
/// event's state at `cuStreamWaitEvent`), so returning it early is safe.
#[derive(Debug)]
pub(crate) struct PooledEvent {
    /// Always `Some` until dropped.
    event: Option<CudaEvent>,
    pool: Arc<EventPool>,
    timed: bool,
}

impl PooledEvent {
    pub(crate) fn event(&self) -> &CudaEvent {
        self.event.as_ref().expect("taken only in drop")
    }

    pub(crate) fn is_timed(&self) -> bool {
        self.timed
    }
}

impl Drop for PooledEvent {
    fn drop(&mut self) {
        if let Some(event) = self.event.take() {
            self.pool.put(event, self.timed);
        }
    }
}
