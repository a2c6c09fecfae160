//! A stream's fault word: one u32 in the stream's device memory that the
//! kernels made by `#[unigpu::kernel]` launched on it take as a hidden
//! argument, and set (from 0: the first fault wins; on CUDA, faults at the
//! same moment may race and one of them is kept) when
//! they index an array out of bounds. The stream reads it at the syncs
//! that report faults (docs/kernels.md, "Defined results") and clears it.
//!
//! Where the backend's kernels reach host memory (cuda: page-locked memory
//! on a device with unified addressing) the word is a pinned host word
//! that the kernels write in place, so the read after a sync's wait is a
//! load on the host (an atomic swap with 0), with no copy to enqueue and
//! wait for: 6.9 µs of a launch + sync on an H200
//! (bench/runners/sync_fault_read.py). Elsewhere it is an ordinary buffer
//! of the backend, read by a copy into a pinned word made with it (no
//! staging, one wait), and every backend orders its uses like any
//! array's: the read waits for the kernels launched before it. A
//! context's default stream makes it with the context; another stream at
//! its first such launch (or `begin_capture`). It is read only when such a
//! launch happened since the last read, so streams that run no generated
//! kernel pay nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::Result;
use crate::backend::{ArgImpl, PinnedImpl, Storage, StreamImpl};
use crate::lock::lock;

pub(crate) struct FaultWord {
    stream: StreamImpl,
    word: Mutex<Option<Slot>>,
    /// A generated kernel was launched since the last read.
    unread: AtomicBool,
    /// A generated kernel was captured into the graph being recorded.
    captured: AtomicBool,
}

impl std::fmt::Debug for FaultWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultWord")
            .field("unread", &self.unread)
            .finish_non_exhaustive()
    }
}

/// The word and the host memory it is read from.
enum Slot {
    /// A pinned host word the kernels write in place.
    Host(PinnedImpl<u32>),
    /// A word on the device, copied into `host` to be read.
    Device {
        word: Storage<u32>,
        host: PinnedImpl<u32>,
    },
}

impl Slot {
    fn new(stream: &StreamImpl) -> Result<Slot> {
        let mut host = PinnedImpl::new(stream, 1)?;
        if host.arg_mut().is_some() {
            return Ok(Slot::Host(host));
        }
        Ok(Slot::Device {
            word: Storage::zeros(stream, 1)?,
            host,
        })
    }

    fn arg(&mut self) -> Option<ArgImpl<'_>> {
        match self {
            Slot::Host(host) => host.arg_mut(),
            Slot::Device { word, .. } => Some(word.arg_mut()),
        }
    }

    /// The code recorded, cleared. The caller waited for the launches.
    fn take(&mut self, stream: &StreamImpl) -> Result<u32> {
        match self {
            Slot::Host(host) => host.take_word(),
            Slot::Device { word, host } => {
                stream.download_pinned(word, host)?;
                let code = host.slice()?[0];
                if code != 0 {
                    // Cleared after the read and before any later launch
                    // (which waits for the lock), so the next sync starts
                    // clean.
                    word.write(stream, &[0])?;
                }
                Ok(code)
            }
        }
    }
}

/// The word, held for one launch's arguments.
pub(crate) struct Held<'a>(MutexGuard<'a, Option<Slot>>);

impl Held<'_> {
    pub(crate) fn arg(&mut self) -> Option<ArgImpl<'_>> {
        self.0.as_mut().and_then(Slot::arg)
    }
}

impl FaultWord {
    pub(crate) fn new(stream: StreamImpl) -> Arc<FaultWord> {
        Arc::new(FaultWord {
            stream,
            word: Mutex::new(None),
            unread: AtomicBool::new(false),
            captured: AtomicBool::new(false),
        })
    }

    /// Makes the word (zeroed on this stream) if it is not there yet.
    pub(crate) fn prepare(&self) -> Result<()> {
        Self::made(&self.stream, &mut lock(&self.word))
    }

    fn made(stream: &StreamImpl, slot: &mut Option<Slot>) -> Result<()> {
        if slot.is_none() {
            *slot = Some(Slot::new(stream)?);
        }
        Ok(())
    }

    /// The word for a launch (zeroed on this stream the first time), marked
    /// to be read at the next check.
    pub(crate) fn hold(&self) -> Result<Held<'_>> {
        let mut word = lock(&self.word);
        Self::made(&self.stream, &mut word)?;
        if self.stream.is_capturing() {
            self.captured.store(true, Ordering::Release);
        }
        self.unread.store(true, Ordering::Release);
        Ok(Held(word))
    }

    /// Whether a generated kernel was captured since the last call.
    pub(crate) fn take_captured(&self) -> bool {
        self.captured.swap(false, Ordering::AcqRel)
    }

    /// To be read at the next check: a graph replay that holds generated
    /// kernels may have set it.
    pub(crate) fn mark_unread(&self) {
        self.unread.store(true, Ordering::Release);
    }

    /// The fault recorded by the kernels launched before this call, as
    /// `Error::KernelOutOfBounds` (once: the word is cleared), after
    /// waiting for them. Nothing to read (no generated kernel launched
    /// since the last check), or a stream that captures a graph (its
    /// work has not run): `Ok` at once.
    pub(crate) fn check(&self) -> Result<()> {
        if self.stream.is_capturing() || !self.unread.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let mut guard = lock(&self.word);
        let Some(slot) = guard.as_mut() else {
            return Ok(());
        };
        let code = match slot.take(&self.stream) {
            Ok(code) => code,
            Err(e) => {
                // Read again at the next check.
                self.unread.store(true, Ordering::Release);
                return Err(e);
            }
        };
        if code == 0 {
            return Ok(());
        }
        Err(crate::kernel::out_of_bounds(code))
    }
}

/// The fault words of a context's streams, for `Context::sync`.
#[derive(Debug, Default)]
pub(crate) struct FaultWords(Mutex<Vec<Weak<FaultWord>>>);

impl FaultWords {
    pub(crate) fn add(&self, w: &Arc<FaultWord>) {
        let mut words = lock(&self.0);
        words.retain(|w| w.strong_count() > 0);
        words.push(Arc::downgrade(w));
    }

    /// Checks every live stream's word; the first fault found.
    /// The context's streams (every stream registers its word here).
    pub(crate) fn streams(&self) -> Vec<StreamImpl> {
        lock(&self.0)
            .iter()
            .filter_map(Weak::upgrade)
            .map(|w| w.stream.clone())
            .collect()
    }

    pub(crate) fn check_all(&self) -> Result<()> {
        let words: Vec<Arc<FaultWord>> = lock(&self.0).iter().filter_map(Weak::upgrade).collect();
        let mut first = Ok(());
        for w in words {
            let r = w.check();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
