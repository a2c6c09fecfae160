//! What each backend finds on this machine: its hardware, found without
//! opening it, and the devices it can use. Not a backend: the calls go
//! through the dispatch (`DeviceImpl`) to each backend's own `Api`.

use super::{Backend, DeviceImpl};
use crate::Result;
use crate::device::DeviceInfo;

/// The hardware this machine has for `backend`, found without opening
/// it, described for a message; `None` where it has none, where the
/// backend needs none of its own, or where this build lacks the backend.
/// What counts is each backend's to say (its `Api::hardware`, in its own
/// folder under backend/). A backend with hardware here that does not open
/// has failed, rather than found nothing to run on (`unigpu soak --backend
/// all` fails on it).
pub fn hardware_here(backend: Backend) -> Option<String> {
    DeviceImpl::hardware(backend)
}

/// Every device `backend` can use on this machine. A backend that cannot
/// run here is an error that says why.
pub fn list_devices(backend: Backend) -> Result<Vec<DeviceInfo>> {
    DeviceImpl::list(backend)
}
