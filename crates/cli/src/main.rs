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
    /// Measure launch, compile, axpy and matmul; prints `key value` lines.
    Bench {
        /// Only the compile figures (used to time the disk cache from a new process).
        #[arg(long)]
        compile_only: bool,
        /// Only the CPU-backend op figures that bench/run_cpu.sh sets beside numpy's.
        #[arg(long, conflicts_with = "compile_only")]
        cpu_ops_only: bool,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Info => info::run(),
        Command::Demo { n } => demo::run(n),
        Command::Bench {
            compile_only,
            cpu_ops_only,
        } => bench::run(compile_only, cpu_ops_only),
    }
}
