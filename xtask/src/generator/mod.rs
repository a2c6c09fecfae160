//! `cargo xtask gen [SPEC…] [--check]`: YAML wrapper specs to three FFI tiers.
//!
//! Pipeline (one job per file):
//! - [`xtask::spec`]: the YAML model, parsed with serde-saphyr (with spans);
//! - [`xtask::validate`]: checks and resolves it into [`model::Spec`], reporting
//!   every problem as `file:line:column` with a hint ([`error`]);
//!   these front-end modules (and [`load_str`]) live in the xtask library
//!   (xtask/src/lib.rs), which the fuzz target `spec_yaml` also drives;
//! - emitters: [`emit_cpp`] + [`emit_cxx`] (tier 1), [`emit_capi`] +
//!   [`emit_header`] (tier 2, sharing [`abi`]), [`emit_safe`] (tier 3);
//! - [`output`]: everything is generated in memory first; files are written
//!   only when every spec succeeded (`--check` compares instead).
//! - [`capi_header`]: with no SPEC given, also include/unigpu.h, the header
//!   of the hand-written C API (crates/capi), through cbindgen.

mod abi;
mod capi_header;
mod capi_runtime;
mod emit_capi;
mod emit_cpp;
mod emit_cxx;
mod emit_header;
mod emit_safe;
mod out;
pub mod output;

// The front end, from the library (xtask/src/lib.rs).
pub use xtask::{error, load_str, model};

#[cfg(test)]
mod tests;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

use error::{SpecError, SpecErrors};
use model::{Spec, do_not_edit};
use output::GenFile;

/// The repository root (the parent of xtask/).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Entry point of `cargo xtask gen`.
pub fn run(args: &[String]) -> Result<()> {
    let mut check = false;
    let mut specs = Vec::new();
    for a in args {
        match a.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!(
                    "usage: cargo xtask gen [SPEC...] [--check]\n\nWith no SPEC, every specs/*.yaml is generated.\n--check writes nothing and fails naming each stale file."
                );
                return Ok(());
            }
            flag if flag.starts_with('-') => {
                bail!("unknown flag `{flag}` (usage: cargo xtask gen [SPEC...] [--check])")
            }
            path => specs.push(PathBuf::from(path)),
        }
    }
    run_in(&repo_root(), specs, check)
}

/// `gen` with an explicit repository root (tests use a temporary one). With
/// no `specs`, every `specs/*.yaml` under `root` is generated and generated
/// files no spec produces any more are reported (`--check`) or removed.
pub fn run_in(root: &Path, mut specs: Vec<PathBuf>, check: bool) -> Result<()> {
    let all = specs.is_empty();
    if all {
        specs = discover(root)?;
        if specs.is_empty() {
            bail!("no specs found in {}", root.join("specs").display());
        }
    }
    let mut files = generate(root, &specs)?;
    if all {
        // The C API's header, from crates/capi (not from a spec).
        files.extend(capi_header::generate(root)?);
    }
    if check {
        let mut stale = output::stale(root, &files)?;
        if all {
            stale.extend(
                output::orphans(root, &files)?
                    .into_iter()
                    .map(|o| format!("{o} (no spec generates it any more)")),
            );
        }
        if stale.is_empty() {
            println!(
                "gen --check: {} generated files are up to date",
                files.len()
            );
            return Ok(());
        }
        for s in &stale {
            eprintln!("stale: {s}");
        }
        bail!(
            "{} generated file(s) are stale: {}; run `cargo xtask gen` and commit the result",
            stale.len(),
            stale.join(", ")
        );
    }
    let written = output::write_all(root, &files)?;
    let removed = if all {
        output::remove_orphans(root, &files)?
    } else {
        Vec::new()
    };
    for w in &written {
        println!("wrote {w}");
    }
    for r in &removed {
        println!("removed {r}");
    }
    println!(
        "gen: {} files from {} spec(s), {} changed, {} removed",
        files.len(),
        specs.len(),
        written.len(),
        removed.len()
    );
    Ok(())
}

/// `specs/*.yaml`, sorted.
pub fn discover(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join("specs");
    let mut v = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

/// The spec path as shown in messages and generated files: relative to the
/// repository root when inside it, with `/` separators.
pub fn display_path(root: &Path, path: &Path) -> String {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let abs = abs.canonicalize().unwrap_or(abs);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let shown = abs
        .strip_prefix(&root)
        .map(Path::to_path_buf)
        .unwrap_or(abs);
    shown.to_string_lossy().replace('\\', "/")
}

/// Generates every file of every spec in memory. Fails (with all spec
/// errors) before anything is written.
pub fn generate(root: &Path, specs: &[PathBuf]) -> Result<Vec<GenFile>> {
    let mut errors = Vec::new();
    let mut models = Vec::new();
    for path in specs {
        let shown = display_path(root, path);
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                errors.push(SpecError {
                    file: shown,
                    line: 0,
                    column: 0,
                    message: format!("cannot read the spec: {e}"),
                    hint: "check the path".into(),
                });
                continue;
            }
        };
        match load_str(&shown, &text) {
            Ok(spec) => match misnamed(&shown, &spec) {
                Some(e) => errors.push(e),
                None => models.push(spec),
            },
            Err(mut e) => errors.append(&mut e),
        }
    }
    if !errors.is_empty() {
        return Err(SpecErrors(errors).into());
    }
    let mut files = Vec::new();
    for spec in &models {
        files.extend(emit(spec)?);
    }
    output::check_unique(&files)?;
    Ok(files)
}

/// One spec, one name: a spec file is named after its `library`
/// (specs/<library>.yaml), as its bridge folder and C header are.
fn misnamed(shown: &str, spec: &Spec) -> Option<SpecError> {
    let stem = Path::new(shown).file_stem()?.to_string_lossy();
    if stem == spec.library {
        return None;
    }
    // The line of `library` (from the parser's position, so it holds for
    // any layout and line ending), column 1: the whole line is at fault.
    Some(SpecError {
        file: shown.to_string(),
        line: spec.library_at.0,
        column: 1,
        message: format!(
            "spec file `{shown}` is not named after its library `{}`",
            spec.library
        ),
        hint: format!(
            "rename the file to specs/{}.yaml, or change `library` to `{stem}`",
            spec.library
        ),
    })
}

/// All files of one spec.
pub fn emit(spec: &Spec) -> Result<Vec<GenFile>> {
    let mut mod_rs = format!("// {}\n\n", do_not_edit(&spec.file));
    mod_rs.push_str(&format!(
        "//! The generated tiers of `{}` (from {}).\n\n",
        spec.library, spec.file
    ));
    mod_rs.push_str("pub mod bridge;\npub mod capi;\npub mod safe;\n");
    Ok(vec![
        GenFile::new(spec.bridge_header_path(), emit_cpp::header(spec)),
        GenFile::new(spec.bridge_source_path(), emit_cpp::source(spec)),
        GenFile::new(
            spec.rust_path("bridge"),
            output::rustfmt(&emit_cxx::bridge(spec))?,
        ),
        GenFile::new(
            spec.rust_path("capi"),
            output::rustfmt(&emit_capi::capi(spec))?,
        ),
        GenFile::new(
            spec.rust_path("safe"),
            output::rustfmt(&emit_safe::safe(spec))?,
        ),
        GenFile::new(spec.rust_path("mod"), output::rustfmt(&mod_rs)?),
        GenFile::new(spec.c_header_path(), emit_header::header(spec)),
    ])
}
