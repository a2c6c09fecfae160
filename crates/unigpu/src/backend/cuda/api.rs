//! The CUDA backend's side of the contract.

use unigpu_cuda_safe::{CudaDevice, CudaEventHandle, CudaStreamHandle, DeviceBuffer};

use crate::backend::{Api, Backend, driver};
use crate::{DeviceInfo, Element, MemoryInfo, Result};

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

    type Buffer<T: Element> = DeviceBuffer<T>;

    fn alloc<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::alloc(stream, len)?)
    }

    fn zeros<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::zeros(stream, len)?)
    }

    fn from_host<T: Element>(stream: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        Ok(DeviceBuffer::from_host(stream, host)?)
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len()
    }

    fn read<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        Ok(src.read_into(stream, host)?)
    }

    fn write<T: Element>(
        stream: &Self::Stream,
        dst: &mut Self::Buffer<T>,
        host: &[T],
    ) -> Result<()> {
        Ok(dst.write_from(stream, host)?)
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        Ok(dst.write_from(stream, host)?)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        Ok(src.read_into(stream, host)?)
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        Ok(src.copy_to(stream, dst)?)
    }
}
