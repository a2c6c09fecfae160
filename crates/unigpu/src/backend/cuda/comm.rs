//! The CUDA backend's communicator: NCCL, through `unigpu-cuda-safe`
//! (which loads libnccl without ever panicking, and puts a deadline on
//! every wait).

use std::sync::Arc;
use std::time::Duration;

use unigpu_cuda_safe::nccl::{self, NcclId};
use unigpu_cuda_safe::{CudaDevice, DeviceBuffer};

use super::device::{Device, Stream};
use crate::element::Element;
use crate::error::Result;

pub(crate) use unigpu_cuda_safe::nccl::{ForeignP2p, ForeignPart, NcclComm as Comm, P2p, Part};

/// One local rank's share of a collective, in NCCL's terms.
pub(crate) fn part<'a, T: Element>(
    stream: &'a Stream,
    send: Option<&'a DeviceBuffer<T>>,
    recv: &'a mut DeviceBuffer<T>,
) -> Part<'a, T> {
    Part {
        stream: &stream.handle,
        send,
        recv,
    }
}

/// Local rank `local` sends `buffer` to rank `peer`.
pub(crate) fn send<'a, T: Element>(
    local: usize,
    stream: &'a Stream,
    buffer: &'a DeviceBuffer<T>,
    peer: usize,
) -> P2p<'a, T> {
    P2p::Send {
        local,
        stream: &stream.handle,
        buffer,
        peer,
    }
}

/// Local rank `local` receives `buffer` from rank `peer`.
pub(crate) fn recv<'a, T: Element>(
    local: usize,
    stream: &'a Stream,
    buffer: &'a mut DeviceBuffer<T>,
    peer: usize,
) -> P2p<'a, T> {
    P2p::Recv {
        local,
        stream: &stream.handle,
        buffer,
        peer,
    }
}

/// Which NCCL is loaded, or why none is.
pub(crate) fn library() -> Result<String> {
    Ok(nccl::library()?)
}

/// A new communicator id (NCCL's unique id).
pub(crate) fn new_id() -> Result<[u8; 128]> {
    Ok(NcclId::new()?.0)
}

/// The driver's view of `device`, on which NCCL's communicator is made.
pub(crate) fn driver(device: &Arc<Device>) -> CudaDevice {
    device.driver.clone()
}

/// Ranks `first_rank..` of `world` on `devices`, once every rank joined.
pub(crate) fn init(
    devices: &[CudaDevice],
    id: &[u8; 128],
    world: usize,
    first_rank: usize,
    timeout: Duration,
) -> Result<Comm> {
    Ok(Comm::init(
        devices,
        &NcclId(*id),
        world,
        first_rank,
        timeout,
    )?)
}
