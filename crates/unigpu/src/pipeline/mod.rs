//! Pipelines: upload → compute → download over a sequence of host batches,
//! with the stages of different batches overlapping on three streams
//! (docs/pipelines.md).
//!
//! Files: `run.rs` the [`Pipeline`] and its runs, `stages.rs` how the
//! stages are issued (threads, events), `streams.rs` its three streams,
//! `timeline.rs` the [`Timeline`] and its Chrome trace, `report.rs` the
//! overlap figures, `bench.rs` the baseline workload.

mod bench;
mod report;
mod run;
mod stages;
mod streams;
mod timeline;

pub use bench::{HostMemory, Workload, WorkloadOptions, bench_workload, bench_workload_with};
pub use report::PipelineReport;
pub use run::Pipeline;
pub use timeline::{Span, Stage, Timeline};
