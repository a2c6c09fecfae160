//! The facade's error type: one variant per thing a user can act on.

use std::path::PathBuf;

use crate::{Backend, DType};

/// A configuration problem, naming where it came from (`unigpu.toml` or
/// an environment variable; see `config.rs`). Here, not in `config.rs`, so
/// that this file stays a leaf the backends may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A key holds a value outside its allowed set.
    #[error("{origin}: key `{key}`: {value:?} is not allowed; allowed values: {allowed}")]
    BadValue {
        /// `path:line:column`, or the environment variable's name.
        origin: String,
        key: &'static str,
        value: String,
        allowed: String,
    },
    /// A key holds a value of the wrong TOML type (every key takes a
    /// string).
    #[error("{origin}: key `{key}`: expected a string, found {found}; allowed values: {allowed}")]
    WrongType {
        /// `path:line:column`.
        origin: String,
        key: &'static str,
        /// The value's TOML type and text, e.g. `integer 3`.
        found: String,
        allowed: String,
    },
    /// Not valid TOML, or an unknown key (the message lists the known ones).
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    /// The file could not be read.
    #[error("{path}: cannot read the config file: {message}")]
    Read { path: PathBuf, message: String },
    /// Two settings that cannot both hold.
    #[error("{origin}: {message}")]
    Conflict { origin: String, message: String },
}

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
    /// Precompiled code (PTX, a CUBIN, a fatbin) that is not what its
    /// label says, is truncated, or does not load on this device (no code
    /// for its architecture, PTX newer than the driver); `message` says
    /// which, with the device's architecture.
    #[error("{format} image: {message}")]
    Image {
        format: unigpu_core::image::ImageFormat,
        message: String,
    },
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
    /// A shape operation refused (a reshape the strides cannot express,
    /// an axis out of range, shapes that do not broadcast), or an array
    /// whose layout a call cannot take; the message names the shapes.
    #[error("{what}: {message}")]
    Shape { what: &'static str, message: String },
    /// A batch handed to a pipeline (`side` is "input" or "output") that
    /// is not the pipeline's batch length; `batch` is its index, so the
    /// caller can find the one slice that is off.
    #[error(
        "pipeline batch {batch}: the {side} has {actual} elements, the pipeline's batches have {expected}"
    )]
    BatchSize {
        batch: usize,
        side: &'static str,
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
    /// A bad configuration file or environment variable; the
    /// [`ConfigError`] is this error's `source()`.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// Work enqueued on a stream failed; reported by the next sync.
    #[error("work on a stream failed: {message}")]
    StreamWork { message: String },
    /// A C++ exception from torch not covered above (torch backend).
    #[error("torch error in {call}: {message}")]
    Torch { call: String, message: String },
    /// A status from the CUDA driver not covered above. `backend` is the
    /// backend whose call failed: torch contexts reach the driver too.
    #[error("CUDA driver error in {call} ({backend} backend): {name} ({code}): {message}")]
    Driver {
        backend: Backend,
        call: String,
        code: u32,
        name: String,
        message: String,
    },
    /// A wait with a deadline that passed: a rank of a communicator that
    /// never arrived, stopped answering, or never called the collective
    /// the others did. `what` says which wait, and that the communicator
    /// was aborted (every later call on it fails).
    #[error("timed out after {after:?}: {what}")]
    Timeout {
        what: String,
        after: std::time::Duration,
    },
    /// Ranks that could not meet: a rendezvous whose peers disagree (world
    /// size, ranks given twice), or an address or file that cannot be used.
    #[error("rendezvous: {message}")]
    Rendezvous { message: String },
    /// A collective failed in the library that runs it (NCCL on CUDA);
    /// the communicator was aborted.
    #[error("collective error in {call}: {name} ({code}){}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Collective {
        call: String,
        code: i32,
        name: String,
        message: String,
    },
    /// A kernel made by `#[unigpu::kernel]` indexed an array out of bounds:
    /// the first such access since the last report, on the stream that the
    /// sync (or download) waited for. Nothing outside the array was read or
    /// written (a read gave 0, a write or atomic did nothing); the kernel
    /// ran to its end. Reported once.
    #[error("kernel `{kernel}` indexed `{array}` out of bounds at {file}:{line} ({access}); {}", access.consequence())]
    KernelOutOfBounds {
        kernel: String,
        /// The array as the kernel's source names it (an argument or a
        /// shared array).
        array: String,
        file: String,
        line: u32,
        access: ArrayAccess,
    },
    /// `source` happened in kernel `kernel`: a launch that failed, a fault
    /// found at the next sync (the last kernel launched on that stream),
    /// or an error or panic of a CPU implementation.
    #[error("kernel `{kernel}`: {source}")]
    InKernel {
        kernel: String,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// The same error, said of `backend`: errors that come up through the
    /// CUDA layer name cuda until the torch backend claims them.
    #[allow(dead_code)] // only the torch backend (a cargo feature) relabels
    pub(crate) fn on_backend(self, backend: Backend) -> Error {
        match self {
            Error::Driver {
                call,
                code,
                name,
                message,
                ..
            } => Error::Driver {
                backend,
                call,
                code,
                name,
                message,
            },
            Error::BackendUnavailable { reason, .. } => {
                Error::BackendUnavailable { backend, reason }
            }
            Error::InvalidDevice {
                asked, available, ..
            } => Error::InvalidDevice {
                backend,
                asked,
                available,
            },
            Error::Unsupported { what, .. } => Error::Unsupported { backend, what },
            Error::InKernel { kernel, source } => Error::InKernel {
                kernel,
                source: Box::new(source.on_backend(backend)),
            },
            other => other,
        }
    }

    /// `self`, as having happened in kernel `kernel` (unless it already
    /// names a kernel).
    pub(crate) fn in_kernel(self, kernel: &str) -> Error {
        match self {
            e @ (Error::InKernel { .. }
            | Error::KernelArgs { .. }
            | Error::KernelOutOfBounds { .. }) => e,
            e => Error::InKernel {
                kernel: kernel.to_string(),
                source: Box::new(e),
            },
        }
    }

    /// `in_kernel`, and also the name for an argument error raised inside
    /// a CPU implementation (which does not know its kernel's name).
    pub(crate) fn for_kernel(self, kernel: &str) -> Error {
        match self {
            Error::KernelArgs { kernel: k, message } if k.starts_with('(') => Error::KernelArgs {
                kernel: kernel.to_string(),
                message,
            },
            e => e.in_kernel(kernel),
        }
    }

    /// The error under any [`Error::InKernel`] wrappers: what went wrong,
    /// wherever it happened.
    pub fn root(&self) -> &Error {
        match self {
            Error::InKernel { source, .. } => source.root(),
            e => e,
        }
    }

    /// The kernel this error happened in, if it is known.
    pub fn kernel(&self) -> Option<&str> {
        match self {
            Error::InKernel { kernel, .. }
            | Error::KernelArgs { kernel, .. }
            | Error::KernelOutOfBounds { kernel, .. } => Some(kernel),
            _ => None,
        }
    }
}

/// How a kernel used an array element ([`Error::KernelOutOfBounds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayAccess {
    Read,
    Write,
    /// An atomic read-modify-write (`a.atomic_add(i, v)` ...).
    Atomic,
}

impl ArrayAccess {
    /// What the language did instead of the access.
    fn consequence(self) -> &'static str {
        match self {
            ArrayAccess::Read => "the read gave 0",
            ArrayAccess::Write => "the write was skipped",
            ArrayAccess::Atomic => "the atomic did nothing and gave 0",
        }
    }
}

impl std::fmt::Display for ArrayAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ArrayAccess::Read => "read",
            ArrayAccess::Write => "write",
            ArrayAccess::Atomic => "atomic",
        })
    }
}

/// Result with the facade's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A refused DLPack tensor (`unigpu-core`'s validation).
impl From<unigpu_core::dlpack::DlpackError> for Error {
    fn from(e: unigpu_core::dlpack::DlpackError) -> Self {
        Error::Dlpack { message: e.message }
    }
}

#[cfg(feature = "cuda")]
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
            S::Image { format, message } => Error::Image { format, message },
            S::Dlpack { message } => Error::Dlpack { message },
            // `for_kernel` puts the kernel's name in place of "(launch)".
            S::LaunchLimit { message } => Error::KernelArgs {
                kernel: "(launch)".into(),
                message,
            },
            S::Unsupported { what } => Error::Unsupported {
                backend: Backend::Cuda,
                what,
            },
            S::Nccl {
                call,
                code,
                name,
                message,
            } => Error::Collective {
                call: call.to_string(),
                code,
                name,
                message,
            },
            S::Timeout { what, after } => Error::Timeout { what, after },
            S::Driver {
                call,
                code,
                name,
                message,
            } => Error::Driver {
                backend: Backend::Cuda,
                call: call.to_string(),
                code,
                name,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[cfg(feature = "cuda")]
    fn driver() -> Error {
        Error::from(unigpu_cuda_safe::SafeError::Driver {
            call: "cuStreamSynchronize",
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            message: "an illegal memory access was encountered".into(),
        })
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn driver_errors_say_their_backend() {
        let e = driver();
        assert!(matches!(
            e,
            Error::Driver {
                backend: Backend::Cuda,
                ..
            }
        ));
        let e = e.on_backend(Backend::Torch);
        assert!(matches!(
            e,
            Error::Driver {
                backend: Backend::Torch,
                ..
            }
        ));
        assert!(e.to_string().contains("torch backend"), "{e}");
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn the_kernel_is_a_field_and_the_cause_the_source() {
        let e = driver().in_kernel("saxpy");
        assert_eq!(e.kernel(), Some("saxpy"));
        assert!(matches!(e.root(), Error::Driver { code: 700, .. }));
        assert_eq!(
            e.source().map(ToString::to_string),
            Some(driver().to_string())
        );
        // Relabelling reaches through the wrapper; wrapping twice does not nest.
        let e = e.on_backend(Backend::Torch).in_kernel("other");
        assert_eq!(e.kernel(), Some("saxpy"));
        assert!(matches!(
            e.root(),
            Error::Driver {
                backend: Backend::Torch,
                ..
            }
        ));
    }

    #[test]
    fn a_config_error_is_the_source() {
        let e = Error::from(ConfigError::WrongType {
            origin: "test:1:11".into(),
            key: "backend",
            found: "integer 3".into(),
            allowed: "\"auto\"".into(),
        });
        let source = e.source().expect("the config error is the source");
        assert!(source.downcast_ref::<ConfigError>().is_some());
    }
}
