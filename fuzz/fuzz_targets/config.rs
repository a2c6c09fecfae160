//! The config file parser and the environment overrides
//! (crates/unigpu/src/config.rs): `Config::parse` on any text, then
//! `Config::apply_env` on any `(name, value)` pairs.
//!
//! Input: the TOML text up to the first NUL byte; after it, environment
//! entries `NAME=VALUE` separated by NUL bytes (values may be any bytes,
//! UTF-8 or not).
//!
//! Properties: never a panic; every error says where the problem is and
//! what: a bad value names its key and the file position or the variable;
//! a TOML error names the position; a conflict names both keys. An
//! accepted configuration is consistent (the device suits the backend).

#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use libfuzzer_sys::fuzz_target;
use unigpu::config::{BACKEND_ENV, DEVICE_ENV};
use unigpu::{BackendChoice, Config, ConfigError, DeviceKind};

const ORIGIN: &str = "unigpu.toml";

/// `origin` is `unigpu.toml:LINE:COLUMN` with both numbers at least 1.
fn has_position(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix(ORIGIN)
        .and_then(|r| r.strip_prefix(':'))
    else {
        return false;
    };
    let mut parts = rest.split(':');
    let ok = |p: Option<&str>| {
        p.and_then(|p| p.parse::<u64>().ok())
            .is_some_and(|n| n >= 1)
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

fn check_file_error(e: &ConfigError, text: &str) {
    let shown = e.to_string();
    match e {
        ConfigError::BadValue { origin, key, .. } | ConfigError::WrongType { origin, key, .. } => {
            assert!(has_position(origin), "no position: {shown}");
            assert!(shown.contains(&format!("`{key}`")), "no key: {shown}");
        }
        ConfigError::Parse { origin, message } => {
            // toml gives a span for every error of non-empty text.
            assert!(
                has_position(origin) || text.trim().is_empty(),
                "no position: {shown}"
            );
            assert!(!message.is_empty(), "no message: {shown}");
        }
        ConfigError::Conflict { message, .. } => {
            assert!(
                message.contains("backend") && message.contains("device"),
                "{shown}"
            );
        }
        ConfigError::Read { .. } => panic!("parse read a file: {shown}"),
    }
}

fn check_env_error(e: &ConfigError) {
    let shown = e.to_string();
    match e {
        ConfigError::BadValue { origin, key, .. } => {
            let var = match *key {
                "backend" => BACKEND_ENV,
                "device" => DEVICE_ENV,
                other => panic!("an environment error about key {other}: {shown}"),
            };
            assert_eq!(origin, &format!("environment variable {var}"), "{shown}");
            assert!(shown.contains(&format!("`{key}`")), "no key: {shown}");
        }
        ConfigError::Conflict { message, .. } => {
            assert!(
                message.contains("backend") && message.contains("device"),
                "{shown}"
            );
        }
        other => panic!("an environment override gave {other:?}"),
    }
}

fn check_consistent(c: &Config) {
    if let (BackendChoice::Only(b), Some(d)) = (c.backend, c.device) {
        assert_eq!(d.kind, b.device_kind(), "{c:?}");
    }
    if let Some(d) = c.device {
        assert!(d.kind != DeviceKind::Cpu || d.ordinal == 0, "{c:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let (toml, env) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let text = String::from_utf8_lossy(toml);
    let mut config = match Config::parse(&text, ORIGIN) {
        Ok(c) => c,
        Err(e) => {
            check_file_error(&e, &text);
            Config::default()
        }
    };
    check_consistent(&config);
    let vars: Vec<(OsString, OsString)> = env
        .split(|&b| b == 0)
        .filter_map(|entry| {
            let at = entry.iter().position(|&b| b == b'=')?;
            Some((
                OsString::from_vec(entry[..at].to_vec()),
                OsString::from_vec(entry[at + 1..].to_vec()),
            ))
        })
        .collect();
    let before = config.clone();
    match config.apply_env(vars) {
        Ok(()) => check_consistent(&config),
        Err(e) => {
            check_env_error(&e);
            // A failed override may leave a half-applied config, but never
            // touches where it came from.
            assert_eq!(config.source, before.source);
        }
    }
});
