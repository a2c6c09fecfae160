//! `cargo xtask capi-install --prefix DIR [--features F] [--debug] [--no-build]`:
//! installs unigpu's C API for C and C++ builds.
//!
//! Builds crates/clib (release unless `--debug`), asking rustc for the
//! system libraries the staticlib needs (`--print native-static-libs`), then
//! writes
//!
//! - `DIR/lib/libunigpu.a`, `DIR/lib/libunigpu.so`;
//! - `DIR/include/unigpu.h`, plus `ug_torch.h` / `ug_cuda_rt.h` with the
//!   `torch` / `cuda` features;
//! - `DIR/lib/pkgconfig/unigpu.pc`;
//! - `DIR/lib/cmake/unigpu/unigpuConfig.cmake` and
//!   `unigpuConfigVersion.cmake`,
//!
//! from the templates in crates/capi/pkg/. .ci/capi-tests.sh builds the C
//! test through both.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::generator::repo_root;

const USAGE: &str =
    "usage: cargo xtask capi-install --prefix DIR [--features F] [--debug] [--no-build]";

/// What rustc prints when it cannot be asked (`--no-build`): the usual list
/// for a Rust staticlib on Linux.
const DEFAULT_NATIVE_LIBS: &str = "-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc";

#[derive(Debug)]
struct Options {
    prefix: PathBuf,
    features: Vec<String>,
    release: bool,
    build: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut prefix = None;
    let mut features = Vec::new();
    let (mut release, mut build) = (true, true);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prefix" => prefix = Some(PathBuf::from(it.next().context(USAGE)?)),
            "--features" => features.extend(
                it.next()
                    .context(USAGE)?
                    .split([',', ' '])
                    .filter(|f| !f.is_empty())
                    .map(str::to_string),
            ),
            "--debug" => release = false,
            "--no-build" => build = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let prefix = prefix.context(USAGE)?;
    for f in &features {
        if f != "torch" && f != "cuda" {
            bail!("unknown feature `{f}` (unigpu-clib has `torch` and `cuda`)");
        }
    }
    Ok(Options {
        prefix,
        features,
        release,
        build,
    })
}

pub fn run(args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    let root = repo_root();
    let native = if opts.build {
        build(&root, &opts)?
    } else {
        DEFAULT_NATIVE_LIBS.to_string()
    };
    let profile = if opts.release { "release" } else { "debug" };
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join(profile);

    let prefix = absolute(&opts.prefix)?;
    let lib = prefix.join("lib");
    let include = prefix.join("include");
    let cmake = lib.join("cmake/unigpu");
    for d in [&lib, &include, &lib.join("pkgconfig"), &cmake] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    for name in ["libunigpu.a", "libunigpu.so"] {
        copy(&target.join(name), &lib.join(name))?;
    }
    let mut headers = vec!["unigpu.h"];
    if opts.features.iter().any(|f| f == "torch") {
        headers.push("ug_torch.h");
    }
    if opts.features.iter().any(|f| f == "cuda") {
        headers.push("ug_cuda_rt.h");
    }
    for h in &headers {
        copy(&root.join("include").join(h), &include.join(h))?;
    }

    let version = env!("CARGO_PKG_VERSION");
    let features = opts.features.join(";");
    let cmake_libs = native.split_whitespace().collect::<Vec<_>>().join(";");
    let fill = |template: &str| -> Result<String> {
        let path = root.join("crates/capi/pkg").join(template);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(text
            // No template writes the prefix in: unigpu.pc finds it from
            // `${pcfiledir}` and the CMake config from its own directory,
            // so the installed tree is relocatable (docs/c-api.md).
            .replace("@VERSION@", version)
            .replace("@LIBS_PRIVATE@", &native)
            .replace("@CMAKE_LINK_LIBS@", &cmake_libs)
            .replace("@FEATURES@", &features))
    };
    let outputs = [
        ("unigpu.pc.in", lib.join("pkgconfig/unigpu.pc")),
        ("unigpuConfig.cmake.in", cmake.join("unigpuConfig.cmake")),
        (
            "unigpuConfigVersion.cmake.in",
            cmake.join("unigpuConfigVersion.cmake"),
        ),
    ];
    for (template, out) in &outputs {
        std::fs::write(out, fill(template)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    println!(
        "capi-install: unigpu {version} ({profile}{}) into {}",
        if features.is_empty() {
            String::new()
        } else {
            format!(", features {}", opts.features.join(","))
        },
        prefix.display()
    );
    println!("  lib/libunigpu.a lib/libunigpu.so");
    println!("  include/{}", headers.join(" include/"));
    println!("  lib/pkgconfig/unigpu.pc (Libs.private: {native})");
    println!("  lib/cmake/unigpu/unigpuConfig.cmake, unigpuConfigVersion.cmake");
    Ok(())
}

/// Builds the library and returns rustc's native-static-libs line.
fn build(root: &Path, opts: &Options) -> Result<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["rustc", "-p", "unigpu-clib", "--lib"]);
    if opts.release {
        cmd.arg("--release");
    }
    if !opts.features.is_empty() {
        cmd.args(["--features", &opts.features.join(",")]);
    }
    cmd.args(["--", "--print", "native-static-libs"]);
    let out = cmd.output().context("running cargo rustc")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("building unigpu-clib failed:\n{stderr}");
    }
    Ok(stderr
        .lines()
        .find_map(|l| l.split("native-static-libs: ").nth(1))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| DEFAULT_NATIVE_LIBS.to_string()))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        Ok(std::env::current_dir()?.join(p))
    }
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}
