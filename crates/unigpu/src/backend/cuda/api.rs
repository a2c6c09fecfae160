//! The CUDA backend's side of the contract.

use unigpu_cuda_safe::{CudaDevice, CudaEventHandle, CudaStreamHandle};

use crate::backend::{Api, Backend, driver};
use crate::{DeviceInfo, MemoryInfo, Result};

/// The CUDA backend: the driver API through `unigpu-cuda-safe`.
#[derive(Debug)]
pub(crate) struct Cuda;

impl Api for Cuda {
    const KIND: Backend = Backend::Cuda;
    type Device = CudaDevice;

    fn device_count() -> Result<usize> {
        Ok(unigpu_cuda_safe::device_count()?)
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        Ok(CudaDevice::open(ordinal)?)
    }

    fn info(device: &Self::Device) -> Result<DeviceInfo> {
        driver::device_info(device, Backend::Cuda)
    }

    fn memory_info(device: &Self::Device) -> Result<MemoryInfo> {
        driver::memory_info(device, Backend::Cuda)
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        a == b
    }

    fn synchronize(device: &Self::Device) -> Result<()> {
        Ok(device.synchronize()?)
    }

    /// A created non-blocking stream, not the legacy NULL stream, so work
    /// on other streams really overlaps with it.
    fn default_stream(device: &Self::Device) -> Result<Self::Stream> {
        Self::new_stream(device)
    }

    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        Ok(CudaStreamHandle::new(device)?)
    }
    type Stream = CudaStreamHandle;
    type Event = CudaEventHandle;

    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        Ok(stream.synchronize()?)
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.query()?)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        Ok(stream.wait(event)?)
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        Ok(stream.host_fn(f)?)
    }

    fn native_stream(stream: &Self::Stream) -> Option<u64> {
        Some(stream.raw())
    }

    fn new_event(stream: &Self::Stream) -> Result<Self::Event> {
        Ok(CudaEventHandle::new(stream.device())?)
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        Ok(event.record(stream)?)
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        Ok(event.synchronize()?)
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.query()?)
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        Ok(start.elapsed_ms(end)?)
    }
}
