//! The spec file model as written in YAML, and its parsing.
//!
//! Every value is wrapped in [`Spanned`] so that validation can report the
//! `line:column` of the offending node. Fields that the generator requires
//! are still `Option` here: a missing one is reported by validation with the
//! position of the enclosing mapping and a hint, instead of a bare serde
//! message.

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;

use super::error::SpecError;

/// A spec file as parsed from YAML, before validation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub library: Option<Spanned<String>>,
    pub prefix: Option<Spanned<String>>,
    pub namespace: Option<Spanned<String>>,
    pub rust_crate: Option<Spanned<String>>,
    pub doc: Option<Spanned<String>>,
    #[serde(default)]
    pub includes: Vec<Spanned<String>>,
    #[serde(default)]
    pub handle_types: Vec<Spanned<RawHandle>>,
    #[serde(default)]
    pub functions: Vec<Spanned<RawFunction>>,
    #[serde(default)]
    pub methods: Vec<Spanned<RawMethod>>,
}

/// An entry of `handle_types`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHandle {
    pub name: Option<Spanned<String>>,
    pub cpp_type: Option<Spanned<String>>,
    pub doc: Option<Spanned<String>>,
    /// Makes the handle Send + Sync; says why the C++ type allows it.
    #[serde(default, deserialize_with = "nullable")]
    pub thread_safe: Option<Spanned<String>>,
}

/// An entry of `functions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFunction {
    pub name: Option<Spanned<String>>,
    pub doc: Option<Spanned<String>>,
    #[serde(default)]
    pub params: Vec<Spanned<RawParam>>,
    #[serde(rename = "return")]
    pub ret: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub cpp_fn: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub cpp_body: Option<Spanned<String>>,
    /// Makes the call `unsafe` in Rust; says what the caller guarantees.
    #[serde(default, deserialize_with = "nullable")]
    pub safety: Option<Spanned<String>>,
}

/// An entry of `methods`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMethod {
    pub handle: Option<Spanned<String>>,
    pub name: Option<Spanned<String>>,
    pub doc: Option<Spanned<String>>,
    #[serde(default)]
    pub params: Vec<Spanned<RawParam>>,
    #[serde(rename = "return")]
    pub ret: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub cpp_method: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub cpp_body: Option<Spanned<String>>,
    #[serde(rename = "const")]
    pub is_const: Option<Spanned<bool>>,
    /// Makes the call `unsafe` in Rust; says what the caller guarantees.
    #[serde(default, deserialize_with = "nullable")]
    pub safety: Option<Spanned<String>>,
}

/// One parameter: a single-entry mapping `name: type`.
#[derive(Debug)]
pub struct RawParam {
    pub name: String,
    pub ty: Spanned<String>,
}

impl<'de> Deserialize<'de> for RawParam {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ParamVisitor;
        impl<'de> Visitor<'de> for ParamVisitor {
            type Value = RawParam;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a parameter as a single-entry mapping `name: type`, e.g. `- delta: i64`",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawParam, A::Error> {
                let Some((name, ty)) = map.next_entry::<String, Spanned<String>>()? else {
                    return Err(de::Error::custom(
                        "empty parameter mapping; write it as `- name: type`",
                    ));
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(de::Error::custom(
                        "a parameter must be a single-entry mapping `- name: type`; put each parameter in its own list item",
                    ));
                }
                Ok(RawParam { name, ty })
            }
        }
        deserializer.deserialize_map(ParamVisitor)
    }
}

/// A string that may be written as YAML null (`cpp_method:` with no value):
/// null reads as the empty string, so that validation can report the field
/// as empty at its own position instead of as missing.
struct NullableString(String);

impl<'de> Deserialize<'de> for NullableString {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NullableString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NullableString, E> {
                Ok(NullableString(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<NullableString, E> {
                Ok(NullableString(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<NullableString, E> {
                Ok(NullableString(String::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<NullableString, E> {
                Ok(NullableString(String::new()))
            }
        }
        deserializer.deserialize_any(V)
    }
}

fn nullable<'de, D: de::Deserializer<'de>>(d: D) -> Result<Option<Spanned<String>>, D::Error> {
    let s = Spanned::<NullableString>::deserialize(d)?;
    Ok(Some(Spanned::new(s.value.0, s.referenced, s.defined)))
}

/// Parses spec text. `file` names the spec in error messages.
pub fn parse(file: &str, text: &str) -> Result<RawSpec, SpecError> {
    serde_saphyr::from_str::<RawSpec>(text).map_err(|err| {
        let (line, column) = err
            .location()
            .map(|loc| (loc.line(), loc.column()))
            .unwrap_or((0, 0));
        let message = first_line(&err.to_string());
        let hint = if message.contains("unknown field") {
            "remove or rename the field; docs/spec-format.md lists every field".to_string()
        } else {
            "fix the YAML at this position; docs/spec-format.md shows a complete example"
                .to_string()
        };
        SpecError {
            file: file.to_string(),
            line,
            column,
            message: format!("invalid spec: {message}"),
            hint,
        }
    })
}

/// The lines of a spec as YAML counts them: `\n`, `\r\n` and a lone `\r`
/// each end a line (`str::lines` knows only the first two), so that line
/// numbers agree with the positions the parser reports.
pub fn yaml_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .flat_map(|l| l.split('\r'))
}

/// The first line of serde-saphyr's message, without the source snippet it
/// appends (we print our own position).
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message).trim();
    line.to_string()
}
