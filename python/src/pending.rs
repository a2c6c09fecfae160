//! Streams with Python work pending, kept alive until it is done.
//!
//! A CPU stream's worker runs a kernel's Python implementation with the
//! GIL. Dropping the last handle of such a stream waits for its work; done
//! by the garbage collector (which holds the GIL) that would deadlock. So
//! every stream a Python implementation is launched on is kept here until
//! it is idle, and `unigpu` drains this list at exit (`atexit`), before the
//! interpreter stops running threads.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use unigpu::Stream;

struct Pending {
    streams: Vec<Stream>,
    /// Length at which idle streams are next dropped (amortised O(1)).
    prune_at: usize,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    streams: Vec::new(),
    prune_at: 64,
});

/// Keeps `stream` until its work is done. Called with the GIL released
/// (dropping idle streams joins their workers).
pub(crate) fn note(stream: &Stream) {
    let mut p = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
    if p.streams.len() >= p.prune_at {
        p.streams.retain(|s| !s.is_idle().unwrap_or(true));
        p.prune_at = (p.streams.len() * 2).max(64);
    }
    p.streams.push(stream.clone());
}

/// `unigpu._unigpu.drain_pending()`: waits for every stream with Python work
/// and lets them go. Errors are left for the program's own sync to report.
#[pyfunction(name = "drain_pending")]
pub(crate) fn drain(py: Python<'_>) {
    py.detach(|| {
        let streams = std::mem::take(
            &mut PENDING
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .streams,
        );
        for s in streams {
            let _ = s.sync();
        }
    });
}
