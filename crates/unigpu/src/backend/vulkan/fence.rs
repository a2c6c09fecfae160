//! A marker in the device's work with two stages. All work of a device goes
//! through its one queue, and wgpu orders every submission after the earlier
//! ones that use the same buffers, so GPU work that must follow other GPU
//! work only needs that work *submitted* first; the host (a download, a host
//! function, an event query) needs it *done*.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::lock::lock;

#[derive(Debug, Default)]
struct State {
    submitted: bool,
    /// When the device (or, for host work, the host) finished it.
    done_at: Option<Instant>,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Fence(Arc<Inner>);

impl Fence {
    pub(crate) fn same(&self, other: &Fence) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(crate) fn mark_submitted(&self) {
        lock(&self.0.state).submitted = true;
        self.0.cv.notify_all();
    }

    /// Done implies submitted.
    pub(crate) fn mark_done(&self) {
        let mut s = lock(&self.0.state);
        s.submitted = true;
        s.done_at.get_or_insert_with(Instant::now);
        self.0.cv.notify_all();
    }

    pub(crate) fn is_submitted(&self) -> bool {
        lock(&self.0.state).submitted
    }

    pub(crate) fn is_done(&self) -> bool {
        lock(&self.0.state).done_at.is_some()
    }

    pub(crate) fn wait_submitted(&self) {
        let mut s = lock(&self.0.state);
        while !s.submitted {
            s = self.0.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(crate) fn wait_done(&self) {
        let mut s = lock(&self.0.state);
        while s.done_at.is_none() {
            s = self.0.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}
