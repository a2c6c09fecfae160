//! The communicator of one process's ranks, with deadlines on every wait.

use std::ffi::c_int;
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use unigpu_cuda_sys::nccl::{self as sys, Api, Status, ncclComm_t, ncclUniqueId};

use super::backoff::Backoff;
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

/// What every call on a communicator needs exclusively.
pub(super) struct State {
    /// One per local rank; null once aborted or destroyed.
    comms: Vec<Raw>,
    /// Why the communicator was aborted, once it was: every later call
    /// returns it.
    failed: Option<SafeError>,
    /// Recorded on each call's stream after it: the work `wait` waits for.
    pub(super) pending: Vec<PooledEvent>,
}

/// The ranks `first_rank..first_rank + devices.len()` of a communicator of
/// `world_size` ranks, one per device, all driven from this process.
///
/// Made nonblocking (`ncclConfig_t::blocking = 0`), so NCCL never waits
/// inside a call: every wait is a poll here, with a deadline (the
/// communicator's timeout). A deadline that passes, or an error NCCL
/// reports (a peer that failed), aborts the communicator
/// (`ncclCommAbort`, which also stops its kernels still waiting on the
/// GPU) and every later call returns that error.
///
/// Send + Sync: the handles are used under one mutex.
pub struct NcclComm {
    api: &'static Api,
    devices: Vec<CudaDevice>,
    first_rank: usize,
    world: usize,
    timeout: Duration,
    state: Mutex<State>,
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
        let mut failed = None;
        // SAFETY: no communicator involved.
        let started = unsafe {
            check(
                api,
                "ncclGroupStart",
                (api.group_start)(),
                std::ptr::null_mut(),
            )
        };
        started?;
        for (i, device) in devices.iter().enumerate() {
            if let Err(e) = device
                .cudarc_context()
                .bind_to_thread()
                .call("cuCtxSetCurrent")
            {
                failed = Some(e);
                break;
            }
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
            let null = std::ptr::null_mut();
            // SAFETY: null communicator: the process's last error.
            let checked = unsafe { check(api, "ncclCommInitRankConfig", status, null) };
            if let Err(e) = checked {
                failed = Some(e);
                break;
            }
        }
        // SAFETY: ends the group started above, whatever happened in it.
        let ended = unsafe { (api.group_end)() };
        // SAFETY: null communicator: the process's last error.
        let ended = unsafe { check(api, "ncclGroupEnd", ended, std::ptr::null_mut()) };
        drop(configs);
        let comm = NcclComm {
            api,
            devices: devices.to_vec(),
            first_rank,
            world: world_size,
            timeout,
            state: Mutex::new(State {
                comms: comms.into_iter().map(Raw).collect(),
                failed: None,
                pending: Vec::new(),
            }),
        };
        let mut state = comm.lock();
        if let Some(e) = failed.or(ended.err()) {
            comm.abort_with(&mut state, e.clone());
            return Err(e);
        }
        let what = format!(
            "ranks {}..{} of {world_size} waited for the others to join the communicator \
             (a rank never arrived, or stopped); the communicator was aborted",
            first_rank,
            first_rank + n
        );
        comm.settle(
            &mut state,
            "ncclCommInitRankConfig",
            Instant::now() + timeout,
            &what,
        )?;
        drop(state);
        Ok(comm)
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
        let state = self.lock();
        match &state.failed {
            Some(e) => Err(aborted(e)),
            None => Ok(state),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rank `local`'s handle (null once aborted).
    pub(super) fn raw(state: &State, local: usize) -> ncclComm_t {
        state.comms[local].0
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
        let comm = Self::raw(state, local);
        let mut status = sys::SUCCESS;
        // SAFETY: `comm` is live (not aborted: callers check `failed`);
        // `status` is a valid out-pointer.
        let got = unsafe { (self.api.comm_get_async_error)(comm, &mut status) };
        // SAFETY: as above.
        unsafe { check(self.api, "ncclCommGetAsyncError", got, comm) }?;
        // SAFETY: as above.
        unsafe { check(self.api, call, status, comm) }
    }

    /// Blocks until the collectives enqueued so far on every local rank
    /// have finished. Past `timeout`, or when NCCL reports an error (a
    /// peer that failed), the communicator is aborted and that is the
    /// error.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let mut state = self.usable()?;
        let deadline = Instant::now() + timeout;
        let mut backoff = Backoff::new();
        loop {
            for local in 0..state.comms.len() {
                if let Err(e) = self.async_status(&state, local, "a collective") {
                    self.abort_with(&mut state, e.clone());
                    return Err(e);
                }
            }
            let mut pending = std::mem::take(&mut state.pending);
            let mut query = Ok(());
            pending.retain(|e| match e.event().try_is_complete() {
                Ok(done) => !done,
                Err(err) => {
                    query = Err(err);
                    true
                }
            });
            state.pending = pending;
            query.call("cuEventQuery")?;
            if state.pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let what = format!(
                    "the collectives of ranks {}..{} did not finish (a peer rank stopped, or \
                     never called the same collective); the communicator was aborted",
                    self.first_rank,
                    self.first_rank + self.devices.len()
                );
                return Err(self.time_out(&mut state, &what));
            }
            backoff.pause();
        }
    }

    /// Aborts the communicator: its pending collectives stop, and every
    /// later call fails. For a program that gives up on a peer.
    pub fn abort(&self) {
        let mut state = self.lock();
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
        for (raw, device) in state.comms.iter_mut().zip(&self.devices) {
            if raw.0.is_null() {
                continue;
            }
            // NCCL frees the communicator whatever the status; a failed
            // bind leaves nothing better to do than try anyway.
            let _ = device.cudarc_context().bind_to_thread();
            // SAFETY: a live handle, aborted once and then forgotten.
            let _ = unsafe { (self.api.comm_abort)(raw.0) };
            raw.0 = std::ptr::null_mut();
        }
        state.pending.clear();
        state.failed.get_or_insert(why);
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
        let api = self.api;
        let timeout = self.timeout;
        let devices = self.devices.clone();
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if state.failed.is_some() {
            return; // aborted: nothing left to free
        }
        let mut state = std::mem::replace(
            state,
            State {
                comms: Vec::new(),
                failed: None,
                pending: Vec::new(),
            },
        );
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
