//! One context's handle on a shared device (device.rs): the streams it
//! made, which `Context::sync` waits for and whose errors it returns, as
//! the CPU backend's device keeps its own; and the backend's `DeviceApi`,
//! on it.

use std::sync::{Arc, Mutex, Weak};

use super::Vulkan;
use super::adapters::{adapters, kind_name};
use super::device::VkDevice;
use super::errors::unsupported;
use super::stream::VkStream;
use crate::backend::DeviceApi;
use crate::device::{DeviceInfo, MemoryInfo, MemoryStats};
use crate::error::Result;
use crate::lock::lock;

/// One context's handle on a shared device.
#[derive(Debug)]
pub(crate) struct VkOpen {
    pub(crate) device: Arc<VkDevice>,
    streams: Mutex<Vec<Weak<VkStream>>>,
}

impl DeviceApi for Vulkan {
    fn device_count() -> Result<usize> {
        Ok(adapters()?.len())
    }

    fn open(ordinal: usize) -> Result<Self::Device> {
        Ok(VkOpen {
            device: VkDevice::open(ordinal)?,
            streams: Mutex::default(),
        })
    }

    /// The first hardware (not software) adapter, described: what
    /// [`DeviceApi::hardware`] reports for vulkan.
    fn hardware() -> Option<String> {
        let info = adapters()
            .ok()?
            .iter()
            .map(wgpu::Adapter::get_info)
            .find(|i| i.device_type != wgpu::DeviceType::Cpu)?;
        Some(format!(
            "a Vulkan adapter {} ({}, {} {})",
            info.name,
            kind_name(info.device_type),
            info.driver,
            info.driver_info
        ))
    }

    /// Why the fallback chain passes adapter `ordinal` over: it is a software
    /// adapter (and so, hardware coming first, are all), which runs slower than
    /// the CPU backend. Decided from the adapter's description, without
    /// opening it.
    fn fallback_refusal(ordinal: usize) -> Option<String> {
        let info = adapters().ok()?.get(ordinal)?.get_info();
        (info.device_type == wgpu::DeviceType::Cpu).then(|| {
            format!(
                "only a software adapter ({}, {} {}): the cpu backend is faster; \
                 backend = \"vulkan\" uses it anyway",
                info.name, info.driver, info.driver_info
            )
        })
    }

    fn info(open: &Self::Device) -> Result<DeviceInfo> {
        open.device.info()
    }

    fn memory_info(open: &Self::Device) -> Result<MemoryInfo> {
        open.device.memory_info()
    }

    fn same_device(a: &Self::Device, b: &Self::Device) -> bool {
        Arc::ptr_eq(&a.device, &b.device)
    }

    fn memory_stats(_: &Self::Device) -> Result<MemoryStats> {
        Err(unsupported(
            "memory_stats: the vulkan backend has no caching allocator of its own (each array \
             is a wgpu buffer, returned to wgpu's allocator when dropped)"
                .into(),
        ))
    }

    /// Releases the staging buffers kept for transfers (arrays have no
    /// cache to empty: each is freed when dropped).
    fn empty_cache(open: &Self::Device) -> Result<usize> {
        Ok(open.device.staging.release())
    }

    fn synchronize(open: &Self::Device) -> Result<()> {
        let mut first = Ok(());
        let streams: Vec<Arc<VkStream>> = lock(&open.streams)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for s in streams {
            let r = s.wait_enqueued();
            if first.is_ok() {
                first = r;
            }
        }
        first?;
        open.device.take_error().map_or(Ok(()), Err)
    }

    /// A new stream on the device, which this context's sync waits for.
    fn new_stream(open: &Self::Device) -> Result<Self::Stream> {
        let stream = VkStream::new(&open.device)?;
        let mut list = lock(&open.streams);
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&stream));
        Ok(stream)
    }
}
