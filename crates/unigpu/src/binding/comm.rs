//! The collectives of a [`Communicator`] on the bindings' arrays: the
//! arrays locked by the module's rule (an array both sent and received
//! into is sent from a copy taken first; one received into twice is
//! refused), views refused, and the one element type of the call picked
//! from the arrays, so that C and Python accept and refuse the same calls.

use super::policy::{CallError, Handle, Operand, View, with_arrays};
use crate::any_array::with_dtype;
use crate::{AnyArray, Communicator, DType, Error, GpuArray, ReduceOp, Result};

/// A collective takes whole arrays: a view (a transpose, a slice) is
/// refused before anything is locked.
fn whole(handles: &[Handle<'_>], names: &[&str]) -> std::result::Result<(), CallError> {
    for (h, name) in handles.iter().zip(names) {
        if let Some(layout) = h.layout {
            return Err(CallError::Refused {
                message: format!(
                    "`{name}` is a view (shape {:?}, strides {:?}): collectives take whole arrays; pass a contiguous copy",
                    layout.shape(),
                    layout.strides()
                ),
            });
        }
    }
    Ok(())
}

/// The element type every array of the call shares (f32 for a call with
/// none: the communicator then says how many it needs).
fn one_dtype(what: &'static str, mut dtypes: impl Iterator<Item = DType>) -> Result<DType> {
    let Some(first) = dtypes.next() else {
        return Ok(DType::F32);
    };
    match dtypes.find(|d| *d != first) {
        Some(other) => Err(Error::DTypeMismatch {
            what,
            expected: first,
            actual: other,
        }),
        None => Ok(first),
    }
}

fn typed<'g, T: crate::Element>(
    arrays: Vec<&'g AnyArray>,
    what: &'static str,
) -> Result<Vec<&'g GpuArray<T>>> {
    arrays.into_iter().map(|a| a.typed::<T>(what)).collect()
}

fn typed_mut<'g, T: crate::Element>(
    arrays: Vec<&'g mut AnyArray>,
    what: &'static str,
) -> Result<Vec<&'g mut GpuArray<T>>> {
    arrays.into_iter().map(|a| a.typed_mut::<T>(what)).collect()
}

/// The call's views as (sent, received into), each in the order given:
/// the operands are all the sends, then all the receives.
fn sent_received<'g>(
    views: Vec<View<'g>>,
    n_send: usize,
) -> (Vec<&'g AnyArray>, Vec<&'g mut AnyArray>) {
    let mut send = Vec::with_capacity(n_send);
    let mut recv = Vec::with_capacity(views.len().saturating_sub(n_send));
    for v in views {
        match v {
            View::Read(a) => send.push(a),
            View::Write(a) => recv.push(a),
        }
    }
    (send, recv)
}

fn operands<'a>(
    send: &[Handle<'a>],
    send_names: &'a [&'a str],
    recv: &[Handle<'a>],
    recv_names: &'a [&'a str],
) -> Vec<Operand<'a>> {
    send.iter()
        .zip(send_names)
        .map(|(h, n)| Operand::read(h.array, n))
        .chain(
            recv.iter()
                .zip(recv_names)
                .map(|(h, n)| Operand::write(h.array, n)),
        )
        .collect()
}

/// `Communicator::all_reduce` in place on `arrays` (one per local rank).
pub fn all_reduce(
    comm: &Communicator,
    arrays: &[Handle<'_>],
    names: &[&str],
    op: ReduceOp,
) -> std::result::Result<(), CallError> {
    const WHAT: &str = "Communicator::all_reduce";
    whole(arrays, names)?;
    with_arrays(&operands(&[], &[], arrays, names), |v| {
        let (_, recv) = sent_received(v, 0);
        let dtype = one_dtype(WHAT, recv.iter().map(|a| a.dtype()))?;
        with_dtype!(dtype, T => {
            let mut recv = typed_mut::<T>(recv, WHAT)?;
            comm.all_reduce(&mut recv, op)
        })
    })
}

/// `Communicator::broadcast` in place on `arrays` (one per local rank).
pub fn broadcast(
    comm: &Communicator,
    arrays: &[Handle<'_>],
    names: &[&str],
    root: usize,
) -> std::result::Result<(), CallError> {
    const WHAT: &str = "Communicator::broadcast";
    whole(arrays, names)?;
    with_arrays(&operands(&[], &[], arrays, names), |v| {
        let (_, recv) = sent_received(v, 0);
        let dtype = one_dtype(WHAT, recv.iter().map(|a| a.dtype()))?;
        with_dtype!(dtype, T => {
            let mut recv = typed_mut::<T>(recv, WHAT)?;
            comm.broadcast(&mut recv, root)
        })
    })
}

/// What a collective with separate inputs and outputs does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendRecvOp {
    /// `Communicator::all_reduce_into`.
    AllReduce(ReduceOp),
    /// `Communicator::all_gather`.
    AllGather,
    /// `Communicator::reduce_scatter`.
    ReduceScatter(ReduceOp),
}

/// A collective from `send` into `recv` (one of each per local rank).
pub fn collective(
    comm: &Communicator,
    op: SendRecvOp,
    send: &[Handle<'_>],
    send_names: &[&str],
    recv: &[Handle<'_>],
    recv_names: &[&str],
) -> std::result::Result<(), CallError> {
    let what = match op {
        SendRecvOp::AllReduce(_) => "Communicator::all_reduce_into",
        SendRecvOp::AllGather => "Communicator::all_gather",
        SendRecvOp::ReduceScatter(_) => "Communicator::reduce_scatter",
    };
    whole(send, send_names)?;
    whole(recv, recv_names)?;
    with_arrays(&operands(send, send_names, recv, recv_names), |v| {
        let (s, r) = sent_received(v, send.len());
        let dtype = one_dtype(
            what,
            s.iter()
                .map(|a| a.dtype())
                .chain(r.iter().map(|a| a.dtype())),
        )?;
        with_dtype!(dtype, T => {
            let s = typed::<T>(s, what)?;
            let mut r = typed_mut::<T>(r, what)?;
            match op {
                SendRecvOp::AllReduce(o) => comm.all_reduce_into(&s, &mut r, o),
                SendRecvOp::AllGather => comm.all_gather(&s, &mut r),
                SendRecvOp::ReduceScatter(o) => comm.reduce_scatter(&s, &mut r, o),
            }
        })
    })
}

/// `Communicator::send_recv`: each `sends[i]` to rank `to[i]`, each
/// `recvs[j]` from rank `from[j]`, in one call.
pub fn send_recv(
    comm: &Communicator,
    sends: &[Handle<'_>],
    send_names: &[&str],
    to: &[usize],
    recvs: &[Handle<'_>],
    recv_names: &[&str],
    from: &[usize],
) -> std::result::Result<(), CallError> {
    const WHAT: &str = "Communicator::send_recv";
    if to.len() != sends.len() || from.len() != recvs.len() {
        return Err(CallError::Refused {
            message: format!(
                "{} arrays sent to {} ranks, {} received from {} ranks: one rank per array",
                sends.len(),
                to.len(),
                recvs.len(),
                from.len()
            ),
        });
    }
    whole(sends, send_names)?;
    whole(recvs, recv_names)?;
    with_arrays(&operands(sends, send_names, recvs, recv_names), |v| {
        let (s, r) = sent_received(v, sends.len());
        let dtype = one_dtype(
            WHAT,
            s.iter()
                .map(|a| a.dtype())
                .chain(r.iter().map(|a| a.dtype())),
        )?;
        with_dtype!(dtype, T => {
            let s: Vec<(&GpuArray<T>, usize)> =
                typed::<T>(s, WHAT)?.into_iter().zip(to.iter().copied()).collect();
            let mut r: Vec<(&mut GpuArray<T>, usize)> =
                typed_mut::<T>(r, WHAT)?.into_iter().zip(from.iter().copied()).collect();
            comm.send_recv(&s, &mut r)
        })
    })
}
