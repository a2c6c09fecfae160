//! The kinds of device the backends drive, as `device = "..."` names them.
//!
//! A device kind is hardware, a backend is an implementation: the cuda and
//! torch backends both drive `cuda` devices, so the two are separate types
//! ([`Backend::device_kind`] maps one to the other, and
//! [`Backend::named_for`] a kind to the backend called like it).
//!
//! [`Backend::device_kind`]: super::Backend::device_kind
//! [`Backend::named_for`]: super::Backend::named_for

use std::fmt;
use std::str::FromStr;

use super::listed_enum::listed_enum;

listed_enum! {
    /// A kind of device, as the config's `device = "<kind>:N"` names it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum DeviceKind {
        /// The host: one device, `cpu` (the cpu backend).
        Cpu,
        /// A CUDA device, `cuda:N` (the cuda and torch backends).
        Cuda,
        /// A Vulkan adapter, `vulkan:N` (the vulkan backend).
        Vulkan,
    }
    /// Every kind, in the order of declaration, which the config's error
    /// messages follow.
    ALL
}

impl DeviceKind {
    /// The lowercase name used in `device = "..."` and `UNIGPU_DEVICE`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Vulkan => "vulkan",
        }
    }

    /// Whether this is the host, which is one device whose name
    /// (`device = "cpu"`) carries no ordinal.
    pub fn is_host(self) -> bool {
        self == DeviceKind::Cpu
    }

    /// How `device = "..."` names device `ordinal` of this kind: `cuda:1`,
    /// `vulkan:0`, and plain `cpu` for the host, its one device.
    pub fn device_name(self, ordinal: usize) -> String {
        if self.is_host() {
            self.to_string()
        } else {
            format!("{self}:{ordinal}")
        }
    }

    /// How many devices of this kind there are without opening a backend:
    /// one for the host; `None` for a GPU kind, whose backend counts them
    /// when it opens.
    pub fn known_device_count(self) -> Option<usize> {
        self.is_host().then_some(1)
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for DeviceKind {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        DeviceKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or(())
    }
}
