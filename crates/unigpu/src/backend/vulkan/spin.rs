//! Short waits, polled. A sync that sleeps until the poller thread's
//! callback wakes it pays for three threads handing over (the caller to
//! the stream's worker, the worker to the poller blocked in the driver's
//! wait, the poller back to the caller): a launch + sync round trip took
//! 73-93 µs on an H200 (docs/vulkan.md) where the GPU's part is a few.
//! CUDA's synchronize spins by default for the same reason. Here a
//! waiter first polls the device itself (so the finished work's callbacks
//! run on its own thread) and a worker with an empty queue checks it for
//! a while before it sleeps, each yielding between checks so that a
//! machine with fewer cores than threads (lavapipe runs on the CPU) loses
//! little; past the spin both block as before.

use std::time::{Duration, Instant};

/// How long a sync polls before it sleeps: longer than most short
/// kernels, short against a kernel whose time is worth a thread asleep.
pub(crate) const SYNC: Duration = Duration::from_micros(200);

/// How long a stream's worker checks its empty queue before it sleeps:
/// enough for the caller's next launch after a sync.
pub(crate) const WORKER: Duration = Duration::from_micros(50);

/// How long a transfer polls for its next staging slot before it sleeps:
/// a slot's copy takes 0.15-0.3 ms at the DMA engine's rate, and the
/// caller is blocked on the transfer anyway.
pub(crate) const TRANSFER: Duration = Duration::from_millis(2);

/// Polls `device` until `done()` or `SYNC` has passed; whether it was done.
pub(crate) fn poll_until(device: &wgpu::Device, done: impl Fn() -> bool) -> bool {
    poll_for(device, SYNC, done)
}

/// Polls `device` until `done()` or `limit` has passed; whether it was
/// done.
pub(crate) fn poll_for(device: &wgpu::Device, limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        // Runs the callbacks of finished work on this thread; an error (a
        // lost device) is the device's error handler's to report, and the
        // blocking wait after the spin returns it.
        let _ = device.poll(wgpu::PollType::Poll);
        std::thread::yield_now();
    }
}

/// Calls `next()` until it gives a value or `WORKER` has passed.
pub(crate) fn check_for<T>(mut next: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = next() {
            return Some(v);
        }
        if start.elapsed() >= WORKER {
            return None;
        }
        std::thread::yield_now();
    }
}
