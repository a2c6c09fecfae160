//! Collectives on torch contexts: the cuda backend's NCCL communicator,
//! made on the driver's view of each GPU (torch shares its primary
//! context), run on c10 streams over tensors' memory. Each tensor is
//! ordered on the stream first (the buffer's use record, as for a kernel
//! launch), then handed to NCCL by address.

use std::sync::Arc;

use unigpu_cuda_safe::CudaDevice;
use unigpu_cuda_safe::nccl::{ForeignMemory, ForeignP2p, ForeignPart};
use unigpu_torch_bridge::cuda_interop::tensor_memory;

use super::{TorchBuffer, TorchDevice, TorchStream};
use crate::element::Element;
use crate::error::Result;

/// Torch contexts have collectives in this build.
pub(crate) fn usable() -> Result<()> {
    Ok(())
}

/// The driver's view of `device`, on which NCCL's communicator is made.
pub(crate) fn driver(device: &TorchDevice) -> CudaDevice {
    device.cuda.clone()
}

/// `buffer`'s memory for NCCL work on `stream`, after its conflicting uses.
fn memory<T: Element>(
    stream: &Arc<TorchStream>,
    buffer: &TorchBuffer,
    write: bool,
) -> Result<ForeignMemory<T>> {
    buffer.order(stream, write)?;
    Ok(tensor_memory::<T>(
        &buffer.tensor,
        buffer.len(),
        &stream.inner,
        stream.foreign.device(),
    )?)
}

/// One local rank's share of a collective, in NCCL's terms.
pub(crate) fn part<'a, T: Element>(
    stream: &'a Arc<TorchStream>,
    send: Option<&TorchBuffer>,
    recv: &mut TorchBuffer,
) -> Result<ForeignPart<'a, T>> {
    let recv = memory::<T>(stream, recv, true)?;
    let send = send.map(|s| memory::<T>(stream, s, false)).transpose()?;
    Ok(ForeignPart {
        stream: &stream.foreign,
        send,
        recv,
    })
}

/// Local rank `local` sends `buffer` to rank `peer`.
pub(crate) fn send<'a, T: Element>(
    local: usize,
    stream: &'a Arc<TorchStream>,
    buffer: &TorchBuffer,
    peer: usize,
) -> Result<ForeignP2p<'a, T>> {
    Ok(ForeignP2p::Send {
        local,
        stream: &stream.foreign,
        memory: memory::<T>(stream, buffer, false)?,
        peer,
    })
}

/// Local rank `local` receives `buffer` from rank `peer`.
pub(crate) fn recv<'a, T: Element>(
    local: usize,
    stream: &'a Arc<TorchStream>,
    buffer: &mut TorchBuffer,
    peer: usize,
) -> Result<ForeignP2p<'a, T>> {
    Ok(ForeignP2p::Recv {
        local,
        stream: &stream.foreign,
        memory: memory::<T>(stream, buffer, true)?,
        peer,
    })
}
