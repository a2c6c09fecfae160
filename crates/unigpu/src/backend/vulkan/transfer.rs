//! Uploads from and downloads into ordinary host memory, through the
//! device's staging buffers (`staging.rs`).
//!
//! A transfer up to one slot copies through one staging buffer. A larger
//! one moves slot by slot with a few slots in flight ([`shape`]), as the
//! cuda backend's staging ring does: the host copies one slot (across the
//! thread pool) while the GPU copies another, and the staging memory a
//! device keeps stays that many slots a direction whatever the array's
//! size.

use std::collections::VecDeque;
use std::sync::Arc;

use super::fence::Fence;
use super::spin;
use super::staging::shape;
use super::stream::VkStream;
use super::tracker::Tracker;
use super::wgpu_buffer::{MapSignal, create, padded, read_mapped, readback};
use crate::error::Result;

/// The slots a transfer of `len` bytes moves through, `(offset, bytes)` in
/// order; every one but the last is a whole slot.
fn chunks(len: usize, slot: usize) -> Vec<(usize, usize)> {
    (0..len)
        .step_by(slot)
        .map(|offset| (offset, slot.min(len - offset)))
        .collect()
}

/// Copies `data` into staging buffers now (so it may be reused once this
/// returns) and enqueues their copies into the start of `dst`, whose uses
/// `uses` tracks; the last copy's fence (the queue runs them in order), or
/// `None` for no data.
pub(crate) fn upload(
    stream: &Arc<VkStream>,
    data: &[u8],
    dst: &wgpu::Buffer,
    uses: &Tracker,
) -> Result<Option<Fence>> {
    let (device, shape) = (&stream.device, shape());
    let mut last = None;
    for (i, (offset, n)) in chunks(data.len(), shape.slot).into_iter().enumerate() {
        let size = padded(n);
        // Past the slots in flight, this transfer's own earlier slots
        // come back to be filled again: polled for here, so the callback
        // that returns one runs at once rather than after the poller
        // thread's wait in the driver.
        let reuse = i >= shape.slots;
        if reuse {
            spin::poll_for(&device.device, spin::TRANSFER, || {
                device.staging.has_upload(size)
            });
        }
        let part = &data[offset..offset + n];
        let staging = device.staging.upload(part, size, reuse, || {
            let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
            create(device, n, size, usage, true)
        })?;
        let (target, pool, at) = (dst.clone(), device.staging.clone(), offset as u64);
        last = Some(stream.submit(
            &[],
            &[uses],
            Box::new(move |enc| {
                enc.copy_buffer_to_buffer(&staging, 0, &target, at, size);
                pool.upload_copied(enc, &staging);
                Ok(())
            }),
        )?);
    }
    Ok(last)
}

/// The slot a download of `len` bytes moves through: `len` over `slots`
/// (in whole 64 KiB) between [`MIN_DOWNLOAD_SLOT`] and `slot`. A download
/// that fits one slot would otherwise wait for the whole DMA before the
/// host reads a byte; in `slots` parts the host reads one while the next
/// lands. (Uploads keep whole slots: the host's writes into staging
/// memory bound them, and smaller slots measured no faster on an H200;
/// docs/vulkan.md, "Transfers".)
fn download_slot(len: usize, slot: usize, slots: usize) -> usize {
    let part = len.div_ceil(slots).div_ceil(64 << 10) * (64 << 10);
    part.clamp(MIN_DOWNLOAD_SLOT.min(slot), slot)
}

/// Below this a slot's own costs (a submission, a map callback, the thread
/// pool's wake-up: tens of µs) outweigh what the overlap saves.
const MIN_DOWNLOAD_SLOT: usize = 2 << 20;

/// Copies the first `out.len()` bytes of `src`, whose uses `uses` tracks,
/// into `out`, slot by slot, and returns once every byte is there.
pub(crate) fn download_into(
    stream: &Arc<VkStream>,
    src: &wgpu::Buffer,
    uses: &Tracker,
    out: &mut [u8],
) -> Result<()> {
    let shape = shape();
    let plan = chunks(out.len(), download_slot(out.len(), shape.slot, shape.slots));
    let (device, staging) = (&stream.device, &stream.device.staging);
    // Enqueues slot `i`'s copy into `back` and its mapping for the host.
    let enqueue = |i: usize, back: &wgpu::Buffer| -> Result<MapSignal> {
        let (offset, n) = plan[i];
        let mapped = MapSignal::default();
        let (source, target, on_mapped) = (src.clone(), back.clone(), mapped.callback());
        let (at, size) = (offset as u64, padded(n));
        stream.submit_alone(
            &[uses],
            &[],
            Box::new(move |enc| {
                enc.copy_buffer_to_buffer(&source, at, &target, 0, size);
                enc.map_buffer_on_submit(&target, wgpu::MapMode::Read, ..size, on_mapped);
                Ok(())
            }),
        )?;
        Ok(mapped)
    };
    let mut flight = VecDeque::with_capacity(shape.slots);
    for (i, &(_, n)) in plan.iter().enumerate().take(shape.slots) {
        let back = staging.download(padded(n), || readback(device, n))?;
        let mapped = enqueue(i, &back)?;
        flight.push_back((back, mapped));
    }
    for (i, &(offset, n)) in plan.iter().enumerate() {
        let Some((back, mapped)) = flight.pop_front() else {
            break;
        };
        spin::poll_for(&device.device, spin::TRANSFER, || mapped.is_set());
        mapped.wait("a download")?;
        let read = read_mapped(&back, &mut out[offset..offset + n], "a download");
        back.unmap();
        read?;
        // A slot that is not the last is whole, so it holds any later one.
        if i + shape.slots < plan.len() {
            let mapped = enqueue(i + shape.slots, &back)?;
            flight.push_back((back, mapped));
        } else {
            staging.download_idle(back);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::chunks;

    #[test]
    fn a_download_slot_is_a_part_of_the_transfer_within_bounds() {
        use super::{MIN_DOWNLOAD_SLOT, download_slot};
        let mut rng = rand::rng();
        for _ in 0..2000 {
            let slot = rng.random_range(1..=4096usize) << 16;
            let slots = rng.random_range(2..=16);
            let len = rng.random_range(1..=slot * 20);
            let got = download_slot(len, slot, slots);
            let bounds = format!("len {len} slot {slot} slots {slots}: {got}");
            assert!(got.is_multiple_of(64 << 10), "{bounds}");
            assert!(
                got <= slot && got >= MIN_DOWNLOAD_SLOT.min(slot),
                "{bounds}"
            );
            // Within bounds, `slots` parts at most cover it, and no fewer
            // than `slots` whole ones would.
            if got > MIN_DOWNLOAD_SLOT.min(slot) && got < slot {
                assert!(
                    got * slots >= len && (got - (64 << 10)) * slots < len,
                    "{bounds}"
                );
            }
        }
    }

    #[test]
    fn chunks_cover_the_transfer_in_order_and_only_the_last_is_short() {
        let mut rng = rand::rng();
        for _ in 0..2000 {
            let slot = rng.random_range(1..=64usize) << 4;
            let len = rng.random_range(0..=slot * 12);
            let plan = chunks(len, slot);
            let mut next = 0;
            for (i, &(offset, n)) in plan.iter().enumerate() {
                assert_eq!(offset, next, "len {len} slot {slot}: {plan:?}");
                assert!(n > 0 && n <= slot, "len {len} slot {slot}: {plan:?}");
                assert!(
                    n == slot || i + 1 == plan.len(),
                    "len {len} slot {slot}: {plan:?}"
                );
                next += n;
            }
            assert_eq!(next, len, "len {len} slot {slot}: {plan:?}");
        }
    }
}
