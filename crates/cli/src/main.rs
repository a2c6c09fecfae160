//! `unigpu`: inspect the backends on this machine and run the demo job.

mod bench;
mod demo;
mod info;

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
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Info => info::run(),
        Command::Demo { n } => demo::run(n),
        Command::Bench(args) => bench::run(args),
    }
}
