//! Host memory standing in for device memory, with the same ordering rules
//! cudarc applies to device buffers: work that writes a buffer waits for
//! every earlier use of it, work that reads waits for the last write.

use std::sync::Arc;

use unigpu_core::dlpack::{HostArray, HostMem};

use super::fence::Fence;
use super::memory::try_alloc_vec;
use super::stream::{CpuStream, Recorded};
pub(crate) use super::tracker::Tracker;
use crate::backend::Backend;
use crate::{Element, Error, Result};

/// Refuses work that writes `written` while it also uses `others`, when
/// one of them is the same memory. Safe Rust cannot pass one array as `&`
/// and `&mut`, and the C API refuses one handle twice, but an array and
/// its own DLPack export imported again are two arrays over one memory and
/// one lock: the job would take that lock twice and never finish (found by
/// the capi_calls fuzz target, docs/fuzzing.md).
/// `what` names the call, for the error.
pub(crate) fn check_distinct<T: Element>(
    what: impl FnOnce() -> String,
    written: &CpuBuffer<T>,
    others: &[&CpuBuffer<T>],
) -> Result<()> {
    if others
        .iter()
        .any(|o| HostArray::ptr_eq(&written.data, &o.data))
    {
        return Err(shared_memory(&what()));
    }
    Ok(())
}

fn shared_memory(what: &str) -> Error {
    Error::Unsupported {
        backend: Backend::Cpu,
        what: format!(
            "{what} writes an array that shares its memory with another of its operands \
             (an array and its own DLPack export imported again); use one of the two, \
             or copy one first"
        ),
    }
}

/// Like [`submit`], for work a graph may replay: while `stream` captures,
/// the work is recorded instead of run.
pub(crate) fn submit_replayable(
    stream: &CpuStream,
    reads: &[&Tracker],
    writes: &[&Tracker],
    work: impl Fn() -> Result<()> + Send + Sync + 'static,
) -> Result<()> {
    let recorded = Recorded {
        reads: reads.iter().map(|&t| t.clone()).collect(),
        writes: writes.iter().map(|&t| t.clone()).collect(),
        work: Arc::new(work),
    };
    match stream.record_if_capturing(recorded) {
        None => Ok(()),
        Some(r) => replay(stream, &r),
    }
}

/// Submits recorded work on `stream`, ordered after the current uses of
/// what it reads and writes.
pub(crate) fn replay(stream: &CpuStream, r: &Recorded) -> Result<()> {
    let reads: Vec<&Tracker> = r.reads.iter().collect();
    let writes: Vec<&Tracker> = r.writes.iter().collect();
    let work = r.work.clone();
    submit(stream, &reads, &writes, move || work()).map(drop)
}

/// Enqueues `work` on `stream` after the uses of `reads` and `writes` it
/// must follow, and records it as their latest use. Returns the fence
/// the work signals when it is done. Refused while `stream` captures (see
/// [`submit_replayable`]).
pub(crate) fn submit(
    stream: &CpuStream,
    reads: &[&Tracker],
    writes: &[&Tracker],
    work: impl FnOnce() -> Result<()> + Send + 'static,
) -> Result<Fence> {
    let mut deps: Vec<Fence> = reads.iter().filter_map(|t| t.pending_write()).collect();
    deps.extend(writes.iter().flat_map(|t| t.pending_all()));
    let done = Fence::default();
    let signal = done.clone();
    stream.enqueue(Box::new(move || {
        for d in &deps {
            d.wait();
        }
        let outcome = work();
        // Signalled even on failure, so later work is never stuck.
        signal.signal();
        outcome
    }))?;
    for t in reads {
        t.note_read(&done);
    }
    for t in writes {
        t.note_write(&done);
    }
    Ok(done)
}

/// A CPU-backend array's storage.
#[derive(Debug)]
pub(crate) struct CpuBuffer<T: Element> {
    pub(crate) data: HostArray<T>,
    pub(crate) uses: Tracker,
    /// `data.len()`, kept so that asking needs no lock.
    len: usize,
    /// Made by `alloc_unified`: the host may view it.
    pub(crate) unified: bool,
}

impl<T: Element> CpuBuffer<T> {
    pub(crate) fn zeros(len: usize) -> Result<Self> {
        Ok(Self::from_vec(try_alloc_vec(len)?))
    }

    pub(crate) fn from_slice(host: &[T]) -> Result<Self> {
        let mut v = try_alloc_vec(host.len())?;
        v.copy_from_slice(host);
        Ok(Self::from_vec(v))
    }

    fn from_vec(v: Vec<T>) -> Self {
        Self::from_mem(HostMem::from(v))
    }

    /// Host memory from elsewhere (a DLPack import), with no pending uses.
    pub(crate) fn from_mem(mem: HostMem<T>) -> Self {
        Self::shared(HostArray::new(mem), Tracker::default())
    }

    /// Another array's memory and use tracking (its own DLPack export
    /// coming back), so that work through either is ordered as one array's.
    pub(crate) fn shared(data: HostArray<T>, uses: Tracker) -> Self {
        CpuBuffer {
            len: data.len(),
            data,
            uses,
            unified: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies out after pending writes finish.
    pub(crate) fn read_into(&self, host: &mut [T]) {
        self.uses.wait_writes();
        host.copy_from_slice(&self.data.read());
    }

    /// Copies in after every pending use finishes.
    pub(crate) fn write_from(&self, host: &[T]) {
        self.uses.wait_all();
        self.data.write().copy_from_slice(host);
    }
}
