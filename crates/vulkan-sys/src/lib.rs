//! The little that unigpu's Vulkan backend needs from Vulkan itself rather
//! than from wgpu: whether the Vulkan loader loads (and why not), and how
//! much memory each physical device has and has free. wgpu reports neither
//! through its safe API; both take `unsafe` calls, which the facade forbids,
//! so they live in this -sys crate.
//!
//! The loader is opened at run time (`ash::Entry::load`, a `dlopen` of
//! `libvulkan.so.1`); nothing links it. One instance is made on first use and
//! kept for the process: its memory queries are cheap, its creation is not.
//!
//! Also here: [`exit_skipping_teardown`], for programs that must not run
//! the Vulkan driver's teardown at exit (exit.rs says why); and
//! [`pipeline::compute_pipeline`], WGSL made into a pipeline in which the
//! driver may not contract `a * b + c` into one fma (SPIR-V's
//! `NoContraction`, which WGSL cannot say), through wgpu's `unsafe`
//! passthrough of SPIR-V.
//!
//! Its examples are measurement probes through wgpu alone, beside what
//! unigpu builds on it: `matmul_probe` (the built-in matmul's forms) and
//! `staging_probe` (the host's copy rates into and out of the memory
//! wgpu maps for transfers); docs/vulkan.md has their figures.

mod exit;
pub use exit::exit_skipping_teardown;

pub mod float_controls;
pub mod no_contraction;
pub mod pipeline;

use std::ffi::CStr;
use std::sync::OnceLock;

use ash::vk;

/// One physical device as Vulkan reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalDevice {
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    /// Bytes of the device-local heaps (for a CPU adapter such as
    /// lavapipe, its one heap of host memory).
    pub total: u64,
    /// Bytes of those heaps the driver says this process may still use
    /// (VK_EXT_memory_budget: budget minus usage); `None` without the
    /// extension.
    pub free: Option<u64>,
}

struct Loaded {
    // Kept so the loader stays open while `instance` is used.
    _entry: ash::Entry,
    instance: ash::Instance,
    api_version: u32,
}

// SAFETY: ash's `Entry` and `Instance` hold a library handle and function
// pointers; Vulkan allows instance-level queries from any thread (the
// physical-device queries used here take no externally synchronized
// handle).
unsafe impl Send for Loaded {}
// SAFETY: as above: every call made through `Loaded` is a query that Vulkan
// allows concurrently.
unsafe impl Sync for Loaded {}

/// Why Vulkan cannot be used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The loader library does not load.
    NoLoader(String),
    /// The loader loads but makes no instance: no driver (ICD) at all.
    NoDriver(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NoLoader(m) | Unavailable::NoDriver(m) => f.write_str(m),
        }
    }
}

/// Points the loader at another file: for tests of a machine without one
/// (read once per process, like the CUDA probe's override).
pub const LOADER_OVERRIDE_ENV: &str = "UNIGPU_TEST_VULKAN_LOADER";

fn loaded() -> Result<&'static Loaded, Unavailable> {
    static LOADED: OnceLock<Result<Loaded, Unavailable>> = OnceLock::new();
    LOADED.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Loaded, Unavailable> {
    let path = std::env::var_os(LOADER_OVERRIDE_ENV);
    let entry = match &path {
        // SAFETY: dlopen of a test's stand-in path; loading a library runs
        // its initialisers, and a Vulkan loader is made to be dlopen'ed.
        Some(p) => unsafe { ash::Entry::load_from(p) },
        // SAFETY: dlopen of the system's Vulkan loader, as above.
        None => unsafe { ash::Entry::load() },
    }
    .map_err(|e| {
        let name = path
            .as_deref()
            .map_or("libvulkan.so.1".into(), |p| p.to_string_lossy());
        Unavailable::NoLoader(format!(
            "the Vulkan loader ({name}) could not be loaded: {e}"
        ))
    })?;
    // SAFETY: a global query with no handle; the entry's function pointers
    // were just loaded.
    let api_version = match unsafe { entry.try_enumerate_instance_version() } {
        Ok(Some(v)) => v,
        Ok(None) => vk::API_VERSION_1_0,
        Err(e) => {
            return Err(Unavailable::NoDriver(format!(
                "vkEnumerateInstanceVersion failed: {e}"
            )));
        }
    };
    // 1.1 for vkGetPhysicalDeviceMemoryProperties2, where the loader has it.
    let want = if api_version >= vk::API_VERSION_1_1 {
        vk::API_VERSION_1_1
    } else {
        vk::API_VERSION_1_0
    };
    let app = vk::ApplicationInfo::default()
        .application_name(c"unigpu")
        .api_version(want);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: `info` and the `app` it points to live across the call; no
    // extensions or layers are asked for.
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| {
        Unavailable::NoDriver(format!(
            "the Vulkan loader loaded, but vkCreateInstance failed ({e}): no driver (ICD) is installed"
        ))
    })?;
    Ok(Loaded {
        _entry: entry,
        instance,
        api_version: want,
    })
}

/// `Ok` when the Vulkan loader loads and makes an instance; else why not.
pub fn loader() -> Result<(), Unavailable> {
    loaded().map(drop)
}

/// Every physical device the loader reports, with its memory.
pub fn physical_devices() -> Result<Vec<PhysicalDevice>, String> {
    let vk = loaded().map_err(|e| e.to_string())?;
    // SAFETY: `vk.instance` is a live instance kept for the process.
    let devices = unsafe { vk.instance.enumerate_physical_devices() }
        .map_err(|e| format!("vkEnumeratePhysicalDevices failed: {e}"))?;
    Ok(devices.into_iter().map(|d| describe(vk, d)).collect())
}

fn describe(vk: &Loaded, device: vk::PhysicalDevice) -> PhysicalDevice {
    // SAFETY: `device` came from this instance's enumeration.
    let props = unsafe { vk.instance.get_physical_device_properties(device) };
    let name = props
        .device_name_as_c_str()
        .map(|n: &CStr| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let budget_ext = vk.api_version >= vk::API_VERSION_1_1 && has_budget_extension(vk, device);
    let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
    let memory = if budget_ext {
        let mut props2 = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
        // SAFETY: `props2` chains `budget`, a struct the driver fills because
        // the device has VK_EXT_memory_budget; both outlive the call.
        unsafe {
            vk.instance
                .get_physical_device_memory_properties2(device, &mut props2)
        };
        props2.memory_properties
    } else {
        // SAFETY: `device` came from this instance's enumeration.
        unsafe { vk.instance.get_physical_device_memory_properties(device) }
    };
    let heaps = memory.memory_heaps_as_slice();
    // Device-local heaps; a CPU adapter's one heap may lack the flag.
    let local: Vec<usize> = match (0..heaps.len())
        .filter(|&i| heaps[i].flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .collect::<Vec<_>>()
    {
        v if v.is_empty() => (0..heaps.len()).collect(),
        v => v,
    };
    let total = local.iter().map(|&i| heaps[i].size).sum();
    let free = budget_ext.then(|| {
        local
            .iter()
            .map(|&i| budget.heap_budget[i].saturating_sub(budget.heap_usage[i]))
            .sum::<u64>()
            .min(total)
    });
    PhysicalDevice {
        name,
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        total,
        free,
    }
}

fn has_budget_extension(vk: &Loaded, device: vk::PhysicalDevice) -> bool {
    // SAFETY: `device` came from this instance's enumeration; no layer named.
    let Ok(exts) = (unsafe { vk.instance.enumerate_device_extension_properties(device) }) else {
        return false;
    };
    exts.iter().any(|e| {
        e.extension_name_as_c_str()
            .is_ok_and(|n| n == ash::ext::memory_budget::NAME)
    })
}

#[cfg(test)]
mod tests {
    /// Whatever the machine has, the answer is a value or a reason, never
    /// a panic; a device it lists has memory.
    #[test]
    fn lists_devices_or_says_why_not() {
        match super::physical_devices() {
            Ok(devices) => {
                for d in devices {
                    assert!(d.total > 0, "{d:?}");
                    assert!(d.free.is_none_or(|f| f <= d.total), "{d:?}");
                }
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
