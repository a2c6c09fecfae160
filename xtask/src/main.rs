//! Project automation: `cargo xtask <command>`.
//!
//! - `gpu-pack`: build every test binary and the CLI in release mode, copy
//!   them into `.gpu-pack/` with a runner script, and print the device
//!   command that runs them on the GPU machine.

mod gpu_pack;

use anyhow::bail;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gpu-pack") => gpu_pack::run(&args[1..]),
        Some(other) => bail!("unknown xtask command {other:?}\n\n{USAGE}"),
        None => bail!("no command given\n\n{USAGE}"),
    }
}

const USAGE: &str = "usage: cargo xtask <command>
commands:
  gpu-pack [--features F]   build GPU test binaries into .gpu-pack/ and print the device command";
