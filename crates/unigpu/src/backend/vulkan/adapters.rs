//! The Vulkan adapters of this machine, in the order `vulkan:N` numbers
//! them: hardware first (discrete, integrated, virtual, other), software
//! (CPU) adapters such as Mesa's lavapipe last, each group in the loader's
//! order. Enumerated once per process.

use std::sync::OnceLock;

use super::block_on::block_on;
use crate::backend::Backend;
use crate::error::{Error, Result};

fn instance() -> &'static wgpu::Instance {
    static INSTANCE: OnceLock<wgpu::Instance> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            // No validation layers, no debug labels: wgpu's own checks stay
            // on, the driver's layers would only slow every call.
            flags: wgpu::InstanceFlags::empty(),
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        })
    })
}

fn rank(kind: wgpu::DeviceType) -> u8 {
    match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

pub(crate) fn kind_name(kind: wgpu::DeviceType) -> &'static str {
    match kind {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Other => "other",
        wgpu::DeviceType::Cpu => "software (CPU)",
    }
}

/// Every Vulkan adapter, in `vulkan:N` order, or why there is none: no
/// Vulkan loader, or a loader without a driver for any device.
pub(crate) fn adapters() -> Result<&'static [wgpu::Adapter]> {
    static ADAPTERS: OnceLock<std::result::Result<Vec<wgpu::Adapter>, String>> = OnceLock::new();
    ADAPTERS
        .get_or_init(|| {
            // The loader first: wgpu only logs why its Vulkan instance
            // failed, this says it.
            unigpu_vulkan_sys::loader().map_err(|why| match why {
                unigpu_vulkan_sys::Unavailable::NoLoader(m) => format!("no Vulkan loader: {m}"),
                unigpu_vulkan_sys::Unavailable::NoDriver(m) => format!("no adapter: {m}"),
            })?;
            let mut list = block_on(instance().enumerate_adapters(wgpu::Backends::VULKAN));
            if list.is_empty() {
                return Err("no adapter: the Vulkan loader loaded but lists no device \
                            (no Vulkan driver for this machine's GPU; Mesa's \
                            mesa-vulkan-drivers adds the lavapipe software adapter)"
                    .into());
            }
            list.sort_by_key(|a| rank(a.get_info().device_type));
            Ok(list)
        })
        .as_deref()
        .map_err(|reason| Error::BackendUnavailable {
            backend: Backend::Vulkan,
            reason: reason.clone(),
        })
}
