//! Streams: ordered queues of device work. Work on different streams may
//! run at the same time; events order it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use crate::backend::StreamImpl;
use crate::fault_word::FaultWord;
use crate::{Error, Result};

/// An ordered queue of work. On CUDA it is a non-blocking CUDA stream; on
/// the CPU backend it is a worker thread with its own queue, so the same
/// program overlaps work the same way on both.
///
/// `Clone` shares the queue. Send + Sync: work may be enqueued from any
/// thread; calls from different threads are ordered as they happen. The
/// stream is destroyed when the last clone is dropped, after its pending
/// work completes.
#[derive(Debug, Clone)]
pub struct Stream {
    pub(crate) imp: StreamImpl,
    /// Id of the last kernel launched here (0: none), named in errors
    /// found at sync time. An atomic, so launching takes no lock.
    last_kernel: Arc<AtomicUsize>,
    /// Where the kernels made by `#[unigpu::kernel]` record an
    /// out-of-bounds access; read at sync (fault_word.rs).
    pub(crate) faults: Arc<FaultWord>,
}

impl Stream {
    pub(crate) fn from_impl(imp: StreamImpl) -> Stream {
        Stream {
            faults: FaultWord::new(imp.clone()),
            imp,
            last_kernel: Arc::default(),
        }
    }

    pub(crate) fn note_launch(&self, kernel_id: usize) {
        self.last_kernel.store(kernel_id, Ordering::Relaxed);
    }

    /// A fault found at sync time, as having happened in the last kernel
    /// launched on this stream (where one was).
    pub(crate) fn blame_last_kernel(&self, e: Error) -> Error {
        let faulted = matches!(e, Error::Driver { .. } | Error::Torch { .. });
        match crate::kernel::name_of(self.last_kernel.load(Ordering::Relaxed)) {
            Some(kernel) if faulted => e.in_kernel(&kernel),
            _ => e,
        }
    }

    /// The CUDA stream's handle (`CUstream` as an integer) on the cuda and
    /// torch backends, for libraries that take a stream by handle (DLPack
    /// consumers); `None` on the CPU backend.
    pub fn cuda_handle(&self) -> Option<u64> {
        self.imp.native()
    }

    /// Blocks until all work enqueued so far is done. Returns the first
    /// error any of it raised (a panicking host function, a failed launch,
    /// a fault in a kernel, which names the last kernel launched here),
    /// then the first out-of-bounds access of a kernel made by
    /// `#[unigpu::kernel]` launched here since the last report
    /// (`Error::KernelOutOfBounds`, reported once).
    ///
    /// Refused (`Unsupported`) while the stream captures a graph: its work
    /// has not run.
    pub fn sync(&self) -> Result<()> {
        if self.is_capturing() {
            return Err(Error::Unsupported {
                backend: self.imp.backend(),
                what: "synchronizing a stream that captures a graph: its work has not run; \
                       end the capture first"
                    .into(),
            });
        }
        self.imp.sync().map_err(|e| self.blame_last_kernel(e))?;
        self.faults.check()
    }

    /// Same as [`Stream::sync`].
    pub fn synchronize(&self) -> Result<()> {
        self.sync()
    }

    /// True when all enqueued work is done. Never blocks.
    pub fn is_idle(&self) -> Result<bool> {
        self.imp.is_idle()
    }

    /// Same as [`Stream::is_idle`], under CUDA's name.
    pub fn query(&self) -> Result<bool> {
        self.is_idle()
    }

    /// Runs `f` on the host once the work before it on this stream is done;
    /// later work on the stream waits for it. `f` must not call back into
    /// unigpu (on CUDA it runs on a driver thread). A panic in `f` is
    /// caught and returned by the next [`Stream::sync`].
    pub fn host_fn(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
        self.imp.host_fn(Box::new(f))
    }
}

pub(crate) fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::SizeMismatch {
            what,
            expected,
            actual,
        })
    }
}
