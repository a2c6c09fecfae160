//! A one-shot completion flag with a timestamp: the CPU backend's version of
//! a recorded CUDA event.

use std::sync::{Arc, Condvar, Mutex};

use crate::lock::lock;
use std::time::Instant;

#[derive(Debug, Clone, Default)]
pub(crate) struct Fence(Arc<FenceInner>);

#[derive(Debug, Default)]
struct FenceInner {
    done_at: Mutex<Option<Instant>>,
    cv: Condvar,
}

impl Fence {
    pub(crate) fn signal(&self) {
        let mut done = lock(&self.0.done_at);
        done.get_or_insert_with(Instant::now);
        self.0.cv.notify_all();
    }

    /// Blocks until signalled; returns when it was signalled.
    pub(crate) fn wait(&self) -> Instant {
        let mut done = lock(&self.0.done_at);
        loop {
            if let Some(at) = *done {
                return at;
            }
            done = self.0.cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(crate) fn done_at(&self) -> Option<Instant> {
        *lock(&self.0.done_at)
    }
}
