//! The backend's two kinds of refusal, said of vulkan.

use crate::backend::Backend;
use crate::error::Error;

/// What this backend cannot do, and why.
pub(crate) fn unsupported(what: String) -> Error {
    Error::Unsupported {
        backend: Backend::Vulkan,
        what,
    }
}

/// Why the backend cannot run here at all.
pub(crate) fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: Backend::Vulkan,
        reason: reason.into(),
    }
}
