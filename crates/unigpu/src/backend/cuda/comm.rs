//! The CUDA backend's communicator: NCCL, through `unigpu-cuda-safe`
//! (which loads libnccl without ever panicking, and puts a deadline on
//! every wait).

use std::sync::Arc;
use std::time::Duration;

use unigpu_cuda_safe::CudaDevice;
use unigpu_cuda_safe::nccl::{self, NcclComm, NcclId};

use super::device::Device;
use crate::error::Result;

/// Which NCCL is loaded, or why none is.
pub(crate) fn library() -> Result<String> {
    Ok(nccl::library()?)
}

/// A new communicator id (NCCL's unique id).
pub(crate) fn new_id() -> Result<[u8; 128]> {
    Ok(NcclId::new()?.0)
}

/// Ranks `first_rank..` of `world` on `devices`, once every rank joined.
pub(crate) fn init(
    devices: &[&Arc<Device>],
    id: &[u8; 128],
    world: usize,
    first_rank: usize,
    timeout: Duration,
) -> Result<NcclComm> {
    let drivers: Vec<CudaDevice> = devices.iter().map(|d| d.driver.clone()).collect();
    Ok(NcclComm::init(
        &drivers,
        &NcclId(*id),
        world,
        first_rank,
        timeout,
    )?)
}
