//! The torch backend's handle types (`Handles`). The operations on each
//! handle are implemented in the file of its code (`mod.rs` lists them).

use std::sync::Arc;

use super::graph::TorchGraph;
use super::{TorchBuffer, TorchDevice, TorchEvent, TorchStream};
use crate::backend::{Backend, Handles};
use crate::element::Element;

/// The torch backend: c10 streams and events, torch tensors and ops.
#[derive(Debug)]
pub(crate) struct Torch;

impl Handles for Torch {
    const KIND: Backend = Backend::Torch;
    /// Torch tensors here are CUDA tensors.
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLCUDA;
    type Device = TorchDevice;
    type Stream = Arc<TorchStream>;
    type Event = TorchEvent;

    /// The c10 stream captured by the driver; the graph keeps the tensors
    /// its work uses (`graph.rs`).
    type Graph = TorchGraph;

    type Buffer<T: Element> = TorchBuffer;

    type HostView<'a, T: Element> = &'a [T];
    type HostViewMut<'a, T: Element> = &'a mut [T];

    /// The buffer and whether the kernel writes it.
    type Arg<'a> = (&'a TorchBuffer, bool);
}
