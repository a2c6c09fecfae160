//! Host buffers that uploads reuse. An upload must copy the caller's slice
//! before it returns (the copy into the array runs later, on the worker),
//! and a fresh vector for each large upload costs a page fault per page:
//! on the 2-core dev VM a new 64 MiB vector took about 35 ms of faults
//! against 5 ms of copying, and with faults from several threads at once
//! (a pipeline's overlapped stages) each upload took longer still.

use std::sync::Mutex;

use super::memory::memory_info;
use crate::lock::lock;
use crate::{Element, Error, Result};

/// Buffers a stream keeps between uploads: enough for the uploads a
/// triple-buffered pipeline has in flight, few enough that a stream that
/// once uploaded large arrays holds little memory (it is all freed with
/// the stream).
const KEEP: usize = 3;

#[derive(Debug, Default)]
pub(crate) struct Staging {
    free: Mutex<Vec<Vec<u8>>>,
}

impl Staging {
    /// A copy of `host`'s bytes, in a reused buffer where one is large
    /// enough.
    pub(crate) fn copy_of<T: Element>(&self, host: &[T]) -> Result<Vec<u8>> {
        let bytes: &[u8] = bytemuck::cast_slice(host);
        let reused = {
            let mut free = lock(&self.free);
            // The smallest that fits, so that large buffers stay for large
            // uploads.
            let best = (0..free.len())
                .filter(|&i| free[i].capacity() >= bytes.len())
                .min_by_key(|&i| free[i].capacity());
            best.map(|i| free.swap_remove(i))
        };
        let mut buf = match reused {
            Some(buf) => buf,
            None => {
                let mut buf = Vec::new();
                buf.try_reserve_exact(bytes.len())
                    .map_err(|_| Error::OutOfMemory {
                        requested: bytes.len(),
                        free: memory_info().0,
                    })?;
                buf
            }
        };
        buf.clear();
        buf.extend_from_slice(bytes);
        Ok(buf)
    }

    /// Takes `buf` back for a later upload, or frees it when enough are
    /// kept (the smallest goes).
    pub(crate) fn give_back(&self, buf: Vec<u8>) {
        let mut free = lock(&self.free);
        free.push(buf);
        if free.len() > KEEP
            && let Some(i) = (0..free.len()).min_by_key(|&i| free[i].capacity())
        {
            free.swap_remove(i);
        }
    }
}
