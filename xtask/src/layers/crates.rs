//! The crate-level rules of `cargo xtask layers`: which workspace crates
//! may depend on which, read from `cargo metadata`'s resolved graph (every
//! dependency kind, direct or not, so a backend reached through another
//! crate counts too); and which crates a package built with given
//! features may compile, read from `cargo tree`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use super::rules::Violation;

/// The crates that are, or pull in, a backend: the CUDA layers, the torch
/// bridge, the Vulkan crates, and the facade (which holds every backend).
pub const BACKEND_CRATES: &[&str] = &[
    "unigpu",
    "unigpu-cuda-sys",
    "unigpu-cuda-safe",
    "unigpu-cuda-rt",
    "unigpu-torch-sys",
    "unigpu-torch-bridge",
    "unigpu-vulkan-sys",
    "unigpu-capi",
    "unigpu-capi-runtime",
    "cudarc",
    "tch",
    "torch-sys",
    "cxx",
    "wgpu",
    "naga",
];

/// A workspace crate that may not depend, directly or not, on any of
/// `forbid`.
#[derive(Debug)]
pub struct CrateRule {
    pub name: &'static str,
    pub package: &'static str,
    pub forbid: &'static [&'static str],
}

pub const CRATE_RULES: &[CrateRule] = &[CrateRule {
    name: "the core crate depends on no backend",
    package: "unigpu-core",
    forbid: BACKEND_CRATES,
}];

/// The CUDA crates: the CUDA layers and what drives CUDA devices beside
/// them (the torch bridge and libtorch).
pub const CUDA_CRATES: &[&str] = &[
    "unigpu-cuda-sys",
    "unigpu-cuda-safe",
    "unigpu-cuda-rt",
    "unigpu-torch-sys",
    "unigpu-torch-bridge",
    "cudarc",
    "tch",
    "torch-sys",
];

/// A package built with `args` (cargo's feature flags) may not compile
/// any of `forbid`.
#[derive(Debug)]
pub struct FeatureRule {
    pub name: &'static str,
    pub package: &'static str,
    pub args: &'static [&'static str],
    pub forbid: &'static [&'static str],
}

pub const FEATURE_RULES: &[FeatureRule] = &[FeatureRule {
    name: "the facade without its default features (cuda among them) compiles no CUDA crate",
    package: "unigpu",
    args: &["--no-default-features"],
    forbid: CUDA_CRATES,
}];

/// The packages `cargo tree` says `rule.package` compiles (normal and
/// build dependencies) when built alone with `rule.args`: feature
/// unification across the workspace, which the build environment may turn
/// on, is turned off here, or other members' features would count.
pub fn built(repo: &Path, rule: &FeatureRule) -> Result<BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "-p", rule.package])
        .args(rule.args)
        .arg("--manifest-path")
        .arg(repo.join("Cargo.toml"))
        .env("CARGO_RESOLVER_FEATURE_UNIFICATION", "selected")
        .output()
        .context("running cargo tree")?;
    if !out.status.success() {
        bail!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// Every crate of `rule.forbid` in `built` (from [`built`]).
pub fn check_built(built: &BTreeSet<String>, rule: &FeatureRule) -> Vec<Violation> {
    rule.forbid
        .iter()
        .filter(|c| built.contains(**c))
        .map(|c| Violation {
            file: format!("{} {}", rule.package, rule.args.join(" ")),
            rule: rule.name,
            what: format!("compiles {c}"),
        })
        .collect()
}

/// Every package's dependencies (names, every kind), as `cargo metadata`
/// resolves the workspace at `repo`.
pub fn resolve(repo: &Path) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--manifest-path",
        ])
        .arg(repo.join("Cargo.toml"))
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: Value = serde_json::from_slice(&out.stdout).context("reading cargo metadata")?;
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .context("cargo metadata: no packages")?
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let mut graph = BTreeMap::new();
    for node in meta["resolve"]["nodes"]
        .as_array()
        .context("cargo metadata: no resolve graph")?
    {
        let Some(name) = node["id"].as_str().and_then(|id| names.get(id)) else {
            continue;
        };
        let deps: BTreeSet<String> = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| names.get(d["pkg"].as_str()?))
            .map(|n| n.to_string())
            .collect();
        graph
            .entry(name.to_string())
            .or_insert_with(BTreeSet::new)
            .extend(deps);
    }
    Ok(graph)
}

/// Every violation of `rules` in `graph` (from [`resolve`]); a rule's
/// package missing from the graph is one too, so a renamed crate cannot
/// pass unchecked.
pub fn check(graph: &BTreeMap<String, BTreeSet<String>>, rules: &[CrateRule]) -> Vec<Violation> {
    let mut out = Vec::new();
    for rule in rules {
        let Some(direct) = graph.get(rule.package) else {
            out.push(Violation {
                file: rule.package.to_owned(),
                rule: rule.name,
                what: "no such package in the workspace".into(),
            });
            continue;
        };
        // Breadth-first, remembering how each crate was reached.
        let mut via: BTreeMap<&str, &str> = BTreeMap::from([(rule.package, rule.package)]);
        let mut queue: Vec<&str> = direct.iter().map(String::as_str).collect();
        for &d in &queue {
            via.insert(d, rule.package);
        }
        while let Some(next) = queue.pop() {
            for dep in graph.get(next).into_iter().flatten() {
                if !via.contains_key(dep.as_str()) {
                    via.insert(dep, next);
                    queue.push(dep);
                }
            }
        }
        for &bad in rule.forbid {
            if let Some(&parent) = via.get(bad) {
                let mut chain = vec![bad];
                let mut at = parent;
                while at != rule.package {
                    chain.push(at);
                    at = via[at];
                }
                chain.push(rule.package);
                chain.reverse();
                out.push(Violation {
                    file: rule.package.to_owned(),
                    rule: rule.name,
                    what: format!("depends on {bad} ({})", chain.join(" → ")),
                });
            }
        }
    }
    out
}
