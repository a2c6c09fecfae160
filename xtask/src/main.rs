//! Project automation: `cargo xtask <command>`.
//!
//! Commands:
//! - `gen [SPEC…] [--check]`: generate the FFI tiers from YAML wrapper specs
//!   (see docs/generator.md).
//! - `gpu-pack`: package GPU test binaries for the device machine.
//! - `capi-install --prefix DIR`: install the C API (libunigpu, headers,
//!   pkg-config and CMake files; see docs/c-api.md).
//! - `mutants [--vulkan | --gpu-pack] [--only TEXT]`: write deliberate bugs
//!   into a backend one at a time and check that the tests catch each: the
//!   CPU backend's here, the vulkan backend's with `--vulkan`, the CUDA and
//!   torch backends' packed for the GPU machine (docs/testing.md).
//! - `layers`: check that the facade's modules form no import cycle and
//!   keep the backend layering rules (xtask/src/layers/rules.rs).

mod capi_install;
mod generator; // the `gen` command (`gen` is a reserved keyword in edition 2024)
mod gpu_pack;
mod layers;
mod mutants;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, args)) = argv.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    // The arguments after the command.
    let args = args.to_vec();
    let result = match command.as_str() {
        "gen" => generator::run(&args),
        "gpu-pack" => gpu_pack::run(&args),
        "capi-install" => capi_install::run(&args),
        "mutants" => mutants::run(&args),
        "layers" => layers::run(&args),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(anyhow::anyhow!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <command>

commands:
  gen [SPEC...] [--check]   generate FFI tiers from specs/*.yaml (or the given specs);
                            --check writes nothing and fails naming each stale file
  gpu-pack [CARGO ARGS]     build GPU test binaries and examples into .gpu-pack/ and print
                            the device command that runs them
  capi-install --prefix DIR [--features F] [--debug] [--no-build]
                            build the C API and install libunigpu.a/.so, include/unigpu.h,
                            lib/pkgconfig/unigpu.pc and lib/cmake/unigpu/ into DIR
  mutants [--vulkan | --gpu-pack] [--only TEXT]
                            write deliberate bugs into the CPU backend one at a time and
                            fail unless the facade's tests catch every one; --vulkan does the
                            vulkan backend's on a Vulkan adapter; --gpu-pack builds the CUDA
                            and torch mutants into .gpu-mutants/ for the GPU machine; --only
                            keeps the mutations whose name contains TEXT (not with --gpu-pack)
  layers [--edges] [--root <dir>]
                            check crates/unigpu/src (or <dir>): no import cycle among its
                            files, backends use neither the public types nor each other
                            (rules in xtask/src/layers/rules.rs); --edges lists the graph";
