//! One context's handle on a shared device (device.rs): the streams it
//! made, which `Context::sync` waits for and whose errors it returns, as
//! the CPU backend's device keeps its own.

use std::sync::{Arc, Mutex, Weak};

use super::device::VkDevice;
use super::stream::VkStream;
use crate::error::Result;
use crate::lock::lock;

/// One context's handle on a shared device.
#[derive(Debug)]
pub(crate) struct VkOpen {
    pub(crate) device: Arc<VkDevice>,
    streams: Mutex<Vec<Weak<VkStream>>>,
}

impl VkOpen {
    pub(crate) fn new(device: Arc<VkDevice>) -> VkOpen {
        VkOpen {
            device,
            streams: Mutex::default(),
        }
    }

    /// A new stream on the device, which this context's sync waits for.
    pub(crate) fn new_stream(&self) -> Result<Arc<VkStream>> {
        let stream = VkStream::new(&self.device)?;
        let mut list = lock(&self.streams);
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&stream));
        Ok(stream)
    }

    pub(crate) fn streams(&self) -> Vec<Arc<VkStream>> {
        lock(&self.streams)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }
}
