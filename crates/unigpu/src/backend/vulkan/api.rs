//! The Vulkan backend's handle types (`Handles`). The operations on each
//! handle are implemented in the file of its code (`mod.rs` lists them).

use std::sync::Arc;

use super::buffer::VkBuffer;
use super::device::VkDevice;
use super::event::VkEvent;
use super::kernel::VkArg;
use super::open::VkOpen;
use super::stream::{Recorded, VkStream};
use crate::backend::{Backend, Handles};
use crate::element::Element;

/// The Vulkan backend: wgpu devices, worker-thread streams, WGSL ops.
#[derive(Debug)]
pub(crate) struct Vulkan;

impl Handles for Vulkan {
    const KIND: Backend = Backend::Vulkan;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLVulkan;
    type Device = VkOpen;

    type Stream = Arc<VkStream>;
    type Event = Arc<VkEvent>;

    type Graph = (Arc<VkDevice>, Vec<Recorded>);

    type Buffer<T: Element> = VkBuffer<T>;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    type Arg<'a> = VkArg<'a>;
}
