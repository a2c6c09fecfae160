//! The thread that ends a collective whose peer is gone.
//!
//! A collective's host call returns once its kernels are enqueued; a peer
//! that died (or never makes the same call) leaves those kernels waiting
//! on the GPU, and a program that syncs its stream would wait with them.
//! As torch's ProcessGroupNCCL does, one thread per communicator looks
//! every [`TICK`] at NCCL's asynchronous errors and at the events recorded
//! after each collective: an error, or an event not complete by its
//! deadline (enqueue time + the communicator's timeout), aborts the
//! communicator (`ncclCommAbort` stops its kernels, so the sync returns)
//! and keeps the error for each device's next sync and for every later
//! call on the communicator.
//!
//! It takes the communicator's lock for each look, so it never calls into
//! NCCL while another thread does (NCCL forbids that, abort included).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use unigpu_cuda_sys::nccl::Api;

use super::comm::{State, abort_all, comm_status, lock};
use crate::CudaDevice;
use crate::error::{Result, SafeError};

/// How often the watchdog looks (torch's watchdog sleeps 100 ms too). An
/// error is noticed at most this long after it happens.
pub(super) const TICK: Duration = Duration::from_millis(100);

/// The running thread; dropping this stops and joins it.
pub(super) struct Watchdog {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching `state`, the communicator of `devices` (ranks
    /// `ranks`, for the error text).
    pub(super) fn start(
        api: &'static Api,
        devices: Vec<CudaDevice>,
        state: Arc<Mutex<State>>,
        ranks: String,
    ) -> Result<Watchdog> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("unigpu-nccl-watchdog".into())
            .spawn(move || watch(api, &devices, &state, &stopped, &ranks))
            .map_err(|e| SafeError::Unsupported {
                what: format!("could not start the communicator's watchdog thread: {e}"),
            })?;
        Ok(Watchdog {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (flag, wake) = &*self.stop;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // The loop never panics; a panic would already have been
            // reported on stderr, and a Drop must not raise it again.
            let _ = thread.join();
        }
    }
}

/// The loop: look, then sleep a tick unless told to stop; ends when
/// stopped or once the communicator is aborted (nothing left to watch).
fn watch(
    api: &'static Api,
    devices: &[CudaDevice],
    state: &Mutex<State>,
    stop: &(Mutex<bool>, Condvar),
    ranks: &str,
) {
    let (flag, wake) = stop;
    let mut stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if *stopped {
            return;
        }
        stopped = wake
            .wait_timeout(stopped, TICK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if *stopped {
            return;
        }
        if let Some(why) = look(api, state, ranks) {
            let mut s = lock(state);
            if s.failed() {
                return;
            }
            // The error is kept before the abort: the abort ends the
            // kernels a sync may be waiting on, and that sync's check
            // must find it.
            for device in devices {
                device.defer_err(why.clone());
            }
            abort_all(api, devices, &mut s, why);
            return;
        }
        if lock(state).failed() {
            return;
        }
    }
}

/// One look: the error that must abort the communicator, if any.
fn look(api: &Api, state: &Mutex<State>, ranks: &str) -> Option<SafeError> {
    let mut s = lock(state);
    if s.failed() {
        return None;
    }
    for comm in s.live_handles() {
        if let Err(e) = comm_status(api, comm, "a collective (seen by the watchdog)") {
            return Some(e);
        }
    }
    // A query that fails keeps its event; the deadline below still ends it.
    let _ = s.forget_completed();
    let now = Instant::now();
    let late = s.pending.iter().find(|p| p.deadline <= now)?;
    let after = late.deadline.saturating_duration_since(late.enqueued);
    Some(SafeError::Timeout {
        what: format!(
            "a collective of ranks {ranks} did not finish (a peer rank stopped, or never called \
             the same collective); the watchdog aborted the communicator"
        ),
        after,
    })
}
