//! The one error type of the safe layer.

use cudarc::driver::DriverError;
use cudarc::driver::sys::CUresult;
use unigpu_core::dlpack::DlpackError;

/// What went wrong in a CUDA call, in terms the facade can map to its own
/// error without parsing strings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SafeError {
    /// The CUDA driver cannot be used on this machine.
    #[error("CUDA is unavailable: {reason}")]
    Unavailable { reason: String },
    /// A device ordinal past the end of the device list.
    #[error("CUDA device {asked} does not exist ({available} available)")]
    InvalidDevice { asked: usize, available: usize },
    /// An allocation the device could not satisfy.
    #[error("out of device memory: asked for {requested} bytes, {free} bytes free")]
    OutOfMemory { requested: usize, free: usize },
    /// Two buffers or a buffer and a host slice of different lengths.
    #[error("size mismatch in {what}: expected {expected} elements, got {actual}")]
    SizeMismatch {
        what: &'static str,
        expected: usize,
        actual: usize,
    },
    /// Handles from two different devices were mixed in one call.
    #[error("{what}: handles belong to different CUDA devices")]
    DeviceMismatch { what: &'static str },
    /// NVRTC rejected the source; `log` is its diagnostic output.
    #[error("CUDA compilation failed:\n{log}")]
    Compile { log: String },
    /// Precompiled code (PTX, a CUBIN, a fatbin) that is not what its
    /// label says, or that the driver cannot load on this device;
    /// `message` says why, with the device's architecture.
    #[error("{format} image: {message}")]
    Image {
        format: crate::image::ImageFormat,
        message: String,
    },
    /// A DLPack tensor that cannot be imported (or an array that cannot be
    /// exported), with the reason.
    /// What was asked is not available in this form (the message says
    /// what to do instead).
    #[error("not supported: {what}")]
    Unsupported { what: String },
    /// A launch over its kernel's limits on the device, refused before
    /// the driver was called; `message` names the dimension and limit.
    #[error("launch refused: {message}")]
    LaunchLimit { message: String },
    #[error("DLPack: {message}")]
    Dlpack { message: String },
    /// NCCL returned an error status (`code` is its `ncclResult_t`);
    /// `message` is NCCL's own last error text, when it gave one.
    #[error("{call} failed: {name} ({code}){}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Nccl {
        call: &'static str,
        code: i32,
        name: String,
        message: String,
    },
    /// A wait with a deadline that passed: `what` says what did not
    /// finish, and what was done about it (a communicator is aborted).
    #[error("timed out after {after:?}: {what}")]
    Timeout {
        what: String,
        after: std::time::Duration,
    },
    /// Any other driver status.
    #[error("{call} failed: {name} ({code}): {message}")]
    Driver {
        call: &'static str,
        code: u32,
        name: String,
        message: String,
    },
}

/// Result with [`SafeError`].
pub type Result<T, E = SafeError> = std::result::Result<T, E>;

impl SafeError {
    /// The raw `CUresult` when this is a driver error.
    pub fn driver_code(&self) -> Option<u32> {
        match self {
            SafeError::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub(crate) fn driver(call: &'static str, err: DriverError) -> Self {
        let name = err
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", err.0));
        let message = err
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "no description from the driver".into());
        SafeError::Driver {
            call,
            code: err.0 as u32,
            name,
            message,
        }
    }

    pub(crate) fn is_oom(err: &DriverError) -> bool {
        err.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY
    }
}

/// Adds the name of the failing call to a cudarc result.
pub(crate) trait Context<T> {
    fn call(self, call: &'static str) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, DriverError> {
    fn call(self, call: &'static str) -> Result<T> {
        self.map_err(|e| SafeError::driver(call, e))
    }
}

/// A refused DLPack tensor, as this layer's error (same message).
impl From<DlpackError> for SafeError {
    fn from(e: DlpackError) -> Self {
        SafeError::Dlpack { message: e.message }
    }
}
