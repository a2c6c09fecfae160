//! Communicators: from the public `Communicator` to NCCL
//! (`cuda/comm.rs`), on cuda contexts (this crate's buffers and streams)
//! and on torch contexts (tensors on c10 streams, handed over as
//! another library's memory by `torch/comm.rs`; a build without torch
//! has its stand-in, `missing/torch.rs`). Like `interop.rs`, a file that
//! names backends' handles outside their folders; the others answer
//! `Unsupported` saying what to do instead. A backend that gains
//! collectives adds a variant to `CommImpl` and its arms here.

use std::time::Duration;

use unigpu_core::ReduceOp;

use super::cuda::comm::{self as cuda, Comm, ForeignP2p, ForeignPart, P2p, Part};
use super::device::Device;
use super::dispatch::any_variant;
use super::dispatch::{DeviceImpl, Storage, StreamImpl};
use super::kind::Backend;
use super::torch::comm as torch;
use crate::element::Element;
use crate::error::{Error, Result};

/// A communicator of any backend that has one.
#[derive(Debug)]
pub(crate) enum CommImpl {
    Cuda(Comm),
}

/// One local rank's share of a collective: its stream, what it sends
/// (`None`: in place), and where the result goes.
pub(crate) struct PartImpl<'a, T: Element> {
    pub(crate) stream: &'a StreamImpl,
    pub(crate) send: Option<&'a Storage<T>>,
    pub(crate) recv: &'a mut Storage<T>,
}

/// One send or receive of local rank `local` with rank `peer`.
pub(crate) enum P2pImpl<'a, T: Element> {
    Send {
        local: usize,
        stream: &'a StreamImpl,
        array: &'a Storage<T>,
        peer: usize,
    },
    Recv {
        local: usize,
        stream: &'a StreamImpl,
        array: &'a mut Storage<T>,
        peer: usize,
    },
}

/// Why `backend` has no communicator.
fn unsupported(backend: Backend) -> Error {
    Error::Unsupported {
        backend,
        what: "collectives: open each rank's context with the cuda backend (NCCL; the torch \
               backend works too), or move arrays there with GpuArray::to_context"
            .into(),
    }
}

/// The arrays of a collective are not all of the communicator's backend.
fn mismatch() -> Error {
    Error::ContextMismatch {
        what: "a collective's arrays and streams must be of the communicator's backend",
    }
}

impl CommImpl {
    /// The library the backend's collectives run on, or why there is none.
    pub(crate) fn library(backend: Backend) -> Result<String> {
        nccl_backend(backend)?;
        cuda::library()
    }

    /// A new communicator id, for rank 0 to hand to the others.
    pub(crate) fn new_id(backend: Backend) -> Result<[u8; 128]> {
        nccl_backend(backend)?;
        cuda::new_id()
    }

    /// Ranks `first_rank..first_rank + devices.len()` of `world`, one per
    /// device (all of one backend), once every rank has joined.
    pub(crate) fn init(
        devices: &[&Device],
        id: &[u8; 128],
        world: usize,
        first_rank: usize,
        timeout: Duration,
    ) -> Result<CommImpl> {
        let mut drivers = Vec::with_capacity(devices.len());
        for d in devices {
            match &d.imp {
                DeviceImpl::Cuda(d) => drivers.push(cuda::driver(d)),
                DeviceImpl::Torch(d) => drivers.push(torch::driver(d)),
                other @ (DeviceImpl::Cpu(_) | DeviceImpl::Vulkan(_)) => {
                    return Err(unsupported(other.backend()));
                }
            }
        }
        Ok(CommImpl::Cuda(cuda::init(
            &drivers, id, world, first_rank, timeout,
        )?))
    }

    pub(crate) fn all_reduce<T: Element>(
        &self,
        parts: &mut [PartImpl<'_, T>],
        op: ReduceOp,
    ) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        with_parts!(parts, |p| c.all_reduce(p, op))
    }

    pub(crate) fn broadcast<T: Element>(
        &self,
        parts: &mut [PartImpl<'_, T>],
        root: usize,
    ) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        with_parts!(parts, |p| c.broadcast(p, root))
    }

    pub(crate) fn all_gather<T: Element>(&self, parts: &mut [PartImpl<'_, T>]) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        with_parts!(parts, |p| c.all_gather(p))
    }

    pub(crate) fn reduce_scatter<T: Element>(
        &self,
        parts: &mut [PartImpl<'_, T>],
        op: ReduceOp,
    ) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        with_parts!(parts, |p| c.reduce_scatter(p, op))
    }

    pub(crate) fn send_recv<T: Element>(&self, ops: &mut [P2pImpl<'_, T>]) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        match split_p2p(ops)? {
            P2ps::Cuda(mut ops) => Ok(c.send_recv(&mut ops)?),
            P2ps::Foreign(mut ops) => Ok(c.send_recv(&mut ops)?),
        }
    }

    /// Waits, up to `timeout`, for the collectives enqueued so far.
    pub(crate) fn wait(&self, timeout: Duration) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        Ok(c.wait(timeout)?)
    }

    pub(crate) fn abort(&self) {
        let CommImpl::Cuda(c) = self;
        c.abort();
    }

    /// Whether collectives are enqueued on blocking handles.
    pub(crate) fn blocking_collectives(&self) -> bool {
        let CommImpl::Cuda(c) = self;
        c.blocking_collectives()
    }
}

/// Whether `backend`'s contexts run collectives through NCCL.
fn nccl_backend(backend: Backend) -> Result<()> {
    match backend {
        Backend::Cuda => Ok(()),
        Backend::Torch => torch::usable(),
        other @ (Backend::Cpu | Backend::Vulkan) => Err(unsupported(other)),
    }
}

/// Runs `$call` on the NCCL parts of `$parts` (`$p`: a `&mut` slice of
/// cuda parts, or of torch ones).
macro_rules! with_parts {
    ($parts:expr, |$p:ident| $call:expr) => {
        match split($parts)? {
            Parts::Cuda(mut parts) => {
                let $p = &mut parts[..];
                Ok($call?)
            }
            Parts::Foreign(mut parts) => {
                let $p = &mut parts[..];
                Ok($call?)
            }
        }
    };
}
use with_parts;

/// A collective's parts in NCCL's terms, all of one backend: cuda's, or
/// torch's (another library's streams and memory).
enum Parts<'a, T: Element> {
    Cuda(Vec<Part<'a, T>>),
    Foreign(Vec<ForeignPart<'a, T>>),
}

/// Send/recv operations in NCCL's terms, all of one backend.
enum P2ps<'a, T: Element> {
    Cuda(Vec<P2p<'a, T>>),
    Foreign(Vec<ForeignP2p<'a, T>>),
}

/// The handles inside `parts` (the first part's backend for all), or
/// `ContextMismatch`.
fn split<'a, T: Element>(parts: &'a mut [PartImpl<'_, T>]) -> Result<Parts<'a, T>> {
    if let Some(PartImpl {
        stream: StreamImpl::Torch(_),
        ..
    }) = parts.first()
    {
        return torch_parts(parts).map(Parts::Foreign);
    }
    cuda_parts(parts).map(Parts::Cuda)
}

/// The handles inside `ops` (the first op's backend for all), or
/// `ContextMismatch`.
fn split_p2p<'a, T: Element>(ops: &'a mut [P2pImpl<'_, T>]) -> Result<P2ps<'a, T>> {
    if let Some(
        P2pImpl::Send {
            stream: StreamImpl::Torch(_),
            ..
        }
        | P2pImpl::Recv {
            stream: StreamImpl::Torch(_),
            ..
        },
    ) = ops.first()
    {
        return torch_p2ps(ops).map(P2ps::Foreign);
    }
    let mut out = Vec::with_capacity(ops.len());
    for op in ops.iter_mut() {
        out.push(match op {
            P2pImpl::Send {
                local,
                stream: StreamImpl::Cuda(s),
                array: Storage::Cuda(b),
                peer,
            } => cuda::send::<T>(*local, s, b, *peer),
            P2pImpl::Recv {
                local,
                stream: StreamImpl::Cuda(s),
                array: Storage::Cuda(b),
                peer,
            } => cuda::recv::<T>(*local, s, b, *peer),
            P2pImpl::Send {
                stream: any_variant!(StreamImpl),
                ..
            }
            | P2pImpl::Recv {
                stream: any_variant!(StreamImpl),
                ..
            } => return Err(mismatch()),
        });
    }
    Ok(P2ps::Cuda(out))
}

/// The torch handles inside `parts`, each tensor ordered on its stream,
/// or `ContextMismatch`.
fn torch_parts<'a, T: Element>(
    parts: &'a mut [PartImpl<'_, T>],
) -> Result<Vec<ForeignPart<'a, T>>> {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts.iter_mut() {
        let StreamImpl::Torch(stream) = p.stream else {
            return Err(mismatch());
        };
        let send = match p.send {
            None => None,
            Some(Storage::Torch(b)) => Some(b),
            Some(_) => return Err(mismatch()),
        };
        let Storage::Torch(recv) = &mut *p.recv else {
            return Err(mismatch());
        };
        out.push(torch::part(stream, send, recv)?);
    }
    Ok(out)
}

/// The torch handles inside `ops`, each tensor ordered on its stream, or
/// `ContextMismatch`.
fn torch_p2ps<'a, T: Element>(ops: &'a mut [P2pImpl<'_, T>]) -> Result<Vec<ForeignP2p<'a, T>>> {
    let mut out = Vec::with_capacity(ops.len());
    for op in ops.iter_mut() {
        out.push(match op {
            P2pImpl::Send {
                local,
                stream: StreamImpl::Torch(s),
                array: Storage::Torch(b),
                peer,
            } => torch::send(*local, s, b, *peer)?,
            P2pImpl::Recv {
                local,
                stream: StreamImpl::Torch(s),
                array: Storage::Torch(b),
                peer,
            } => torch::recv(*local, s, b, *peer)?,
            _ => return Err(mismatch()),
        });
    }
    Ok(out)
}

/// The cuda handles inside `parts`, or `ContextMismatch`.
fn cuda_parts<'a, T: Element>(parts: &'a mut [PartImpl<'_, T>]) -> Result<Vec<Part<'a, T>>> {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts.iter_mut() {
        let StreamImpl::Cuda(stream) = p.stream else {
            return Err(mismatch());
        };
        let send = match p.send {
            None => None,
            Some(Storage::Cuda(b)) => Some(b),
            Some(_) => return Err(mismatch()),
        };
        let Storage::Cuda(recv) = &mut *p.recv else {
            return Err(mismatch());
        };
        out.push(cuda::part::<T>(stream, send, recv));
    }
    Ok(out)
}
