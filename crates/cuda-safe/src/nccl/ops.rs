//! The collectives and send/recv, one call per local rank in one NCCL
//! group, each on its rank's stream; the parts are this crate's buffers
//! or another library's memory (`parts.rs`).

use std::ffi::{c_int, c_void};
use std::time::Instant;

use unigpu_cuda_sys::nccl::{Api, Status, ncclComm_t, ncclRedOp_t};

use super::comm::{Handle, NcclComm, Pending};
use super::parts::{CollectivePart, OnStream, PointToPoint};
use super::{check, data_type};
use crate::Element;
use crate::error::{Result, SafeError};
use crate::uses::UseEnd;
pub use unigpu_core::ReduceOp;

/// NCCL's number for a reduction (`unigpu-core`'s [`ReduceOp`]).
fn raw_op(op: ReduceOp) -> c_int {
    (match op {
        ReduceOp::Sum => ncclRedOp_t::ncclSum,
        ReduceOp::Max => ncclRedOp_t::ncclMax,
        ReduceOp::Min => ncclRedOp_t::ncclMin,
        ReduceOp::Avg => ncclRedOp_t::ncclAvg,
    }) as c_int
}

/// One NCCL call of a group: its rank, stream and buffers.
struct Call<'s> {
    local: usize,
    stream: OnStream<'s>,
    send: u64,
    recv: u64,
    count: usize,
    peer: c_int,
    /// For send/recv: whether this call sends.
    sends: bool,
}

impl NcclComm {
    /// Element-wise reduction over every rank; each rank gets the result.
    /// Every part has the same length (send and receive alike).
    pub fn all_reduce<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &mut [P],
        op: ReduceOp,
    ) -> Result<()> {
        let count = self.common_len(parts, "all_reduce", |recv| recv)?;
        let (dt, op) = (data_type::<T>(), raw_op(op));
        self.collective(parts, "ncclAllReduce", count, |api, c, comm| {
            // SAFETY: `c` holds the rank's buffers of `count` elements,
            // ordered on its stream (`collective`).
            unsafe {
                (api.all_reduce)(
                    ptr(c.send),
                    ptr_mut(c.recv),
                    c.count,
                    dt,
                    op,
                    comm,
                    c.stream.cu_stream(),
                )
            }
        })
    }

    /// Rank `root`'s elements to every rank. Every part has the same
    /// length; the root's `send` (or, in place, `recv`) is the source.
    pub fn broadcast<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &mut [P],
        root: usize,
    ) -> Result<()> {
        self.check_rank("broadcast root", root)?;
        let count = self.common_len(parts, "broadcast", |recv| recv)?;
        let dt = data_type::<T>();
        self.collective(parts, "ncclBroadcast", count, |api, c, comm| {
            // SAFETY: as in `all_reduce`.
            unsafe {
                (api.broadcast)(
                    ptr(c.send),
                    ptr_mut(c.recv),
                    c.count,
                    dt,
                    root as c_int,
                    comm,
                    c.stream.cu_stream(),
                )
            }
        })
    }

    /// Every rank's `send` (n elements), concatenated in rank order into
    /// every rank's `recv` (n × world size elements).
    pub fn all_gather<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &mut [P],
    ) -> Result<()> {
        let world = self.world_size();
        let count = self.common_len(parts, "all_gather", |recv| recv / world)?;
        self.need_send(parts, "all_gather")?;
        self.check_split(
            parts,
            "all_gather (recv = world size × send)",
            count,
            |send, recv| (send, recv / world),
        )?;
        let dt = data_type::<T>();
        self.collective(parts, "ncclAllGather", count, |api, c, comm| {
            // SAFETY: as in `all_reduce`; `recv` holds `count × world`.
            unsafe {
                (api.all_gather)(
                    ptr(c.send),
                    ptr_mut(c.recv),
                    c.count,
                    dt,
                    comm,
                    c.stream.cu_stream(),
                )
            }
        })
    }

    /// The element-wise reduction of every rank's `send` (n × world size
    /// elements), of which rank r gets the r-th block of n in `recv`.
    pub fn reduce_scatter<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &mut [P],
        op: ReduceOp,
    ) -> Result<()> {
        let count = self.common_len(parts, "reduce_scatter", |recv| recv)?;
        self.need_send(parts, "reduce_scatter")?;
        let world = self.world_size();
        self.check_split(
            parts,
            "reduce_scatter (send = world size × recv)",
            count,
            |send, recv| (send / world, recv),
        )?;
        let (dt, op) = (data_type::<T>(), raw_op(op));
        self.collective(parts, "ncclReduceScatter", count, |api, c, comm| {
            // SAFETY: as in `all_reduce`; `send` holds `count × world`.
            unsafe {
                (api.reduce_scatter)(
                    ptr(c.send),
                    ptr_mut(c.recv),
                    c.count,
                    dt,
                    op,
                    comm,
                    c.stream.cu_stream(),
                )
            }
        })
    }

    /// Point-to-point transfers, all in one group: a send on one rank
    /// pairs with a receive of the same length on its peer (which may be a
    /// rank of this process, in the same call, or of another process).
    pub fn send_recv<'a, T: Element, P: PointToPoint<'a, T>>(&self, ops: &mut [P]) -> Result<()> {
        let mut state = self.usable()?;
        for op in ops.iter() {
            let (local, peer) = op.ranks();
            self.check_local(local, op.stream())?;
            self.check_rank("send/recv peer", peer)?;
        }
        let mut ends = Vec::with_capacity(ops.len());
        let mut calls = Vec::with_capacity(ops.len());
        for op in ops.iter_mut() {
            let side = op.side()?;
            ends.push(side.end);
            calls.push(Call {
                local: side.local,
                stream: op.stream(),
                send: if side.sends { side.address } else { 0 },
                recv: if side.sends { 0 } else { side.address },
                count: side.len,
                peer: side.peer as c_int,
                sends: side.sends,
            });
        }
        let dt = data_type::<T>();
        self.launch(
            &mut state,
            "ncclSend/ncclRecv",
            Handle::PointToPoint,
            &calls,
            ends,
            |api, c, comm| {
                // SAFETY: `c` holds one rank's memory of `count` elements,
                // ordered on its stream above.
                unsafe {
                    if c.sends {
                        (api.send)(ptr(c.send), c.count, dt, c.peer, comm, c.stream.cu_stream())
                    } else {
                        (api.recv)(
                            ptr_mut(c.recv),
                            c.count,
                            dt,
                            c.peer,
                            comm,
                            c.stream.cu_stream(),
                        )
                    }
                }
            },
        )
    }

    /// The length every part shares: `len(recv)` mapped by `count`, which
    /// must be the same for every part and match each `send`.
    fn common_len<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &[P],
        what: &'static str,
        count: impl Fn(usize) -> usize,
    ) -> Result<usize> {
        if parts.len() != self.devices().len() {
            return Err(SafeError::SizeMismatch {
                what: "collective parts (one per local rank)",
                expected: self.devices().len(),
                actual: parts.len(),
            });
        }
        let n = count(parts[0].lens().1);
        for p in parts.iter() {
            let len = count(p.lens().1);
            if len != n {
                return Err(SafeError::SizeMismatch {
                    what,
                    expected: n,
                    actual: len,
                });
            }
        }
        Ok(n)
    }

    fn need_send<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &[P],
        what: &'static str,
    ) -> Result<()> {
        if parts.iter().any(|p| p.lens().0.is_none()) {
            return Err(SafeError::Unsupported {
                what: format!("{what} in place: give each rank a send buffer"),
            });
        }
        Ok(())
    }

    /// Checks `(send, recv)` lengths, as `split` maps them, both equal
    /// `count`, and that the split is exact.
    fn check_split<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &[P],
        what: &'static str,
        count: usize,
        split: impl Fn(usize, usize) -> (usize, usize),
    ) -> Result<()> {
        let world = self.world_size();
        for p in parts {
            let (send_len, recv_len) = p.lens();
            let send_len = send_len.unwrap_or(0);
            let (send, recv) = split(send_len, recv_len);
            let exact = send_len.max(recv_len) == world * send_len.min(recv_len);
            if send != count || recv != count || !exact {
                return Err(SafeError::SizeMismatch {
                    what,
                    expected: world * send_len.min(recv_len),
                    actual: send_len.max(recv_len),
                });
            }
        }
        Ok(())
    }

    fn check_rank(&self, what: &'static str, rank: usize) -> Result<()> {
        if rank < self.world_size() {
            return Ok(());
        }
        Err(SafeError::Unsupported {
            what: format!(
                "{what} {rank} is not a rank of this communicator (0..{})",
                self.world_size()
            ),
        })
    }

    fn check_local(&self, local: usize, stream: OnStream<'_>) -> Result<()> {
        match self.devices().get(local) {
            Some(d) if d == stream.device() => Ok(()),
            Some(_) => Err(SafeError::DeviceMismatch {
                what: "a collective's stream is not its rank's device",
            }),
            None => Err(SafeError::Unsupported {
                what: format!(
                    "local rank {local}: this process has {} rank(s) of the communicator",
                    self.devices().len()
                ),
            }),
        }
    }

    /// Orders each part's memory on its stream, then launches one call
    /// per part in one group.
    fn collective<'a, T: Element, P: CollectivePart<'a, T>>(
        &self,
        parts: &mut [P],
        name: &'static str,
        count: usize,
        enqueue: impl Fn(&Api, &Call<'_>, ncclComm_t) -> Status,
    ) -> Result<()> {
        let mut state = self.usable()?;
        for (local, p) in parts.iter().enumerate() {
            self.check_local(local, p.stream())?;
        }
        let mut ends = Vec::with_capacity(2 * parts.len());
        let mut calls = Vec::with_capacity(parts.len());
        for (local, p) in parts.iter_mut().enumerate() {
            let (send, recv) = p.addresses(&mut ends)?;
            calls.push(Call {
                local,
                stream: p.stream(),
                send,
                recv,
                count,
                peer: 0,
                sends: false,
            });
        }
        self.launch(&mut state, name, Handle::Collective, &calls, ends, enqueue)
    }

    /// The group itself: every call, then (on nonblocking handles) a poll
    /// until NCCL has enqueued them all, with the deadline; then an event
    /// after each for `wait` and the watchdog, and the end of each
    /// stream's use.
    fn launch(
        &self,
        state: &mut super::comm::State,
        name: &'static str,
        handle: Handle,
        calls: &[Call<'_>],
        ends: Vec<UseEnd>,
        enqueue: impl Fn(&Api, &Call<'_>, ncclComm_t) -> Status,
    ) -> Result<()> {
        for c in calls {
            c.stream.refuse_capture()?;
        }
        let api = self.api();
        let mut failed = None;
        // SAFETY: no communicator involved.
        unsafe {
            check(
                api,
                "ncclGroupStart",
                (api.group_start)(),
                std::ptr::null_mut(),
            )
        }?;
        let mut blocking = false;
        for c in calls {
            if let Err(e) = c.stream.bind() {
                failed = Some(e);
                break;
            }
            let comm;
            (comm, blocking) = Self::handle(state, c.local, handle);
            let status = enqueue(api, c, comm);
            // SAFETY: a live handle (the state is usable).
            if let Err(e) = unsafe { check(api, name, status, comm) } {
                failed = Some(e);
                break;
            }
        }
        // SAFETY: ends the group started above, whatever happened in it.
        let ended = unsafe { (api.group_end)() };
        // SAFETY: null communicator: the process's last error.
        let ended = unsafe { check(api, "ncclGroupEnd", ended, std::ptr::null_mut()) };
        if let Some(e) = failed.or(ended.err()) {
            self.abort_with(state, e.clone());
            return Err(e);
        }
        let enqueued = Instant::now();
        if !blocking {
            let what = format!(
                "{name}: NCCL did not enqueue the work (a peer rank never joined it); the \
                 communicator was aborted"
            );
            self.settle(state, name, enqueued + self.timeout(), &what)?;
        }
        // What `wait` and the watchdog poll: an event after each call,
        // less those done.
        let _ = state.forget_completed();
        for c in calls {
            let event = c.stream.device().events().take(false)?;
            c.stream.record(&event)?;
            state.pending.push(Pending {
                event,
                enqueued,
                deadline: enqueued + self.timeout(),
            });
        }
        drop(ends);
        Ok(())
    }
}

fn ptr(address: u64) -> *const c_void {
    address as *const c_void
}

fn ptr_mut(address: u64) -> *mut c_void {
    address as *mut c_void
}
