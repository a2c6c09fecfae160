//! How the nonblocking communicator's polls wait between looks.
//!
//! A nonblocking communicator enqueues every group from a thread NCCL
//! starts for it, so `ncclGroupEnd` returns "in progress" and the work
//! reaches the stream 40–260 µs later on 2 × H200 (the same in raw NCCL:
//! bench/probes/nccl_group.cu; a blocking communicator takes 14 µs, which
//! is why collectives go to blocking handles when NCCL connects at init:
//! comm.rs). A microsecond the host sleeps past that
//! is one the GPU may sit idle before the next call, so a poll yields the
//! core without sleeping for the first millisecond, then sleeps, doubling
//! up to a cap, for the long waits (a rank still connecting, a peer that
//! never comes) that a deadline ends.

use std::time::{Duration, Instant};

/// Yield without sleeping for this long after the first look.
const SPIN: Duration = Duration::from_millis(1);
/// The first sleep after spinning, doubled on each later look.
const FIRST_SLEEP: Duration = Duration::from_micros(5);
/// The longest sleep between two looks.
const MAX_SLEEP: Duration = Duration::from_micros(200);

/// One poll loop's pacing: `pause()` between two looks.
pub(super) struct Backoff {
    started: Instant,
    sleep: Duration,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            sleep: FIRST_SLEEP,
        }
    }

    pub(super) fn pause(&mut self) {
        if self.started.elapsed() < SPIN {
            std::thread::yield_now();
            return;
        }
        std::thread::sleep(self.sleep);
        self.sleep = (self.sleep * 2).min(MAX_SLEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_grow_to_the_cap_after_the_spin() {
        let mut b = Backoff::new();
        let t = Instant::now();
        while t.elapsed() < SPIN * 2 {
            b.pause();
        }
        for _ in 0..10 {
            b.pause();
        }
        assert_eq!(b.sleep, MAX_SLEEP);
    }
}
