//! The CUDA backend's streams (`StreamApi`) and the graphs captured from
//! them (`GraphApi`): the driver's, through `unigpu-cuda-safe`.

use super::Cuda;
use crate::backend::{GraphApi, StreamApi};
use crate::error::Result;

impl StreamApi for Cuda {
    fn stream_sync(stream: &Self::Stream) -> Result<()> {
        Ok(stream.handle.synchronize()?)
    }

    fn stream_is_idle(stream: &Self::Stream) -> Result<bool> {
        Ok(stream.handle.query()?)
    }

    fn stream_wait(stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        Ok(stream.handle.wait(event)?)
    }

    fn host_fn(stream: &Self::Stream, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        Ok(stream.handle.host_fn(f)?)
    }

    fn native_stream(stream: &Self::Stream) -> Option<u64> {
        Some(stream.handle.raw())
    }
}

impl GraphApi for Cuda {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        Ok(stream.handle.begin_capture()?)
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        Ok(stream.handle.end_capture()?)
    }

    fn is_capturing(stream: &Self::Stream) -> bool {
        stream.handle.is_capturing()
    }

    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()> {
        Ok(graph.launch(&stream.handle)?)
    }

    fn graph_len(graph: &Self::Graph) -> usize {
        graph.node_count()
    }
}
