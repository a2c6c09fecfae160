//! The torch backend's marker type, what the contract's traits are
//! implemented for (wgpu-hal's `Api`): `mod.rs` names its handle types
//! (`Handles`) and lists the files that implement the operations on each;
//! and what those files share.

use crate::backend::{Backend, GraphApi, Handles};
use crate::error::{Error, Result};

/// A driver error met through a torch context, said of torch.
pub(crate) fn driver_error(e: unigpu_cuda_safe::SafeError) -> Error {
    Error::from(e).on_backend(Backend::Torch)
}

/// Refuses `what` while `stream` captures a graph, saying why. Asked
/// through the contract (`graph.rs` keeps the captures) by the streams',
/// events' and buffers' files, which `graph.rs` imports.
pub(crate) fn refuse(stream: &<Torch as Handles>::Stream, what: &str, why: &str) -> Result<()> {
    if Torch::is_capturing(stream) {
        return Err(Error::Unsupported {
            backend: Backend::Torch,
            what: format!("{what} while the stream captures a graph: {why}"),
        });
    }
    Ok(())
}
/// The torch backend: c10 streams and events, torch tensors and ops.
#[derive(Debug)]
pub(crate) struct Torch;
