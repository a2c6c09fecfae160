//! The host as a device: the CPU backend's `DeviceApi`.

use std::sync::{Arc, Mutex, Weak};

use super::{Cpu, CpuStream, memory};
use crate::backend::{Backend, DeviceApi, StreamApi};
use crate::lock::lock;
use crate::{DeviceInfo, Error, MemoryInfo, MemoryStats, Result};

/// The host as a device: it remembers its streams, so that a device-wide
/// sync waits for them all as `cuCtxSynchronize` does on CUDA.
#[derive(Debug, Default)]
pub(crate) struct CpuDevice {
    streams: Mutex<Vec<Weak<CpuStream>>>,
}

impl DeviceApi for Cpu {
    fn device_count() -> Result<usize> {
        Ok(1)
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        if ordinal != 0 {
            return Err(Error::InvalidDevice {
                backend: Backend::Cpu,
                asked: ordinal,
                available: 1,
            });
        }
        Ok(CpuDevice::default())
    }

    fn info(_: &Self::Device) -> Result<DeviceInfo> {
        let (free, total) = memory::memory_info();
        Ok(DeviceInfo {
            backend: Backend::Cpu,
            ordinal: 0,
            name: memory::cpu_name(),
            compute_capability: None,
            memory: MemoryInfo { free, total },
            details: Vec::new(),
        })
    }

    fn memory_info(_: &Self::Device) -> Result<MemoryInfo> {
        let (free, total) = memory::memory_info();
        Ok(MemoryInfo { free, total })
    }

    fn same_device(_: &Self::Device, _: &Self::Device) -> bool {
        true
    }

    fn memory_stats(_: &Self::Device) -> Result<MemoryStats> {
        Err(Error::Unsupported {
            backend: Backend::Cpu,
            what: "memory_stats: the CPU backend has no caching allocator (arrays are plain \
                   host allocations, returned to the system allocator when dropped)"
                .into(),
        })
    }

    fn empty_cache(_: &Self::Device) -> Result<usize> {
        Ok(0)
    }

    fn synchronize(device: &Self::Device) -> Result<()> {
        let streams: Vec<Arc<CpuStream>> = {
            let mut list = lock(&device.streams);
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let mut first = Ok(());
        for s in streams {
            let r = Self::stream_sync(&s);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn new_stream(device: &Self::Device) -> Result<Self::Stream> {
        let stream = Arc::new(CpuStream::new()?);
        lock(&device.streams).push(Arc::downgrade(&stream));
        Ok(stream)
    }
}
