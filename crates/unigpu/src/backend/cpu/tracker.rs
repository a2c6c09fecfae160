//! The pending uses of one CPU buffer: the fence of its last write and of
//! the reads since, which later work waits for (`buffer.rs` `submit`).
//! Apart from `buffer.rs` so that a stream's graph capture can hold
//! trackers without the stream depending on the buffers.

use std::sync::{Arc, Mutex};

use super::fence::Fence;
use crate::lock::lock;

#[derive(Debug, Default)]
struct Uses {
    last_write: Option<Fence>,
    reads_since: Vec<Fence>,
}

#[derive(Debug, Clone, Default)]
/// Pending uses of one CPU buffer (unnameable outside the crate).
pub struct Tracker(Arc<Mutex<Uses>>);

impl Tracker {
    pub(super) fn pending_write(&self) -> Option<Fence> {
        lock(&self.0).last_write.clone()
    }

    pub(super) fn pending_all(&self) -> Vec<Fence> {
        let uses = lock(&self.0);
        uses.last_write
            .iter()
            .chain(uses.reads_since.iter())
            .cloned()
            .collect()
    }

    /// Blocks until no enqueued work writes the buffer.
    pub(crate) fn wait_writes(&self) {
        if let Some(f) = self.pending_write() {
            f.wait();
        }
    }

    /// Blocks until no enqueued work uses the buffer.
    pub(crate) fn wait_all(&self) {
        for f in self.pending_all() {
            f.wait();
        }
    }

    /// Records `done` as the latest read (reads of earlier writes may run
    /// together).
    pub(super) fn note_read(&self, done: &Fence) {
        let mut uses = lock(&self.0);
        uses.reads_since.retain(|f| f.done_at().is_none());
        uses.reads_since.push(done.clone());
    }

    /// Records `done` as the latest write, which every later use waits for.
    pub(super) fn note_write(&self, done: &Fence) {
        let mut uses = lock(&self.0);
        uses.last_write = Some(done.clone());
        uses.reads_since.clear();
    }
}
