//! Which backend a context runs on, and why the others were passed over.

use std::fmt;
use std::str::FromStr;

use super::DeviceKind;
use super::listed_enum::listed_enum;

listed_enum! {
    /// A compute backend: the implementation that runs the work, in fallback
    /// order. The hardware it runs on is its [`DeviceKind`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Backend {
        /// libtorch's CUDA tensors and c10 streams (needs the `torch` feature).
        Torch,
        /// The CUDA driver API, loaded at run time.
        Cuda,
        /// Vulkan through wgpu: AMD, Intel and NVIDIA GPUs without CUDA
        /// (needs the `vulkan` feature, on by default, and a Vulkan loader at
        /// run time).
        Vulkan,
        /// Host memory and worker-thread streams; always available.
        Cpu,
    }
    /// Every backend, in the order `Context::default()` tries them (the
    /// order of declaration): the one list of backends, which the fallback
    /// chain, config parsing, error messages and `unigpu info` all read.
    ALL
}

impl Backend {
    /// The backend that runs on the host: always available, the end of the
    /// fallback chain.
    pub const HOST: Backend = Backend::Cpu;

    /// The names in [`Backend::ALL`], quoted and comma-separated, for
    /// messages that list the choices.
    pub fn quoted_names() -> String {
        Backend::ALL.map(|b| format!("\"{}\"", b.name())).join(", ")
    }

    /// The lowercase name used in config files and `UNIGPU_BACKEND`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Torch => "torch",
            Backend::Cuda => "cuda",
            Backend::Vulkan => "vulkan",
            Backend::Cpu => "cpu",
        }
    }

    /// The kind of device this backend drives, as `device = "..."` names
    /// it: `cpu` for the CPU backend, `cuda` for cuda and torch (torch's
    /// devices are CUDA devices), `vulkan` for Vulkan adapters.
    pub fn device_kind(self) -> DeviceKind {
        match self {
            Backend::Torch | Backend::Cuda => DeviceKind::Cuda,
            Backend::Vulkan => DeviceKind::Vulkan,
            Backend::Cpu => DeviceKind::Cpu,
        }
    }

    /// The backend that `device = "<kind>:N"` asks for by name, the one
    /// called like the kind. Others may drive the kind too (torch drives
    /// `cuda` devices), but such a config does not require them.
    pub fn named_for(kind: DeviceKind) -> Backend {
        match kind {
            DeviceKind::Cpu => Backend::Cpu,
            DeviceKind::Cuda => Backend::Cuda,
            DeviceKind::Vulkan => Backend::Vulkan,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Backend {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Backend::ALL.into_iter().find(|b| b.name() == s).ok_or(())
    }
}

/// What happened to one backend while a context was being created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// This backend was picked.
    Chosen,
    /// Passed over, with the reason.
    Skipped(String),
    /// Not tried, because an earlier backend was chosen.
    NotTried,
}

/// One row of the fallback chain that `unigpu info` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendAttempt {
    pub backend: Backend,
    pub outcome: Outcome,
}

impl fmt::Display for BackendAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Outcome::Chosen => write!(f, "{:<6} chosen", self.backend),
            Outcome::Skipped(reason) => write!(f, "{:<6} skipped: {reason}", self.backend),
            Outcome::NotTried => write!(
                f,
                "{:<6} not tried (an earlier backend was chosen)",
                self.backend
            ),
        }
    }
}
