//! The CUDA backend's events (`EventApi`): the driver's, through
//! `unigpu-cuda-safe`.

use unigpu_cuda_safe::CudaEventHandle;

use super::Cuda;
use crate::backend::EventApi;
use crate::error::Result;

impl EventApi for Cuda {
    fn new_event(stream: &Self::Stream, timed: bool) -> Result<Self::Event> {
        Ok(CudaEventHandle::with_timing(&stream.device.driver, timed)?)
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        Ok(event.record(&stream.handle)?)
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
