//! The communicator of one process's ranks, with deadlines on every wait.

use std::ffi::c_int;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use unigpu_cuda_sys::nccl::{self as sys, Api, Status, ncclComm_t, ncclUniqueId};

use super::backoff::Backoff;
use super::watchdog::Watchdog;
use super::{api, check};
use crate::CudaDevice;
use crate::error::{Context as _, Result, SafeError};
use crate::event_pool::PooledEvent;

/// The 128 bytes every rank of one communicator must share
/// (`ncclGetUniqueId`): rank 0 makes it, a rendezvous hands it to the rest.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId(pub [u8; 128]);

impl NcclId {
    /// A new id, from NCCL (which also starts the listener the ranks will
    /// meet at). `Unsupported` when libnccl cannot be used.
    pub fn new() -> Result<NcclId> {
        let api = api()?;
        let mut raw = ncclUniqueId { internal: [0; 128] };
        // SAFETY: `raw` is a valid out-pointer; no communicator involved.
        let status = unsafe { (api.get_unique_id)(&mut raw) };
        // SAFETY: null communicator: the process's last error.
        unsafe { check(api, "ncclGetUniqueId", status, std::ptr::null_mut()) }?;
        Ok(NcclId(raw.internal.map(|b| b as u8)))
    }

    fn raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.0.map(|b| b as std::ffi::c_char),
        }
    }
}

impl fmt::Debug for NcclId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The first bytes tell ids apart; all 128 would flood a log.
        write!(f, "NcclId(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

/// A communicator handle, Send so that the state holding it may move
/// between threads (NCCL allows that; it forbids concurrent calls, which
/// the state's mutex prevents).
struct Raw(ncclComm_t);

// SAFETY: a pointer NCCL hands out for use from any thread, one call at a
// time; every use is under `NcclComm::state`'s lock.
unsafe impl Send for Raw {}

/// What every call on a communicator needs exclusively; shared with its
/// watchdog.
pub(super) struct State {
    /// One per local rank, nonblocking; null once aborted or destroyed.
    comms: Vec<Raw>,
    /// One per local rank, blocking, split from `comms` at init: where
    /// the collectives go when NCCL connects at init (see [`NcclComm`]);
    /// empty otherwise. Null once aborted or destroyed.
    blocking: Vec<Raw>,
    /// Why the communicator was aborted, once it was: every later call
    /// returns it.
    failed: Option<SafeError>,
    /// Recorded on each call's stream after it: the work `wait` waits for
    /// and the watchdog watches, each with the time it must end by.
    pub(super) pending: Vec<Pending>,
}

/// An event after a collective and when it must have completed.
pub(super) struct Pending {
    pub(super) event: PooledEvent,
    pub(super) enqueued: Instant,
    pub(super) deadline: Instant,
}

/// Which of a rank's two handles a call goes to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Handle {
    /// The collectives: the blocking handle when there is one.
    Collective,
    /// Send/receive (whose connections NCCL always makes at first use),
    /// and everything when there is no blocking handle: the nonblocking one.
    PointToPoint,
}

/// The ranks `first_rank..first_rank + devices.len()` of a communicator of
/// `world_size` ranks, one per device, all driven from this process.
///
/// Every wait has a deadline (the communicator's timeout): a rank that
/// never arrives, or dies, is an error and an aborted communicator
/// (`ncclCommAbort`, which also stops its kernels still waiting on the
/// GPU), never a hang; every later call returns that error.
///
/// - Init, send/receive and finalize run on nonblocking communicators
///   (`ncclConfig_t::blocking = 0`): NCCL never waits inside those calls,
///   each wait is a poll here, with the deadline.
/// - Collectives run on blocking communicators split from those at init
///   (`ncclCommSplit`, itself nonblocking under the deadline), when NCCL
///   makes every connection during init (`NCCL_RUNTIME_CONNECT=0`, set by
///   unigpu-cuda-sys before libnccl loads): a blocking collective then
///   only enqueues its kernels, never waits for a peer on the host, and
///   costs 13-18 µs a call against 54-145 µs through a nonblocking one
///   (NCCL starts a thread per group there; docs/multi-gpu.md). Without
///   connections at init, collectives stay on the nonblocking handles.
/// - A watchdog thread, as torch's ProcessGroupNCCL has, checks every
///   100 ms for NCCL's asynchronous errors and for collectives still
///   running past their deadline, and aborts the communicator then,
///   keeping the error for the devices' next sync: a program that only
///   syncs its streams gets the error instead of waiting forever on a
///   kernel whose peer died.
///
/// Send + Sync: the handles are used under one mutex.
pub struct NcclComm {
    api: &'static Api,
    devices: Vec<CudaDevice>,
    first_rank: usize,
    world: usize,
    timeout: Duration,
    state: Arc<Mutex<State>>,
    /// Stopped and joined first when the communicator drops.
    watchdog: Option<Watchdog>,
}

impl fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NcclComm")
            .field(
                "ranks",
                &(self.first_rank..self.first_rank + self.devices.len()),
            )
            .field("world", &self.world)
            .field(
                "devices",
                &self
                    .devices
                    .iter()
                    .map(CudaDevice::ordinal)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl NcclComm {
    /// Joins the communicator named by `id` as ranks `first_rank..` (one
    /// per device, in order), out of `world_size`. Returns once every rank
    /// of the world has joined, or fails with `Timeout` after `timeout`
    /// (a rank never arrived) having aborted what was made.
    pub fn init(
        devices: &[CudaDevice],
        id: &NcclId,
        world_size: usize,
        first_rank: usize,
        timeout: Duration,
    ) -> Result<NcclComm> {
        let api = api()?;
        check_ranks(devices, world_size, first_rank)?;
        let n = devices.len();
        let mut comms = vec![std::ptr::null_mut(); n];
        // One config per rank, alive until the group ends.
        let mut configs = vec![sys::config(false); n];
        for c in &mut configs {
            // The blocking children get resources of their own, so that
            // freeing one (an abort) never touches its parent.
            c.splitShare = 0;
        }
        let made = group_per_rank(api, devices, |i| {
            // SAFETY: `comms[i]` and `configs[i]` are valid for the call
            // (and until the group ends); NCCL takes the device from the
            // context just made current; the ranks were checked above.
            let status = unsafe {
                (api.comm_init_rank_config)(
                    &mut comms[i],
                    world_size as c_int,
                    id.raw(),
                    (first_rank + i) as c_int,
                    &mut configs[i],
                )
            };
            // SAFETY: null communicator: the process's last error.
            unsafe { check(api, "ncclCommInitRankConfig", status, std::ptr::null_mut()) }
        });
        drop(configs);
        let mut comm = NcclComm {
            api,
            devices: devices.to_vec(),
            first_rank,
            world: world_size,
            timeout,
            state: Arc::new(Mutex::new(State {
                comms: comms.into_iter().map(Raw).collect(),
                blocking: Vec::new(),
                failed: None,
                pending: Vec::new(),
            })),
            watchdog: None,
        };
        let mut state = lock(&comm.state);
        if let Err(e) = made {
            comm.abort_with(&mut state, e.clone());
            return Err(e);
        }
        let what = format!(
            "ranks {}..{} of {world_size} waited for the others to join the communicator \
             (a rank never arrived, or stopped); the communicator was aborted",
            first_rank,
            first_rank + n
        );
        let deadline = Instant::now() + timeout;
        comm.settle(&mut state, "ncclCommInitRankConfig", deadline, &what)?;
        comm.split_blocking(&mut state, deadline)?;
        drop(state);
        comm.watchdog = Some(Watchdog::start(
            api,
            comm.devices.clone(),
            Arc::clone(&comm.state),
            comm.ranks_text(),
        )?);
        Ok(comm)
    }

    /// Splits a blocking communicator off each rank's nonblocking one
    /// (same ranks), by `deadline`. Every process splits whenever the
    /// library can (so that all ranks call `ncclCommSplit` alike); the
    /// blocking handles are kept only when NCCL connects at init.
    fn split_blocking(&self, state: &mut State, deadline: Instant) -> Result<()> {
        let lib = unigpu_cuda_sys::nccl::nccl();
        let Some(split) = self.api.comm_split else {
            return Ok(());
        };
        let n = self.devices.len();
        // NCCL writes the children from its own thread when the split
        // ends; they stay here until then (and are leaked if it never
        // does, rather than freed under NCCL's feet).
        let mut children = Box::new(vec![std::ptr::null_mut(); n]);
        let mut configs = vec![sys::config(true); n];
        let made = group_per_rank(self.api, &self.devices, |i| {
            let parent = Self::raw(state, i);
            // SAFETY: a live parent (just initialised); `children[i]` and
            // `configs[i]` outlive the split (see above); color 0 and the
            // rank as key keep every rank in the same order.
            let status = unsafe {
                split(
                    parent,
                    0,
                    (self.first_rank + i) as c_int,
                    &mut children[i],
                    &mut configs[i],
                )
            };
            // SAFETY: a live parent.
            unsafe { check(self.api, "ncclCommSplit", status, parent) }
        });
        if let Err(e) = made {
            Box::leak(children);
            self.abort_with(state, e.clone());
            return Err(e);
        }
        let what = format!(
            "ranks {} waited for the others to split the communicator (a rank stopped); the \
             communicator was aborted",
            self.ranks_text()
        );
        if let Err(e) = self.settle(state, "ncclCommSplit", deadline, &what) {
            Box::leak(children);
            return Err(e);
        }
        drop(configs);
        state.blocking = children.iter().map(|&c| Raw(c)).collect();
        if state.blocking.iter().any(|c| c.0.is_null()) {
            // Those made are aborted with the rest.
            let e = SafeError::Unsupported {
                what: "ncclCommSplit ended without a communicator".into(),
            };
            self.abort_with(state, e.clone());
            return Err(e);
        }
        if !lib.connects_at_init {
            // Connections would be made at the first collective, a host
            // wait on peers with no deadline: keep collectives nonblocking.
            abort_handles(self.api, &self.devices, &mut state.blocking);
            state.blocking.clear();
        }
        Ok(())
    }

    /// `a..b`, this process's ranks.
    fn ranks_text(&self) -> String {
        format!(
            "{}..{}",
            self.first_rank,
            self.first_rank + self.devices.len()
        )
    }

    /// Whether collectives go to blocking handles (13-18 µs a call) rather
    /// than the nonblocking ones (54-145 µs).
    pub fn blocking_collectives(&self) -> bool {
        !lock(&self.state).blocking.is_empty()
    }

    /// Ranks in the whole communicator.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// The rank of this process's first device.
    pub fn first_rank(&self) -> usize {
        self.first_rank
    }

    /// The devices of this process's ranks, in rank order.
    pub fn devices(&self) -> &[CudaDevice] {
        &self.devices
    }

    /// How long a wait may take before the communicator is aborted.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(super) fn api(&self) -> &'static Api {
        self.api
    }

    /// The state, unless the communicator was aborted: then the error
    /// that aborted it.
    pub(super) fn usable(&self) -> Result<MutexGuard<'_, State>> {
        let state = lock(&self.state);
        match &state.failed {
            Some(e) => Err(aborted(e)),
            None => Ok(state),
        }
    }

    /// Rank `local`'s nonblocking handle (null once aborted).
    pub(super) fn raw(state: &State, local: usize) -> ncclComm_t {
        state.comms[local].0
    }

    /// Rank `local`'s handle for `handle`, and whether it is blocking.
    pub(super) fn handle(state: &State, local: usize, handle: Handle) -> (ncclComm_t, bool) {
        match state.blocking.get(local) {
            Some(raw) if handle == Handle::Collective => (raw.0, true),
            _ => (state.comms[local].0, false),
        }
    }

    /// Polls every rank until NCCL no longer reports work in progress;
    /// aborts on an error, or once `deadline` passes (`Timeout`, saying
    /// `what`).
    pub(super) fn settle(
        &self,
        state: &mut State,
        call: &'static str,
        deadline: Instant,
        what: &str,
    ) -> Result<()> {
        for local in 0..state.comms.len() {
            let mut backoff = Backoff::new();
            loop {
                match self.async_status(state, local, call) {
                    Ok(s) if s == sys::IN_PROGRESS => {
                        if Instant::now() >= deadline {
                            return Err(self.time_out(state, what));
                        }
                        backoff.pause();
                    }
                    Ok(_) => break,
                    Err(e) => {
                        self.abort_with(state, e.clone());
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// NCCL's state of rank `local`: success, in progress, or its error.
    pub(super) fn async_status(
        &self,
        state: &State,
        local: usize,
        call: &'static str,
    ) -> Result<Status> {
        comm_status(self.api, Self::raw(state, local), call)
    }

    /// Blocks until the collectives enqueued so far on every local rank
    /// have finished. Past `timeout`, or when NCCL reports an error (a
    /// peer that failed), the communicator is aborted and that is the
    /// error.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let mut state = self.usable()?;
        self.drain(&mut state, Instant::now() + timeout)
    }

    /// `wait` on a state already locked.
    fn drain(&self, state: &mut State, deadline: Instant) -> Result<()> {
        let mut backoff = Backoff::new();
        loop {
            // Events first, then NCCL's errors: work that ended because
            // NCCL gave up on it is an error, not a completion.
            state.forget_completed().call("cuEventQuery")?;
            let errors: Result<Vec<_>> = state
                .live_handles()
                .map(|c| comm_status(self.api, c, "a collective"))
                .collect();
            if let Err(e) = errors {
                self.abort_with(state, e.clone());
                return Err(e);
            }
            if state.pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let what = format!(
                    "the collectives of ranks {} did not finish (a peer rank stopped, or never \
                     called the same collective); the communicator was aborted",
                    self.ranks_text()
                );
                return Err(self.time_out(state, &what));
            }
            backoff.pause();
        }
    }

    /// Aborts the communicator: its pending collectives stop, and every
    /// later call fails. For a program that gives up on a peer.
    pub fn abort(&self) {
        let mut state = lock(&self.state);
        if state.failed.is_none() {
            self.abort_with(
                &mut state,
                SafeError::Unsupported {
                    what: "the communicator was aborted by the program".into(),
                },
            );
        }
    }

    fn time_out(&self, state: &mut State, what: &str) -> SafeError {
        let e = SafeError::Timeout {
            what: what.to_string(),
            after: self.timeout,
        };
        self.abort_with(state, e.clone());
        e
    }

    /// Aborts every rank still alive and keeps `why` for later calls.
    pub(super) fn abort_with(&self, state: &mut State, why: SafeError) {
        abort_all(self.api, &self.devices, state, why);
    }
}

/// One NCCL group of one call per local rank (`call(i)`), each made with
/// its device's context current: the first error of a call or of the
/// group's end. The group ends whatever happened in it.
fn group_per_rank(
    api: &Api,
    devices: &[CudaDevice],
    mut call: impl FnMut(usize) -> Result<Status>,
) -> Result<()> {
    let null = std::ptr::null_mut();
    // SAFETY: no communicator involved.
    unsafe { check(api, "ncclGroupStart", (api.group_start)(), null) }?;
    let mut failed = None;
    for (i, device) in devices.iter().enumerate() {
        let bound = device
            .cudarc_context()
            .bind_to_thread()
            .call("cuCtxSetCurrent");
        if let Err(e) = bound.and_then(|()| call(i)) {
            failed = Some(e);
            break;
        }
    }
    // SAFETY: ends the group started above.
    let ended = unsafe { (api.group_end)() };
    // SAFETY: null communicator: the process's last error.
    let ended = unsafe { check(api, "ncclGroupEnd", ended, null) };
    match failed {
        Some(e) => Err(e),
        None => ended.map(drop),
    }
}

/// NCCL's state of `comm`: success, in progress, or its error.
pub(super) fn comm_status(api: &Api, comm: ncclComm_t, call: &'static str) -> Result<Status> {
    let mut status = sys::SUCCESS;
    // SAFETY: `comm` is live (callers hold the state's lock and take it
    // from a state that is not aborted); `status` is a valid out-pointer.
    let got = unsafe { (api.comm_get_async_error)(comm, &mut status) };
    // SAFETY: as above.
    unsafe { check(api, "ncclCommGetAsyncError", got, comm) }?;
    // SAFETY: as above.
    unsafe { check(api, call, status, comm) }
}

/// The state, whoever poisoned the lock (every update leaves it whole).
pub(super) fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Aborts every handle still alive (blocking ones first: they may have
/// kernels waiting), forgets the pending work and keeps `why` for later
/// calls.
pub(super) fn abort_all(api: &Api, devices: &[CudaDevice], state: &mut State, why: SafeError) {
    abort_handles(api, devices, &mut state.blocking);
    abort_handles(api, devices, &mut state.comms);
    state.pending.clear();
    state.failed.get_or_insert(why);
}

/// `ncclCommAbort` on each live handle (one per device, in order), which
/// then reads null.
fn abort_handles(api: &Api, devices: &[CudaDevice], handles: &mut [Raw]) {
    for (raw, device) in handles.iter_mut().zip(devices) {
        if raw.0.is_null() {
            continue;
        }
        // NCCL frees the communicator whatever the status; a failed
        // bind leaves nothing better to do than try anyway.
        let _ = device.cudarc_context().bind_to_thread();
        // SAFETY: a live handle, aborted once and then forgotten; no
        // other call is inside it (every call holds the state's lock).
        let _ = unsafe { (api.comm_abort)(raw.0) };
        raw.0 = std::ptr::null_mut();
    }
}

impl State {
    /// Whether the communicator was aborted.
    pub(super) fn failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Drops the pending events that have completed; a failed query
    /// keeps its event.
    pub(super) fn forget_completed(
        &mut self,
    ) -> std::result::Result<(), cudarc::driver::DriverError> {
        let mut query = Ok(());
        self.pending
            .retain(|p| match p.event.event().try_is_complete() {
                Ok(done) => !done,
                Err(err) => {
                    query = Err(err);
                    true
                }
            });
        query
    }

    fn empty() -> State {
        State {
            comms: Vec::new(),
            blocking: Vec::new(),
            failed: None,
            pending: Vec::new(),
        }
    }

    /// Every live handle (nonblocking, then blocking).
    pub(super) fn live_handles(&self) -> impl Iterator<Item = ncclComm_t> + '_ {
        self.comms
            .iter()
            .chain(&self.blocking)
            .map(|r| r.0)
            .filter(|c| !c.is_null())
    }
}

/// What a call on an aborted communicator returns.
fn aborted(why: &SafeError) -> SafeError {
    SafeError::Unsupported {
        what: format!("the communicator was aborted earlier, and cannot be used: {why}"),
    }
}

fn check_ranks(devices: &[CudaDevice], world: usize, first_rank: usize) -> Result<()> {
    let n = devices.len();
    if n == 0 || world == 0 || first_rank + n > world || world > c_int::MAX as usize {
        return Err(SafeError::Unsupported {
            what: format!(
                "ranks {first_rank}..{} in a world of {world}: a communicator needs at least one \
                 device, and its ranks within 0..world",
                first_rank + n
            ),
        });
    }
    for (i, a) in devices.iter().enumerate() {
        if devices[..i].iter().any(|b| b.ordinal() == a.ordinal()) {
            return Err(SafeError::Unsupported {
                what: format!(
                    "device {} is given twice: each rank needs a device of its own (NCCL \
                     hangs on two ranks of one device)",
                    a.ordinal()
                ),
            });
        }
    }
    Ok(())
}

impl Drop for NcclComm {
    /// Finalizes every rank (waiting, up to the timeout, for its pending
    /// work), then destroys it; aborts instead when that fails or times
    /// out, keeping the error for the devices' next sync. Never panics.
    fn drop(&mut self) {
        // The watchdog first: nothing else may touch the state then.
        drop(self.watchdog.take());
        let api = self.api;
        let timeout = self.timeout;
        let devices = self.devices.clone();
        let mut state = {
            let mut guard = lock(&self.state);
            if guard.failed.is_some() {
                return; // aborted: nothing left to free
            }
            std::mem::replace(&mut *guard, State::empty())
        };
        if !state.blocking.is_empty() {
            // A blocking finalize would wait without a deadline: wait for
            // their work here, with one, then free them locally (abort,
            // which talks to no peer, on handles with nothing running).
            if let Err(e) = self.drain(&mut state, Instant::now() + timeout) {
                for device in &devices {
                    device.defer_err(e.clone());
                }
                return;
            }
            abort_handles(api, &devices, &mut state.blocking);
            state.blocking.clear();
        }
        let mut error = None;
        // SAFETY: no communicator involved.
        unsafe { (api.group_start)() };
        for (raw, device) in state.comms.iter().zip(&devices) {
            let _ = device.cudarc_context().bind_to_thread();
            // SAFETY: a live handle (not aborted).
            let status = unsafe { (api.comm_finalize)(raw.0) };
            // SAFETY: as above.
            if let Err(e) = unsafe { check(api, "ncclCommFinalize", status, raw.0) } {
                error.get_or_insert(e);
            }
        }
        // SAFETY: ends the group started above.
        let ended = unsafe { (api.group_end)() };
        // SAFETY: null communicator: the process's last error.
        if let Err(e) = unsafe { check(api, "ncclGroupEnd", ended, std::ptr::null_mut()) } {
            error.get_or_insert(e);
        }
        if error.is_none() {
            let what = "finalizing the communicator (its last collectives did not finish); it \
                        was aborted instead";
            if let Err(e) = self.settle(
                &mut state,
                "ncclCommFinalize",
                Instant::now() + timeout,
                what,
            ) {
                error = Some(e);
            }
        }
        match error {
            Some(e) => {
                self.abort_with(&mut state, e.clone());
                for device in &devices {
                    device.defer_err(e.clone());
                }
            }
            None => {
                for (raw, device) in state.comms.iter().zip(&devices) {
                    let _ = device.cudarc_context().bind_to_thread();
                    // SAFETY: a finalized handle, destroyed once.
                    let status = unsafe { (api.comm_destroy)(raw.0) };
                    let null = std::ptr::null_mut();
                    // SAFETY: the handle is gone: no comm to ask.
                    let checked = unsafe { check(api, "ncclCommDestroy", status, null) };
                    if let Err(e) = checked {
                        device.defer_err(e);
                    }
                }
            }
        }
    }
}
