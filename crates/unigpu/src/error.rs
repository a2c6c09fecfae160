//! The facade's error type: one variant per thing a user can act on.

use crate::config::ConfigError;
use crate::{Backend, DType};

/// Everything a unigpu call can fail with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The device could not satisfy an allocation. The context stays usable.
    #[error("out of memory: asked for {requested} bytes, {free} bytes free")]
    OutOfMemory { requested: usize, free: usize },
    /// A device id past the end of the backend's device list.
    #[error("{backend} device {asked} does not exist ({available} available)")]
    InvalidDevice {
        backend: Backend,
        asked: usize,
        available: usize,
    },
    /// The backend cannot run here; `reason` says why.
    #[error("the {backend} backend is unavailable: {reason}")]
    BackendUnavailable { backend: Backend, reason: String },
    /// Kernel source that did not compile, with the compiler's log.
    #[error("compilation failed:\n{log}")]
    Compile { log: String },
    /// Launch arguments that do not fit the kernel's declaration.
    #[error("kernel `{kernel}`: {message}")]
    KernelArgs { kernel: String, message: String },
    /// The backend cannot do this (for example a kernel without a CPU
    /// implementation on the CPU backend).
    #[error("not supported on the {backend} backend: {what}")]
    Unsupported { backend: Backend, what: String },
    /// Two operands of different lengths.
    #[error("size mismatch in {what}: expected {expected} elements, got {actual}")]
    SizeMismatch {
        what: &'static str,
        expected: usize,
        actual: usize,
    },
    /// An operand of another element type than the call needs.
    #[error("dtype mismatch in {what}: expected {expected}, got {actual}")]
    DTypeMismatch {
        what: &'static str,
        expected: DType,
        actual: DType,
    },
    /// A DLPack tensor that cannot be imported, or an array that cannot be
    /// exported as asked; `message` says why.
    #[error("DLPack: {message}")]
    Dlpack { message: String },
    /// Handles from different contexts or backends were mixed in one call.
    #[error("{what}: the operands belong to different contexts or backends")]
    ContextMismatch { what: &'static str },
    /// A bad configuration file or environment variable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Work enqueued on a stream failed; reported by the next sync.
    #[error("work on a stream failed: {message}")]
    StreamWork { message: String },
    /// A C++ exception from torch not covered above (torch backend).
    #[error("torch error in {call}: {message}")]
    Torch { call: String, message: String },
    /// A status from the CUDA driver not covered above.
    #[error("CUDA driver error in {call}: {name} ({code}): {message}")]
    Driver {
        call: String,
        code: u32,
        name: String,
        message: String,
    },
}

/// Result with the facade's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<unigpu_cuda_safe::SafeError> for Error {
    fn from(e: unigpu_cuda_safe::SafeError) -> Self {
        use unigpu_cuda_safe::SafeError as S;
        match e {
            S::Unavailable { reason } => Error::BackendUnavailable {
                backend: Backend::Cuda,
                reason,
            },
            S::InvalidDevice { asked, available } => Error::InvalidDevice {
                backend: Backend::Cuda,
                asked,
                available,
            },
            S::OutOfMemory { requested, free } => Error::OutOfMemory { requested, free },
            S::SizeMismatch {
                what,
                expected,
                actual,
            } => Error::SizeMismatch {
                what,
                expected,
                actual,
            },
            S::DeviceMismatch { what } => Error::ContextMismatch { what },
            S::Compile { log } => Error::Compile { log },
            S::Dlpack { message } => Error::Dlpack { message },
            S::Driver {
                call,
                code,
                name,
                message,
            } => Error::Driver {
                call: call.to_string(),
                code,
                name,
                message,
            },
        }
    }
}
