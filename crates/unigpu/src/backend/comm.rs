//! Communicators: from the public `Communicator` to the one backend with
//! collectives, cuda (NCCL, `cuda/comm.rs`). Like `interop.rs`, a file
//! that names a backend's handles outside its folder; the others answer
//! `Unsupported` saying what to do instead. A backend that gains
//! collectives adds a variant to `CommImpl` and its arms here.

use std::time::Duration;

use unigpu_core::ReduceOp;

use super::cuda::comm::{self as cuda, Comm, Part};
use super::device::Device;
use super::dispatch::any_variant;
use super::dispatch::{DeviceImpl, Storage, StreamImpl};
use super::kind::Backend;
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
        what: "collectives: open each rank's context with the cuda backend (NCCL), or move \
               arrays there with GpuArray::to_context"
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
        match backend {
            Backend::Cuda => cuda::library(),
            other @ (Backend::Cpu | Backend::Torch | Backend::Vulkan) => Err(unsupported(other)),
        }
    }

    /// A new communicator id, for rank 0 to hand to the others.
    pub(crate) fn new_id(backend: Backend) -> Result<[u8; 128]> {
        match backend {
            Backend::Cuda => cuda::new_id(),
            other @ (Backend::Cpu | Backend::Torch | Backend::Vulkan) => Err(unsupported(other)),
        }
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
        let mut cuda_devices = Vec::with_capacity(devices.len());
        for d in devices {
            match &d.imp {
                DeviceImpl::Cuda(d) => cuda_devices.push(d),
                other @ (DeviceImpl::Cpu(_) | DeviceImpl::Torch(_) | DeviceImpl::Vulkan(_)) => {
                    return Err(unsupported(other.backend()));
                }
            }
        }
        Ok(CommImpl::Cuda(cuda::init(
            &cuda_devices,
            id,
            world,
            first_rank,
            timeout,
        )?))
    }

    pub(crate) fn all_reduce<T: Element>(
        &self,
        parts: &mut [PartImpl<'_, T>],
        op: ReduceOp,
    ) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        Ok(c.all_reduce(&mut cuda_parts(parts)?, op)?)
    }

    pub(crate) fn broadcast<T: Element>(
        &self,
        parts: &mut [PartImpl<'_, T>],
        root: usize,
    ) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        Ok(c.broadcast(&mut cuda_parts(parts)?, root)?)
    }

    pub(crate) fn all_gather<T: Element>(&self, parts: &mut [PartImpl<'_, T>]) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        Ok(c.all_gather(&mut cuda_parts(parts)?)?)
    }

    pub(crate) fn reduce_scatter<T: Element>(
        &self,
        parts: &mut [PartImpl<'_, T>],
        op: ReduceOp,
    ) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        Ok(c.reduce_scatter(&mut cuda_parts(parts)?, op)?)
    }

    pub(crate) fn send_recv<T: Element>(&self, ops: &mut [P2pImpl<'_, T>]) -> Result<()> {
        let CommImpl::Cuda(c) = self;
        let mut cuda_ops = Vec::with_capacity(ops.len());
        for op in ops.iter_mut() {
            cuda_ops.push(match op {
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
        Ok(c.send_recv(&mut cuda_ops)?)
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
