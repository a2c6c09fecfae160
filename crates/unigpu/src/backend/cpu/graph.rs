//! Graphs on the CPU backend (`GraphApi`): the jobs a stream recorded
//! while capturing (`CpuStream`'s capture list), submitted again.

use super::{Cpu, replay};
use crate::Error;
use crate::Result;
use crate::backend::GraphApi;
use crate::lock::lock;

impl GraphApi for Cpu {
    fn begin_capture(stream: &Self::Stream) -> Result<()> {
        let mut capture = lock(&stream.capture);
        if capture.is_some() {
            return Err(Error::Unsupported {
                backend: crate::Backend::Cpu,
                what: "begin_capture: this stream is already capturing; end that capture first"
                    .into(),
            });
        }
        *capture = Some(Vec::new());
        Ok(())
    }

    fn end_capture(stream: &Self::Stream) -> Result<Self::Graph> {
        lock(&stream.capture)
            .take()
            .ok_or_else(|| Error::Unsupported {
                backend: crate::Backend::Cpu,
                what: "end_capture: this stream is not capturing; call begin_capture first".into(),
            })
    }

    // The inherent method, which `enqueue` asks too.
    fn is_capturing(stream: &Self::Stream) -> bool {
        stream.is_capturing()
    }

    fn graph_launch(graph: &Self::Graph, stream: &Self::Stream) -> Result<()> {
        graph.iter().try_for_each(|r| replay(stream, r))
    }

    fn graph_len(graph: &Self::Graph) -> usize {
        graph.len()
    }
}
