//! The three streams of a pipeline.

use super::timeline::Stage;
use crate::{Result, Stream};

/// The three streams of a pipeline, one per stage.
#[derive(Debug)]
pub(crate) struct Streams {
    pub(crate) upload: Stream,
    pub(crate) compute: Stream,
    pub(crate) download: Stream,
}

impl Streams {
    pub(crate) fn of(&self, stage: Stage) -> &Stream {
        match stage {
            Stage::Upload => &self.upload,
            Stage::Compute => &self.compute,
            Stage::Download => &self.download,
        }
    }

    /// Waits for all three; returns the first error any of them raised
    /// (an op that failed on the compute stream, say).
    pub(crate) fn sync(&self) -> Result<()> {
        let results = Stage::ALL.map(|s| self.of(s).sync());
        results.into_iter().collect()
    }
}
