//! Host-visible buffers that uploads and downloads reuse. A fresh mapped
//! buffer costs an allocation and a page fault per page of its first
//! write, more than the copy itself for large arrays (as the CPU backend's
//! staging notes), so a device keeps a few: upload buffers come back
//! mapped for writing once the GPU has copied out of them (wgpu maps them
//! again after the submission), download buffers come back unmapped once
//! the host has read them. Transfers larger than one slot move through
//! slot-sized buffers (transfer.rs), so what is kept stays bounded.

use std::sync::{Arc, Condvar, Mutex, OnceLock};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::lock::lock;

/// How transfers past one slot move (transfer.rs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Bytes a slot holds: large enough that each slot's submission and
    /// map callback (tens of µs) stay small beside its copies (about
    /// 0.3 ms at 55 GB/s), the cuda backend's slot size.
    pub(crate) slot: usize,
    /// Slots in flight, and buffers kept per direction: a device holds at
    /// most `slots` slots a direction.
    pub(crate) slots: usize,
}

/// The shape: 16 MiB × 4 slots, or `UNIGPU_VULKAN_STAGING_SLOT_KIB` (64 to
/// 262144) and `UNIGPU_VULKAN_STAGING_SLOTS` (2 to 16), for tuning and for
/// tests that need many slots without large arrays.
pub(crate) fn shape() -> Shape {
    static SHAPE: OnceLock<Shape> = OnceLock::new();
    *SHAPE.get_or_init(|| {
        let var = |name: &str, range: std::ops::RangeInclusive<usize>| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|v| range.contains(v))
        };
        Shape {
            slot: var("UNIGPU_VULKAN_STAGING_SLOT_KIB", 64..=256 << 10)
                .map_or(16 << 20, |v| v << 10),
            slots: var("UNIGPU_VULKAN_STAGING_SLOTS", 2..=16).unwrap_or(4),
        }
    })
}

/// From this size on the host side of a copy is split across the thread
/// pool: one thread copies into or out of mapped memory at about 10 GB/s
/// (unigpu-vulkan-sys's `staging_probe` on an H200; the cuda backend's
/// staging ring measured the same), below it the pool's dispatch costs
/// more than it saves.
const PARALLEL_FROM: usize = 1 << 20;
/// Bytes each thread copies at a time.
const PIECE: usize = 256 << 10;

/// Copies `src` into mapped memory `dst` (the same length), across the
/// thread pool when large. wgpu hands mapped memory out as `WriteOnly`
/// (it may be write-combined), which moves to another thread only as
/// fixed-size pieces, hence the arrays.
pub(crate) fn write_mapped(mut dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    if src.len() < PARALLEL_FROM {
        dst.copy_from_slice(src);
        return;
    }
    let (pieces, mut tail) = dst.into_chunks::<PIECE>();
    let whole = pieces.len() * PIECE;
    let pieces: Vec<wgpu::WriteOnly<'_, [u8; PIECE]>> = pieces.into_iter().collect();
    pieces
        .into_par_iter()
        .zip(src[..whole].par_chunks(PIECE))
        .for_each(|(d, s)| wgpu::WriteOnly::<[u8]>::from(d).copy_from_slice(s));
    tail.copy_from_slice(&src[whole..]);
}

/// Copies mapped memory `src` into `dst` (the same length), across the
/// thread pool when large.
pub(crate) fn read_mapped_into(dst: &mut [u8], src: &[u8]) {
    if src.len() < PARALLEL_FROM {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[derive(Debug, Default)]
pub(crate) struct Staging {
    /// Mapped for writing, ready for an upload.
    uploads: Mutex<Vec<wgpu::Buffer>>,
    /// Signalled when an upload buffer comes back mapped.
    returned: Condvar,
    /// Unmapped and idle, ready for a download.
    downloads: Mutex<Vec<wgpu::Buffer>>,
}

/// The smallest buffer of `list` holding `size` bytes, taken out of it.
fn take(list: &Mutex<Vec<wgpu::Buffer>>, size: u64) -> Option<wgpu::Buffer> {
    let mut list = lock(list);
    let best = (0..list.len())
        .filter(|&i| list[i].size() >= size)
        .min_by_key(|&i| list[i].size())?;
    Some(list.swap_remove(best))
}

/// Keeps `buffer` for later, dropping the smallest when more than the
/// shape's slots.
fn keep(list: &Mutex<Vec<wgpu::Buffer>>, buffer: wgpu::Buffer) {
    let mut list = lock(list);
    list.push(buffer);
    if list.len() > shape().slots
        && let Some(i) = (0..list.len()).min_by_key(|&i| list[i].size())
    {
        list.swap_remove(i);
    }
}

impl Staging {
    /// A buffer holding `data` in its first bytes, to copy `size` bytes
    /// from (`data` padded to whole words), unmapped: a kept one, or
    /// `make`'s (mapped at creation). The caller's memory may be reused once
    /// this returns.
    ///
    /// With `wait`, when none is kept, waits for one of the caller's own
    /// earlier uploads to come back instead of making one (a chunked
    /// transfer past its first slots in flight).
    pub(crate) fn upload(
        &self,
        data: &[u8],
        size: u64,
        wait: bool,
        make: impl FnOnce() -> Result<wgpu::Buffer>,
    ) -> Result<wgpu::Buffer> {
        let kept = if wait {
            self.take_returned(size)
        } else {
            take(&self.uploads, size)
        };
        let buffer = match kept {
            Some(b) => b,
            None => make()?,
        };
        {
            let mut view = buffer
                .get_mapped_range_mut(..size)
                .map_err(|e| Error::StreamWork {
                    message: format!("mapping an upload's staging buffer: {e}"),
                })?;
            write_mapped(view.slice(..data.len()), data);
        }
        buffer.unmap();
        Ok(buffer)
    }

    /// Called while recording the copy out of `buffer`: once the copy has
    /// run, `buffer` is mapped again and kept for the next upload.
    pub(crate) fn upload_copied(
        self: &Arc<Self>,
        enc: &wgpu::CommandEncoder,
        buffer: &wgpu::Buffer,
    ) {
        let (me, kept) = (self.clone(), buffer.clone());
        enc.map_buffer_on_submit(buffer, wgpu::MapMode::Write, .., move |r| {
            if r.is_ok() {
                keep(&me.uploads, kept);
                me.returned.notify_all();
            }
        });
    }

    /// Whether an upload buffer of at least `size` bytes is kept.
    pub(crate) fn has_upload(&self, size: u64) -> bool {
        lock(&self.uploads).iter().any(|b| b.size() >= size)
    }

    /// An upload buffer of at least `size` bytes, waiting until one comes
    /// back; `None` (make one) if none is back within a second, which only
    /// a stream held up by other work can cause, so that a transfer never
    /// waits on work queued after it.
    fn take_returned(&self, size: u64) -> Option<wgpu::Buffer> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut list = lock(&self.uploads);
        loop {
            if let Some(i) = (0..list.len()).find(|&i| list[i].size() >= size) {
                return Some(list.swap_remove(i));
            }
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            list = self
                .returned
                .wait_timeout(list, left)
                .map_or_else(|e| e.into_inner().0, |(l, _)| l);
        }
    }

    /// An idle buffer of at least `size` bytes for a download to land in:
    /// a kept one, or `make`'s.
    pub(crate) fn download(
        &self,
        size: u64,
        make: impl FnOnce() -> Result<wgpu::Buffer>,
    ) -> Result<wgpu::Buffer> {
        match take(&self.downloads, size) {
            Some(b) => Ok(b),
            None => make(),
        }
    }

    /// After the host has read `buffer` and unmapped it: kept.
    pub(crate) fn download_idle(&self, buffer: wgpu::Buffer) {
        keep(&self.downloads, buffer);
    }

    /// Drops every kept buffer; the bytes they held.
    pub(crate) fn release(&self) -> usize {
        let mut bytes = 0u64;
        for list in [&self.uploads, &self.downloads] {
            bytes += lock(list).drain(..).map(|b| b.size()).sum::<u64>();
        }
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }
}
