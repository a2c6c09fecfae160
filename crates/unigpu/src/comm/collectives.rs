//! The collectives on arrays: each array goes to the local rank of its
//! context, whatever order the caller gives them in.

use super::communicator::Communicator;
use crate::array::Storage;
use crate::backend::{P2pImpl, PartImpl};
use crate::{Context, Element, Error, GpuArray, Result};

pub use unigpu_core::ReduceOp;

impl Communicator {
    /// In place: every array becomes the element-wise reduction (`op`) of
    /// the arrays of every rank. One array per local rank, all one length.
    pub fn all_reduce<T: Element>(
        &self,
        arrays: &mut [&mut GpuArray<T>],
        op: ReduceOp,
    ) -> Result<()> {
        let recv = self.by_rank("Communicator::all_reduce", mutable(arrays)?)?;
        let mut parts = self.parts(None, recv);
        self.shared.imp.all_reduce(&mut parts, op)
    }

    /// `recv` (one per local rank) gets the reduction of every rank's
    /// `send`; all one length.
    pub fn all_reduce_into<T: Element>(
        &self,
        send: &[&GpuArray<T>],
        recv: &mut [&mut GpuArray<T>],
        op: ReduceOp,
    ) -> Result<()> {
        let what = "Communicator::all_reduce_into";
        let send = self.by_rank(what, shared(send)?)?;
        let recv = self.by_rank(what, mutable(recv)?)?;
        let mut parts = self.parts(Some(send), recv);
        self.shared.imp.all_reduce(&mut parts, op)
    }

    /// In place: every array becomes rank `root`'s. One array per local
    /// rank, all one length.
    pub fn broadcast<T: Element>(
        &self,
        arrays: &mut [&mut GpuArray<T>],
        root: usize,
    ) -> Result<()> {
        let recv = self.by_rank("Communicator::broadcast", mutable(arrays)?)?;
        let mut parts = self.parts(None, recv);
        self.shared.imp.broadcast(&mut parts, root)
    }

    /// Every rank's `send` (n elements), concatenated in rank order, into
    /// every `recv` (n × world size elements).
    pub fn all_gather<T: Element>(
        &self,
        send: &[&GpuArray<T>],
        recv: &mut [&mut GpuArray<T>],
    ) -> Result<()> {
        let what = "Communicator::all_gather";
        let send = self.by_rank(what, shared(send)?)?;
        let recv = self.by_rank(what, mutable(recv)?)?;
        let mut parts = self.parts(Some(send), recv);
        self.shared.imp.all_gather(&mut parts)
    }

    /// The reduction (`op`) of every rank's `send` (n × world size
    /// elements), of which rank r's `recv` gets the r-th block of n.
    pub fn reduce_scatter<T: Element>(
        &self,
        send: &[&GpuArray<T>],
        recv: &mut [&mut GpuArray<T>],
        op: ReduceOp,
    ) -> Result<()> {
        let what = "Communicator::reduce_scatter";
        let send = self.by_rank(what, shared(send)?)?;
        let recv = self.by_rank(what, mutable(recv)?)?;
        let mut parts = self.parts(Some(send), recv);
        self.shared.imp.reduce_scatter(&mut parts, op)
    }

    /// Sends `array` to rank `to`, whose process receives it with
    /// [`Communicator::recv`] (an array of the same length).
    pub fn send<T: Element>(&self, array: &GpuArray<T>, to: usize) -> Result<()> {
        self.send_recv(&[(array, to)], &mut [])
    }

    /// Receives into `array` what rank `from` sends.
    pub fn recv<T: Element>(&self, array: &mut GpuArray<T>, from: usize) -> Result<()> {
        self.send_recv::<T>(&[], &mut [(array, from)])
    }

    /// Sends `(array, to rank)` and receives `(array, from rank)`, all at
    /// once: where both ends are ranks of this process, the pair must be
    /// in one call (each waits for the other).
    pub fn send_recv<T: Element>(
        &self,
        sends: &[(&GpuArray<T>, usize)],
        recvs: &mut [(&mut GpuArray<T>, usize)],
    ) -> Result<()> {
        let mut ops = Vec::with_capacity(sends.len() + recvs.len());
        for (array, to) in sends {
            let local = self.local_of(array.context(), "Communicator::send")?;
            ops.push(P2pImpl::Send {
                local,
                stream: &self.streams[local].imp,
                array: array.whole("Communicator::send")?,
                peer: *to,
            });
        }
        for (array, from) in recvs.iter_mut() {
            let local = self.local_of(array.context(), "Communicator::recv")?;
            ops.push(P2pImpl::Recv {
                local,
                stream: &self.streams[local].imp,
                array: array.whole_mut("Communicator::recv")?,
                peer: *from,
            });
        }
        self.shared.imp.send_recv(&mut ops)
    }

    fn local_of(&self, ctx: &Context, what: &'static str) -> Result<usize> {
        self.local_index(ctx).ok_or(Error::ContextMismatch { what })
    }

    /// `items` (one per local rank, in any order) in local rank order:
    /// each on a context of the communicator, each rank once.
    fn by_rank<'a, A>(
        &self,
        what: &'static str,
        items: impl ExactSizeIterator<Item = (&'a Context, A)>,
    ) -> Result<Vec<A>> {
        let n = self.contexts().len();
        if items.len() != n {
            return Err(Error::SizeMismatch {
                what,
                expected: n,
                actual: items.len(),
            });
        }
        let mut slots: Vec<Option<A>> = (0..n).map(|_| None).collect();
        for (ctx, item) in items {
            let local = self.local_of(ctx, what)?;
            if slots[local].replace(item).is_some() {
                return Err(Error::ContextMismatch { what });
            }
        }
        // n items, each in a distinct slot of n: every slot is filled.
        Ok(slots.into_iter().flatten().collect())
    }

    fn parts<'a, T: Element>(
        &'a self,
        send: Option<Vec<&'a Storage<T>>>,
        recv: Vec<&'a mut Storage<T>>,
    ) -> Vec<PartImpl<'a, T>> {
        let mut send = send.map(Vec::into_iter);
        recv.into_iter()
            .zip(&self.streams)
            .map(|(recv, stream)| PartImpl {
                stream: &stream.imp,
                send: send.as_mut().and_then(Iterator::next),
                recv,
            })
            .collect()
    }
}

/// Collectives take whole buffers: each array must be all of its memory
/// in order (not a strided DLPack import).
fn shared<'a, T: Element>(
    arrays: &'a [&GpuArray<T>],
) -> Result<std::vec::IntoIter<(&'a Context, &'a Storage<T>)>> {
    let v: Result<Vec<_>> = arrays
        .iter()
        .map(|a| Ok((a.context(), a.whole("a collective")?)))
        .collect();
    Ok(v?.into_iter())
}

fn mutable<'a, T: Element>(
    arrays: &'a mut [&mut GpuArray<T>],
) -> Result<std::vec::IntoIter<(&'a Context, &'a mut Storage<T>)>> {
    let v: Result<Vec<_>> = arrays
        .iter_mut()
        .map(|a| {
            let a: &'a mut GpuArray<T> = a;
            let ctx = &a.ctx;
            let storage = if a.layout.is_whole(a.storage.len()) {
                &mut a.storage
            } else {
                return Err(crate::Error::Shape {
                    what: "a collective",
                    message: format!(
                        "needs arrays that are all of their memory in order, not {:?}; make one with to_contiguous()",
                        a.layout
                    ),
                });
            };
            Ok((ctx, storage))
        })
        .collect();
    Ok(v?.into_iter())
}
