//! include/unigpu.h: the header of the hand-written C API (crates/capi),
//! generated with cbindgen as a library. Settings live in
//! crates/capi/cbindgen.toml; cbindgen parses crates/capi/src/lib.rs and
//! the modules it declares (no `cargo metadata`, no build).

use anyhow::{Context, Result, anyhow};
use std::path::Path;

use super::output::GenFile;

/// Where the header goes, relative to the repository root.
pub const HEADER: &str = "include/unigpu.h";
/// The crate it is generated from.
pub const CRATE_DIR: &str = "crates/capi";

/// The header, or `None` when `root` has no C API crate (the generator's
/// tests run on temporary roots with specs only).
pub fn generate(root: &Path) -> Result<Option<GenFile>> {
    let dir = root.join(CRATE_DIR);
    let config_path = dir.join("cbindgen.toml");
    if !config_path.is_file() {
        return Ok(None);
    }
    let config = cbindgen::Config::from_file(&config_path)
        .map_err(|e| anyhow!("reading {}: {e}", config_path.display()))?;
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .with_context(|| format!("cbindgen on {CRATE_DIR}/src"))?;
    let mut bytes = Vec::new();
    bindings.write(&mut bytes);
    let text = String::from_utf8(bytes).context("cbindgen wrote non-UTF-8")?;
    Ok(Some(GenFile::new(HEADER.to_string(), text)))
}
