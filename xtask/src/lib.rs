//! The front end of `cargo xtask gen` as a library: a YAML wrapper spec
//! parsed ([`spec`]) and validated ([`validate`]) into the model the
//! emitters read ([`model`]), every problem reported as a [`SpecError`]
//! with `file:line:column` and a hint ([`error`]).
//!
//! The `xtask` binary's `gen` command uses these modules (see
//! xtask/src/generator/mod.rs for the emitters); they are a library so that the
//! fuzz target `spec_yaml` (fuzz/, docs/fuzzing.md) drives the very code
//! `cargo xtask gen` runs.

#[path = "generator/error.rs"]
pub mod error;
#[path = "generator/model.rs"]
pub mod model;
#[path = "generator/names.rs"]
pub mod names;
#[path = "generator/spec.rs"]
pub mod spec;
#[path = "generator/validate.rs"]
pub mod validate;

use error::SpecError;
use model::Spec;

/// Parses and validates one spec from text, as `cargo xtask gen` does;
/// `file` names the spec in the errors.
pub fn load_str(file: &str, text: &str) -> Result<Spec, Vec<SpecError>> {
    let raw = spec::parse(file, text).map_err(|e| vec![e])?;
    validate::validate(file, text, &raw)
}
