//! `Communicator`: what it is made from, and its waits.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::rendezvous::{CommId, Rendezvous};
use crate::backend::CommImpl;
use crate::{Backend, Context, Error, Result, Stream};

/// A group of ranks, one per GPU, that run collectives together
/// (all-reduce, broadcast, all-gather, reduce-scatter, send/recv) through
/// the library the backend has for it (NCCL on cuda and torch contexts;
/// on torch the arrays are tensors on c10 streams).
///
/// One process may hold every rank ([`Communicator::local`]: one context
/// per GPU), or some of them ([`Communicator::join`]: usually one GPU per
/// process, the processes meeting through a [`Rendezvous`]). Collectives
/// take one array per rank held here, in any order, each on its own
/// context, and run on the contexts' default streams (or those of
/// [`Communicator::on_streams`]), ordered after the arrays' pending uses
/// like every other op; they return once the work is enqueued.
///
/// Every wait has a deadline (the rendezvous's timeout): a rank that
/// never arrives, dies, or never calls the collective the others did is an
/// [`Error::Timeout`] and an aborted communicator, not a hang. A watchdog
/// thread (as torch.distributed has) aborts a communicator whose
/// collectives are still running at their deadline, so a stream or
/// context sync after such a collective ends too, and the context's next
/// sync returns the error; [`Communicator::wait`] returns it directly.
///
/// `Clone` is cheap and shares the communicator. Send + Sync: calls from
/// several threads are taken one at a time.
#[derive(Debug, Clone)]
pub struct Communicator {
    pub(super) shared: Arc<Shared>,
    /// One per local rank: where its collectives are enqueued.
    pub(super) streams: Vec<Stream>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) imp: CommImpl,
    pub(super) contexts: Vec<Context>,
    world: usize,
    first_rank: usize,
    timeout: Duration,
}

impl Communicator {
    /// Every rank in this process, one per context (each on its own GPU,
    /// all of one backend): rank i is `contexts[i]`.
    pub fn local(contexts: &[Context]) -> Result<Communicator> {
        Self::local_with_timeout(contexts, Rendezvous::DEFAULT_TIMEOUT)
    }

    /// [`Communicator::local`] with another deadline for its waits.
    pub fn local_with_timeout(contexts: &[Context], timeout: Duration) -> Result<Communicator> {
        let backend = one_backend(contexts)?;
        let id = CommImpl::new_id(backend)?;
        Self::build(contexts, &id, contexts.len(), 0, timeout)
    }

    /// Ranks `rendezvous.rank()..` of `rendezvous.world_size()`, one per
    /// context, meeting the other processes through `rendezvous`. Returns
    /// once every rank of the world has joined; a rank that never arrives
    /// is an [`Error::Timeout`] after the rendezvous's timeout.
    pub fn join(contexts: &[Context], rendezvous: &Rendezvous) -> Result<Communicator> {
        let backend = one_backend(contexts)?;
        // Said here, at once, rather than by the others timing out.
        CommImpl::library(backend)?;
        let id = rendezvous.exchange(contexts.len(), || CommImpl::new_id(backend))?;
        Self::build(
            contexts,
            &id,
            rendezvous.world_size(),
            rendezvous.rank(),
            rendezvous.timeout(),
        )
    }

    fn build(
        contexts: &[Context],
        id: &CommId,
        world: usize,
        first_rank: usize,
        timeout: Duration,
    ) -> Result<Communicator> {
        let devices: Vec<_> = contexts.iter().map(Context::device).collect();
        let imp = CommImpl::init(&devices, id, world, first_rank, timeout)?;
        Ok(Communicator {
            streams: contexts
                .iter()
                .map(|c| c.default_stream().clone())
                .collect(),
            shared: Arc::new(Shared {
                imp,
                contexts: contexts.to_vec(),
                world,
                first_rank,
                timeout,
            }),
        })
    }

    /// The library `backend`'s collectives run on (e.g. `NCCL 2.28.9
    /// (libnccl.so.2)`), or why it has none here.
    pub fn library(backend: Backend) -> Result<String> {
        CommImpl::library(backend)
    }

    /// Ranks in the whole communicator, over every process.
    pub fn world_size(&self) -> usize {
        self.shared.world
    }

    /// The ranks this process holds.
    pub fn local_ranks(&self) -> Range<usize> {
        self.shared.first_rank..self.shared.first_rank + self.shared.contexts.len()
    }

    /// The contexts of this process's ranks, in rank order.
    pub fn contexts(&self) -> &[Context] {
        &self.shared.contexts
    }

    /// The rank of `ctx`'s device, when it is one of this process's.
    pub fn rank_of(&self, ctx: &Context) -> Option<usize> {
        self.local_index(ctx).map(|i| self.shared.first_rank + i)
    }

    /// The deadline of every wait.
    pub fn timeout(&self) -> Duration {
        self.shared.timeout
    }

    /// The same communicator with its collectives on `streams`, one per
    /// local rank in rank order (each a stream of that rank's context).
    pub fn on_streams(&self, streams: &[Stream]) -> Result<Communicator> {
        if streams.len() != self.shared.contexts.len() {
            return Err(Error::SizeMismatch {
                what: "Communicator::on_streams (one stream per local rank)",
                expected: self.shared.contexts.len(),
                actual: streams.len(),
            });
        }
        Ok(Communicator {
            shared: self.shared.clone(),
            streams: streams.to_vec(),
        })
    }

    /// Blocks until the collectives enqueued so far have finished, for at
    /// most [`Communicator::timeout`]; past it the communicator is aborted
    /// and the error is [`Error::Timeout`].
    pub fn wait(&self) -> Result<()> {
        self.wait_timeout(self.shared.timeout)
    }

    /// [`Communicator::wait`] with its own deadline.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        self.shared.imp.wait(timeout)
    }

    /// Whether collectives are enqueued by NCCL's blocking path (about a
    /// quarter of the host time: docs/multi-gpu.md), which unigpu takes
    /// when NCCL makes every connection at init (`NCCL_RUNTIME_CONNECT=0`,
    /// set by unigpu before it loads NCCL unless the variable is set or
    /// NCCL was loaded first, e.g. by torch).
    pub fn blocking_collectives(&self) -> bool {
        self.shared.imp.blocking_collectives()
    }

    /// Gives up: stops the pending collectives, and every later call on
    /// the communicator fails. For a program that knows a peer is gone.
    pub fn abort(&self) {
        self.shared.imp.abort();
    }

    /// The local rank (0-based here) whose device `ctx` is on.
    pub(super) fn local_index(&self, ctx: &Context) -> Option<usize> {
        self.shared.contexts.iter().position(|c| c.same_device(ctx))
    }
}

/// The backend every context shares, or why they do not share one.
fn one_backend(contexts: &[Context]) -> Result<Backend> {
    let Some(first) = contexts.first() else {
        return Err(Error::SizeMismatch {
            what: "Communicator contexts (at least one)",
            expected: 1,
            actual: 0,
        });
    };
    if contexts.iter().any(|c| c.backend() != first.backend()) {
        return Err(Error::ContextMismatch {
            what: "Communicator: every context must be of one backend",
        });
    }
    Ok(first.backend())
}
