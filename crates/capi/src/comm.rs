//! `ug_comm`: a communicator over one rank per context (NCCL on cuda
//! contexts) and its collectives on `ug_array`s. The arrays are locked and
//! checked by the bindings' shared layer (`unigpu::binding`), as Python's
//! `Communicator` does.

use std::time::Duration;

use unigpu::binding::{self, Handle, SendRecvOp};
use unigpu::{Communicator, ReduceOp};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::array::ug_array;
use crate::context::ug_context;
use crate::locks;
use crate::status::{OrStatus, Out, Result, ug_status};

/// A group of ranks, one per GPU, that run collectives together. Made with
/// `ug_comm_local`; thread-safe (calls from several threads are taken one
/// at a time).
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct ug_comm {
    comm: Communicator,
}

/// The element-wise reduction of a collective. Inputs are `uint32_t`
/// holding one of these values.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_reduce_op {
    Sum = 0,
    Max = 1,
    Min = 2,
    /// The sum divided by the number of ranks (integers divide the integer
    /// sum, as NCCL does).
    Avg = 3,
}

fn op_arg(value: u32) -> Result<ReduceOp> {
    Ok(match value {
        0 => ReduceOp::Sum,
        1 => ReduceOp::Max,
        2 => ReduceOp::Min,
        3 => ReduceOp::Avg,
        v => {
            return Err(Failure::invalid_argument(format!(
                "`op` is {v}, not a ug_reduce_op value (UG_REDUCE_OP_SUM 0, _MAX 1, _MIN 2, _AVG 3)"
            )));
        }
    })
}

/// `n` array handles from C, with the names a refusal calls them by
/// (`"arrays[2]"`).
///
/// # Safety
///
/// `arrays` is NULL (with `n` 0) or valid for reads of `n` pointers, each
/// NULL or a live array, during `'a`.
unsafe fn arrays_arg<'a>(
    arrays: *const *const ug_array,
    n: usize,
    what: &str,
) -> Result<(Vec<&'a ug_array>, Vec<String>)> {
    // SAFETY: NULL or valid for `n` reads (the caller's promise).
    let ptrs = unsafe { runtime::slice_arg(arrays, n, what) }?;
    let mut out = Vec::with_capacity(n);
    let mut names = Vec::with_capacity(n);
    for (i, p) in ptrs.iter().enumerate() {
        let name = format!("{what}[{i}]");
        // SAFETY: NULL or live (the caller's promise).
        out.push(unsafe { runtime::handle_ref(*p, &name) }?);
        names.push(name);
    }
    Ok((out, names))
}

fn handles<'a>(arrays: &[&'a ug_array]) -> Vec<Handle<'a>> {
    arrays.iter().map(|a| a.arg()).collect()
}

fn strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// A communicator of every rank in this process, one per context: rank i
/// is `contexts[i]`, each on its own GPU, all of one backend. Only cuda
/// contexts have collectives (NCCL, loaded at run time): on other backends,
/// and on a machine without libnccl, `UG_UNSUPPORTED` with a message saying
/// what to do (or which library was looked for).
/// Contexts of different backends are `UG_CONTEXT_MISMATCH`; none is
/// `UG_SIZE_MISMATCH`.
///
/// # Safety
///
/// `contexts` is NULL (with `n` 0) or valid for reads of `n` pointers,
/// each NULL or a live context; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_local(
    contexts: *const *const ug_context,
    n: usize,
    out: *mut *mut ug_comm,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or valid for `n` reads (see # Safety).
        let ptrs = unsafe { runtime::slice_arg(contexts, n, "contexts") }?;
        let mut ctxs = Vec::with_capacity(n);
        for (i, p) in ptrs.iter().enumerate() {
            // SAFETY: NULL or live (see # Safety).
            let c: &ug_context = unsafe { runtime::handle_ref(*p, &format!("contexts[{i}]")) }?;
            ctxs.push(c.ctx.clone());
        }
        let comm = Communicator::local(&ctxs).or_status()?;
        out.write(runtime::into_handle(ug_comm { comm }));
        Ok(())
    })
}

/// Frees a communicator. NULL is a no-op. Collectives already enqueued
/// still run; wait for them first (`ug_comm_wait`).
///
/// # Safety
///
/// `comm` is NULL or a communicator from this library, not freed before
/// and not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_free(comm: *mut ug_comm) {
    // SAFETY: the caller's promise (see # Safety).
    unsafe { runtime::free_handle(comm, "ug_comm") }
}

/// The number of ranks of the communicator, over every process.
///
/// # Safety
///
/// `comm` is NULL or live; `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_world_size(comm: *const ug_comm, out: *mut usize) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        out.write(comm.comm.world_size());
        Ok(())
    })
}

/// In place: every array becomes the element-wise reduction (`op`, a
/// `ug_reduce_op` value) of the arrays of every rank. One array per local
/// rank (each on its rank's context, in any order), all of one dtype and
/// length, whole arrays (not views). Enqueued on each context's default
/// stream after the arrays' pending uses; returns once enqueued: wait with
/// `ug_comm_wait` (a context sync has no deadline).
///
/// # Safety
///
/// `comm` is NULL or live; `arrays` is NULL (with `n` 0) or valid for
/// reads of `n` pointers, each NULL or a live array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_all_reduce(
    comm: *const ug_comm,
    arrays: *const *mut ug_array,
    n: usize,
    op: u32,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        // SAFETY: NULL or valid for `n` reads of live arrays (see # Safety).
        let (arrays, names) = unsafe { arrays_arg(arrays.cast(), n, "arrays") }?;
        let op = op_arg(op)?;
        binding::all_reduce(&comm.comm, &handles(&arrays), &strs(&names), op)
            .map_err(locks::fail_call)
    })
}

/// In place: every array becomes rank `root`'s. One array per local rank,
/// as `ug_comm_all_reduce`.
///
/// # Safety
///
/// As `ug_comm_all_reduce`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_broadcast(
    comm: *const ug_comm,
    arrays: *const *mut ug_array,
    n: usize,
    root: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        // SAFETY: NULL or valid for `n` reads of live arrays (see # Safety).
        let (arrays, names) = unsafe { arrays_arg(arrays.cast(), n, "arrays") }?;
        binding::broadcast(&comm.comm, &handles(&arrays), &strs(&names), root)
            .map_err(locks::fail_call)
    })
}

/// A collective from `send` into `recv`, `n` of each (one per local rank).
///
/// # Safety
///
/// `comm` is NULL or live; `send` and `recv` are NULL (with `n` 0) or
/// valid for reads of `n` pointers, each NULL or a live array.
unsafe fn send_recv_op(
    comm: *const ug_comm,
    op: impl FnOnce() -> Result<SendRecvOp>,
    send: *const *const ug_array,
    recv: *const *mut ug_array,
    n: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        // SAFETY: NULL or valid for `n` reads of live arrays (see # Safety).
        let (send, send_names) = unsafe { arrays_arg(send, n, "send") }?;
        // SAFETY: NULL or valid for `n` reads of live arrays (see # Safety).
        let (recv, recv_names) = unsafe { arrays_arg(recv.cast(), n, "recv") }?;
        let op = op()?;
        binding::collective(
            &comm.comm,
            op,
            &handles(&send),
            &strs(&send_names),
            &handles(&recv),
            &strs(&recv_names),
        )
        .map_err(locks::fail_call)
    })
}

/// `recv` (one per local rank) gets the reduction (`op`) of every rank's
/// `send`; all one dtype and length. An array in both lists is sent from a
/// copy taken first.
///
/// # Safety
///
/// `comm` is NULL or live; `send` and `recv` are NULL (with `n` 0) or
/// valid for reads of `n` pointers, each NULL or a live array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_all_reduce_into(
    comm: *const ug_comm,
    send: *const *const ug_array,
    recv: *const *mut ug_array,
    n: usize,
    op: u32,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        send_recv_op(
            comm,
            || Ok(SendRecvOp::AllReduce(op_arg(op)?)),
            send,
            recv,
            n,
        )
    }
}

/// Every rank's `send` (m elements), concatenated in rank order, into
/// every `recv` (m × world size elements). One of each per local rank.
///
/// # Safety
///
/// As `ug_comm_all_reduce_into`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_all_gather(
    comm: *const ug_comm,
    send: *const *const ug_array,
    recv: *const *mut ug_array,
    n: usize,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe { send_recv_op(comm, || Ok(SendRecvOp::AllGather), send, recv, n) }
}

/// The reduction (`op`) of every rank's `send` (m × world size elements),
/// of which rank r's `recv` gets the r-th block of m. One of each per
/// local rank.
///
/// # Safety
///
/// As `ug_comm_all_reduce_into`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_reduce_scatter(
    comm: *const ug_comm,
    send: *const *const ug_array,
    recv: *const *mut ug_array,
    n: usize,
    op: u32,
) -> ug_status {
    // SAFETY: the caller's promises (see # Safety).
    unsafe {
        send_recv_op(
            comm,
            || Ok(SendRecvOp::ReduceScatter(op_arg(op)?)),
            send,
            recv,
            n,
        )
    }
}

/// Sends `sends[i]` to rank `to[i]` and receives into `recvs[j]` from rank
/// `from[j]`, all in one call (where both ends are ranks of this process
/// the pair must be in one call: each waits for the other). Arrays of one
/// dtype; a send and its receive of one length.
///
/// # Safety
///
/// `comm` is NULL or live; `sends` and `to` are NULL (with `n_sends` 0) or
/// valid for reads of `n_sends` values, each array NULL or live; likewise
/// `recvs` and `from` with `n_recvs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_send_recv(
    comm: *const ug_comm,
    sends: *const *const ug_array,
    to: *const usize,
    n_sends: usize,
    recvs: *const *mut ug_array,
    from: *const usize,
    n_recvs: usize,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        // SAFETY: NULL or valid for `n_sends` reads of live arrays.
        let (sends, send_names) = unsafe { arrays_arg(sends, n_sends, "sends") }?;
        // SAFETY: NULL or valid for `n_sends` reads (see # Safety).
        let to = unsafe { runtime::slice_arg(to, n_sends, "to") }?;
        // SAFETY: NULL or valid for `n_recvs` reads of live arrays.
        let (recvs, recv_names) = unsafe { arrays_arg(recvs.cast(), n_recvs, "recvs") }?;
        // SAFETY: NULL or valid for `n_recvs` reads (see # Safety).
        let from = unsafe { runtime::slice_arg(from, n_recvs, "from") }?;
        binding::send_recv(
            &comm.comm,
            &handles(&sends),
            &strs(&send_names),
            to,
            &handles(&recvs),
            &strs(&recv_names),
            from,
        )
        .map_err(locks::fail_call)
    })
}

/// Blocks until the collectives enqueued so far have finished, for at most
/// the communicator's deadline (two minutes); past it the communicator is aborted and the status is
/// `UG_COLLECTIVE`.
///
/// # Safety
///
/// `comm` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_wait(comm: *const ug_comm) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        comm.comm.wait().or_status()
    })
}

/// `ug_comm_wait` with its own deadline, in milliseconds.
///
/// # Safety
///
/// `comm` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_wait_timeout(comm: *const ug_comm, timeout_ms: u64) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        comm.comm
            .wait_timeout(Duration::from_millis(timeout_ms))
            .or_status()
    })
}

/// Gives up: stops the pending collectives; every later call on the
/// communicator fails (`UG_COLLECTIVE`). For a program that knows a peer
/// is gone.
///
/// # Safety
///
/// `comm` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_comm_abort(comm: *const ug_comm) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or live (see # Safety).
        let comm = unsafe { runtime::handle_ref(comm, "comm") }?;
        comm.comm.abort();
        Ok(())
    })
}
