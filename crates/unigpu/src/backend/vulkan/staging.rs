//! Host-visible buffers that uploads and downloads reuse. A fresh mapped
//! buffer costs an allocation and a page fault per page of its first
//! write, more than the copy itself for large arrays (as the CPU backend's
//! staging notes), so a device keeps a few: upload buffers come back
//! mapped for writing once the GPU has copied out of them (wgpu maps them
//! again after the submission), download buffers come back unmapped once
//! the host has read them.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::lock::lock;

/// Buffers kept per direction: enough for a pipeline's uploads and
/// downloads in flight, few enough that a device that once moved large
/// arrays holds little.
const KEEP: usize = 3;

#[derive(Debug, Default)]
pub(crate) struct Staging {
    /// Mapped for writing, ready for an upload.
    uploads: Mutex<Vec<wgpu::Buffer>>,
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

/// Keeps `buffer` for later, dropping the smallest when more than `KEEP`.
fn keep(list: &Mutex<Vec<wgpu::Buffer>>, buffer: wgpu::Buffer) {
    let mut list = lock(list);
    list.push(buffer);
    if list.len() > KEEP
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
    pub(crate) fn upload(
        &self,
        data: &[u8],
        size: u64,
        make: impl FnOnce() -> Result<wgpu::Buffer>,
    ) -> Result<wgpu::Buffer> {
        let buffer = match take(&self.uploads, size) {
            Some(b) => b,
            None => make()?,
        };
        {
            let mut view = buffer
                .get_mapped_range_mut(..size)
                .map_err(|e| Error::StreamWork {
                    message: format!("mapping an upload's staging buffer: {e}"),
                })?;
            view.slice(..data.len()).copy_from_slice(data);
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
            }
        });
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

    /// After the host has read `buffer`: unmapped and kept.
    pub(crate) fn download_read(&self, buffer: wgpu::Buffer) {
        buffer.unmap();
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
