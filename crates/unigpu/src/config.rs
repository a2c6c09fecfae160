//! `unigpu.toml` and the `UNIGPU_*` environment variables.
//!
//! ```toml
//! backend = "auto"    # "auto" | "torch" | "cuda" | "vulkan" | "cpu"
//! device  = "cuda:1"  # "cpu", "cuda" (= "cuda:0"), "cuda:N", "vulkan" or "vulkan:N"
//! dtype   = "f32"     # default element type for tools: f32 f64 f16 bf16 i32 u32 i64 u64 u8
//! ```
//! The file is `$UNIGPU_CONFIG` when set, else the first `unigpu.toml` in
//! the working directory or one of its parents. `UNIGPU_BACKEND` and
//! `UNIGPU_DEVICE` override the file's keys.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

pub use crate::error::ConfigError;
use crate::{Backend, DType, DeviceKind};

/// File name searched for in the working directory and its parents.
pub const CONFIG_FILE_NAME: &str = "unigpu.toml";
/// Names a config file explicitly.
pub const CONFIG_ENV: &str = "UNIGPU_CONFIG";
/// Overrides the `backend` key.
pub const BACKEND_ENV: &str = "UNIGPU_BACKEND";
/// Overrides the `device` key.
pub const DEVICE_ENV: &str = "UNIGPU_DEVICE";

const DTYPE_VALUES: &str =
    "\"f32\", \"f64\", \"f16\", \"bf16\", \"i32\", \"u32\", \"i64\", \"u64\", \"u8\"";

/// Which backend to use: one by name, or the fallback chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// torch → cuda → vulkan → cpu, first that works.
    #[default]
    Auto,
    /// Exactly this backend, or an error.
    Only(Backend),
}

/// A device named in the config: `cpu`, `cuda:N`, `vulkan:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSpec {
    /// `DeviceKind::Cuda` for `cuda:N` (driven by the cuda and the torch
    /// backend), `DeviceKind::Vulkan` for `vulkan:N` (adapter N), or
    /// `DeviceKind::Cpu`.
    pub kind: DeviceKind,
    pub ordinal: usize,
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.ordinal)
    }
}

impl DeviceSpec {
    fn parse(s: &str) -> Option<Self> {
        let (kind, ordinal) = match s.split_once(':') {
            Some((kind, n)) => (kind, n.parse().ok()?),
            None => (s, 0),
        };
        let kind: DeviceKind = kind.parse().ok()?;
        // The host is one device: `cpu` or `cpu:0`.
        (!kind.is_host() || ordinal == 0).then_some(DeviceSpec { kind, ordinal })
    }
}

/// The resolved settings: file values with environment overrides applied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    pub backend: BackendChoice,
    /// `None`: device 0 of whichever backend is chosen.
    pub device: Option<DeviceSpec>,
    pub dtype: DType,
    /// The file the settings came from, if any.
    pub source: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    // Any value, so that one of the wrong type is reported with its key
    // and what is allowed, not as serde's bare "invalid type".
    backend: Option<Spanned<toml::Value>>,
    device: Option<Spanned<toml::Value>>,
    dtype: Option<Spanned<toml::Value>>,
}

/// `key`'s value as a string, or a [`ConfigError::WrongType`] at `origin`.
fn string_value<'v>(
    key: &'static str,
    v: &'v Spanned<toml::Value>,
    allowed: &str,
    origin: impl FnOnce() -> String,
) -> Result<&'v str, ConfigError> {
    match v.get_ref() {
        toml::Value::String(s) => Ok(s),
        other => Err(ConfigError::WrongType {
            origin: origin(),
            key,
            found: format!("{} {other}", other.type_str()),
            allowed: allowed.to_string(),
        }),
    }
}

impl Config {
    /// Reads `$UNIGPU_CONFIG` or the nearest `unigpu.toml`, then applies
    /// `UNIGPU_BACKEND` / `UNIGPU_DEVICE`. No file is not an error.
    pub fn load() -> Result<Config, ConfigError> {
        let mut config = match std::env::var_os(CONFIG_ENV) {
            Some(path) if !path.is_empty() => Config::from_file(Path::new(&path))?,
            _ => match find_config_file() {
                Some(path) => Config::from_file(&path)?,
                None => Config::default(),
            },
        };
        config.apply_env(process_env())?;
        Ok(config)
    }

    /// What this config says of `backend` in the fallback chain: `Err`
    /// with why it is passed over before it is tried, or `Ok(required)`,
    /// true when the config names it (or a device only it serves), so
    /// failing to open it is an error rather than a reason to fall back.
    pub(crate) fn plan_for(&self, backend: Backend) -> Result<bool, String> {
        match (self.backend, self.device) {
            (BackendChoice::Only(b), _) if b != backend => {
                Err(format!("backend = \"{b}\" was requested"))
            }
            (BackendChoice::Auto, Some(d)) if d.kind != backend.device_kind() => {
                let named = d.kind.device_name(d.ordinal);
                Err(format!("device = \"{named}\" was requested"))
            }
            (BackendChoice::Only(_), _) => Ok(true),
            // A device named with a GPU backend's prefix asks for that
            // backend; another backend may serve such a device too, but
            // only when it can.
            (BackendChoice::Auto, device) => {
                Ok(device
                    .is_some_and(|d| !d.kind.is_host() && Backend::named_for(d.kind) == backend))
            }
        }
    }

    /// Reads one file, without environment overrides.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut config = Config::parse(&text, &path.display().to_string())?;
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parses TOML text; `origin` names it in errors (usually a path).
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: match e.span() {
                Some(span) => format!("{origin}:{}", line_col(text, span.start)),
                None => origin.to_string(),
            },
            message: e.message().trim().to_string(),
        })?;
        let at = |span: std::ops::Range<usize>| format!("{origin}:{}", line_col(text, span.start));
        let mut config = Config::default();
        if let Some(v) = raw.backend {
            let allowed = backend_values();
            let s = string_value("backend", &v, &allowed, || at(v.span()))?;
            config.backend = parse_backend(s, || at(v.span()))?;
        }
        if let Some(v) = raw.device {
            let s = string_value("device", &v, &device_values(), || at(v.span()))?;
            config.device = Some(parse_device(s, || at(v.span()))?);
        }
        if let Some(v) = raw.dtype {
            let s = string_value("dtype", &v, DTYPE_VALUES, || at(v.span()))?;
            config.dtype = s.parse().map_err(|()| ConfigError::BadValue {
                origin: at(v.span()),
                key: "dtype",
                value: s.to_string(),
                allowed: DTYPE_VALUES.into(),
            })?;
        }
        config.check_consistent(origin)?;
        Ok(config)
    }

    /// Applies the values of `UNIGPU_BACKEND` and `UNIGPU_DEVICE` (passed
    /// in, so callers and tests need not touch the process environment).
    pub fn apply_env_overrides(
        &mut self,
        backend: Option<&str>,
        device: Option<&str>,
    ) -> Result<(), ConfigError> {
        if let Some(v) = backend.filter(|v| !v.is_empty()) {
            self.backend = parse_backend(v, || format!("environment variable {BACKEND_ENV}"))?;
        }
        if let Some(v) = device.filter(|v| !v.is_empty()) {
            self.device = Some(parse_device(v, || {
                format!("environment variable {DEVICE_ENV}")
            })?);
        }
        let origin = match &self.source {
            Some(path) => format!("{} with the UNIGPU_* environment overrides", path.display()),
            None => "the UNIGPU_* environment variables".to_string(),
        };
        self.check_consistent(&origin)
    }

    /// Applies the `UNIGPU_BACKEND` and `UNIGPU_DEVICE` entries of an
    /// environment given as `(name, value)` pairs (as
    /// `std::env::vars_os()` yields them; other names are ignored, and of
    /// a name given twice the last value counts). A value that is not
    /// UTF-8 is an error naming the variable, not a silent default.
    pub fn apply_env<K, V>(
        &mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Result<(), ConfigError>
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut backend = None;
        let mut device = None;
        for (name, value) in vars {
            let (slot, key) = match name.as_ref().to_str() {
                Some(BACKEND_ENV) => (&mut backend, "backend"),
                Some(DEVICE_ENV) => (&mut device, "device"),
                _ => continue,
            };
            let value = value.as_ref();
            let Some(text) = value.to_str() else {
                let allowed = if key == "backend" {
                    backend_values()
                } else {
                    device_values()
                };
                return Err(ConfigError::BadValue {
                    origin: format!("environment variable {}", name.as_ref().display()),
                    key,
                    value: value.to_string_lossy().into_owned(),
                    allowed: format!("{allowed} (the value is not UTF-8)"),
                });
            };
            *slot = Some(text.to_string());
        }
        self.apply_env_overrides(backend.as_deref(), device.as_deref())
    }

    fn check_consistent(&self, origin: &str) -> Result<(), ConfigError> {
        match (self.backend, self.device) {
            (BackendChoice::Only(Backend::Cpu), Some(d)) if d.kind != DeviceKind::Cpu => {
                Err(ConfigError::Conflict {
                    origin: origin.to_string(),
                    message: format!("backend \"cpu\" cannot use device \"{d}\""),
                })
            }
            (BackendChoice::Only(b), Some(d)) if d.kind != b.device_kind() => {
                let kind = b.device_kind();
                // The host has one device, so its name carries no ordinal.
                let named = d.kind.device_name(d.ordinal);
                Err(ConfigError::Conflict {
                    origin: origin.to_string(),
                    message: format!(
                        "backend \"{b}\" cannot use device \"{named}\"; use \"{kind}:N\""
                    ),
                })
            }
            _ => Ok(()),
        }
    }
}

fn parse_backend(v: &str, origin: impl FnOnce() -> String) -> Result<BackendChoice, ConfigError> {
    if v == "auto" {
        return Ok(BackendChoice::Auto);
    }
    v.parse()
        .map(BackendChoice::Only)
        .map_err(|()| ConfigError::BadValue {
            origin: origin(),
            key: "backend",
            value: v.to_string(),
            allowed: backend_values(),
        })
}

/// From `Backend::ALL`, the one list of backends.
fn backend_values() -> String {
    format!("\"auto\", {}", Backend::quoted_names())
}

/// From `DeviceKind::ALL`: `"cpu", "cpu:0", "cuda", "cuda:N", ...`.
fn device_values() -> String {
    let names = DeviceKind::ALL.map(|k| {
        let last = if k.is_host() { "0" } else { "N" };
        format!("\"{k}\", \"{k}:{last}\"")
    });
    format!("{} (N = 0, 1, ...)", names.join(", "))
}

fn parse_device(v: &str, origin: impl FnOnce() -> String) -> Result<DeviceSpec, ConfigError> {
    DeviceSpec::parse(v).ok_or_else(|| ConfigError::BadValue {
        origin: origin(),
        key: "device",
        value: v.to_string(),
        allowed: device_values(),
    })
}

/// `line:column`, both 1-based, of a byte offset.
fn line_col(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("{line}:{column}")
}

/// This process's `UNIGPU_BACKEND` and `UNIGPU_DEVICE`, as the
/// `(name, value)` pairs [`Config::apply_env`] takes.
pub fn process_env() -> Vec<(&'static str, OsString)> {
    [BACKEND_ENV, DEVICE_ENV]
        .into_iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (name, value)))
        .collect()
}

/// The nearest `unigpu.toml` in the working directory or its parents.
pub fn find_config_file() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors()
        .map(|dir| dir.join(CONFIG_FILE_NAME))
        .find(|p| p.is_file())
}
