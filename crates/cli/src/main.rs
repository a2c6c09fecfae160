//! `unigpu`: inspect the backends on this machine, run the demo job, the
//! benchmarks (and the pipeline workload alone) and the soak run.

mod bench;
mod demo;
mod info;
mod pipeline;
mod soak;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "unigpu", version, about = "One GPU API for Rust, C and Python")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the fallback chain with reasons, the chosen backend and every device.
    Info,
    /// Run the demo job on the backend Context::default() picks, and check it.
    Demo {
        /// Elements per array.
        #[arg(long, default_value_t = 1 << 20)]
        n: usize,
    },
    /// Measure launch, compile, transfers, axpy, matmul and the CPU ops beside
    /// their anchors; a markdown table, JSON, an SVG plot or `key value` lines.
    Bench(bench::BenchArgs),
    /// The benchmark's pipeline workload in one shape: stage times,
    /// sequential and pipelined wall times, overlap, a Chrome trace.
    Pipeline(pipeline::PipelineArgs),
    /// Random mixes of uploads, ops, kernels, streams, events, graph
    /// replays, pipelines and DLPack from several threads on every backend
    /// that opens, every result checked against the host, memory before and
    /// after; fails on any mismatch, error or growth.
    Soak(soak::SoakArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Info => info::run(),
        Command::Demo { n } => demo::run(n),
        Command::Bench(args) => bench::run(args),
        Command::Pipeline(args) => pipeline::run(args),
        Command::Soak(args) => soak::main(args),
    }
}
