//! The pending uses of one buffer: the fence of its last write and of the
//! reads since. Work that writes a buffer follows every earlier use of it,
//! work that reads follows the last write, on whichever stream they were
//! enqueued (the contract's buffer guarantee, as the CPU backend keeps it).

use std::sync::{Arc, Mutex};

use super::fence::Fence;
use crate::lock::lock;

#[derive(Debug, Default)]
struct Uses {
    last_write: Option<Fence>,
    reads_since: Vec<Fence>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Tracker(Arc<Mutex<Uses>>);

impl Tracker {
    /// What a reader must follow.
    pub(crate) fn for_read(&self) -> Option<Fence> {
        lock(&self.0).last_write.clone()
    }

    /// What a writer must follow.
    pub(crate) fn for_write(&self) -> Vec<Fence> {
        let uses = lock(&self.0);
        uses.last_write
            .iter()
            .chain(&uses.reads_since)
            .cloned()
            .collect()
    }

    pub(crate) fn note_read(&self, done: &Fence) {
        let mut uses = lock(&self.0);
        uses.reads_since.retain(|f| !f.is_done());
        uses.reads_since.push(done.clone());
    }

    pub(crate) fn note_write(&self, done: &Fence) {
        let mut uses = lock(&self.0);
        uses.last_write = Some(done.clone());
        uses.reads_since.clear();
    }
}
