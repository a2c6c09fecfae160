//! Pipelines: upload → compute → download over a sequence of host batches,
//! with the stages of different batches overlapping on three streams
//! (docs/pipelines.md).
//!
//! Files: `run.rs` the [`Pipeline`] and its runs, `stages.rs` how the
//! stages are issued (threads, events), `streams.rs` its three streams,
//! `timeline.rs` the [`Timeline`] and its Chrome trace, `report.rs` the
//! overlap figures. The benchmark's workload is the CLI's
//! (crates/cli/src/bench/workload.rs).

mod report;
mod run;
mod stages;
mod streams;
mod timeline;

pub use report::PipelineReport;
pub use run::Pipeline;
pub use timeline::{Span, Stage, Timeline};
