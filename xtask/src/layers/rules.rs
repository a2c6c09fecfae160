//! The layering rules of the facade, as a table, and their check.
//!
//! Patterns are paths relative to `crates/unigpu/src`: `**` is every file,
//! `dir/**` every file below `dir/`, anything else one file (which need not
//! exist).

use super::graph::Graph;

/// One rule of the table.
#[derive(Debug)]
pub enum Rule {
    /// A file in one folder directly under `parent` may not depend on a
    /// file in another folder directly under it, unless that folder is one
    /// of `shared`. Files directly in `parent` are in no folder: they may
    /// use, and be used by, every folder.
    Siblings {
        name: &'static str,
        parent: &'static str,
        shared: &'static [&'static str],
    },
    /// A file matching `from` may not depend on a file matching `to`,
    /// unless the file matches `except`.
    Forbid {
        name: &'static str,
        from: &'static [&'static str],
        to: &'static [&'static str],
        except: &'static [&'static str],
    },
    /// `text` may appear only in files matching `only_in`.
    TextOnlyIn {
        name: &'static str,
        text: &'static str,
        only_in: &'static [&'static str],
    },
}

pub const RULES: &[Rule] = &[
    Rule::Siblings {
        name: "backends do not use each other",
        parent: "backend",
        // Code the cuda and torch backends share; not a backend itself.
        shared: &["driver"],
    },
    Rule::Forbid {
        name: "backends do not use the public types",
        from: &["backend/**"],
        to: &["**"],
        // What a backend may use outside backend/: plain values and leaf
        // files with no public handles in them. Not config.rs, nor lib.rs.
        except: &[
            "backend/**",
            "device.rs",
            "dlpack/sync.rs",
            "element.rs",
            "error.rs",
            "kernel/options.rs",
            "kernel/signature.rs",
            "lock.rs",
            "ops/kinds.rs",
        ],
    },
    Rule::TextOnlyIn {
        name: "the torch feature is named only by the backend dispatch",
        text: "feature = \"torch\"",
        only_in: &[
            "backend/mod.rs",
            "backend/dispatch.rs",
            "lib.rs",
            "backend/torch/**",
            "backend/missing/**",
        ],
    },
    Rule::TextOnlyIn {
        name: "the cuda feature is named only by the backend list and the CUDA-only items",
        text: "feature = \"cuda\"",
        only_in: &[
            "backend/mod.rs",
            // `KernelRef::cuda`, which only the cuda and torch backends call.
            "backend/code.rs",
            "backend/cuda/**",
            "backend/missing/**",
            // `cuda_probe`, `Probe`; the kernel cache folder (NVRTC's).
            "lib.rs",
            "kernel/mod.rs",
            // `From<SafeError>`; the stand-in `ForeignStream`.
            "error.rs",
            "dlpack/sync.rs",
        ],
    },
    Rule::TextOnlyIn {
        name: "the vulkan feature is named only by the backend list",
        text: "feature = \"vulkan\"",
        only_in: &["backend/mod.rs", "backend/vulkan/**", "backend/missing/**"],
    },
];

/// A broken rule: `file: rule: what`.
#[derive(Debug, PartialEq, Eq)]
pub struct Violation {
    pub file: String,
    pub rule: &'static str,
    /// The path that made the edge (and the file it reaches), or the line
    /// with the text.
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.rule, self.what)
    }
}

/// Every violation of `rules` in `graph`, by rule, then file.
pub fn check(graph: &Graph, rules: &[Rule]) -> Vec<Violation> {
    let mut out = Vec::new();
    for rule in rules {
        match rule {
            Rule::Siblings {
                name,
                parent,
                shared,
            } => {
                let folder = |file: &str| {
                    let rest = file.strip_prefix(parent)?.strip_prefix('/')?;
                    let (folder, _) = rest.split_once('/')?;
                    Some(folder.to_owned())
                };
                for_each_edge(graph, name, &mut out, |from, to| {
                    matches!(
                        (folder(from), folder(to)),
                        (Some(a), Some(b)) if a != b && !shared.contains(&b.as_str())
                    )
                });
            }
            Rule::Forbid {
                name,
                from,
                to,
                except,
            } => for_each_edge(graph, name, &mut out, |a, b| {
                matches_any(from, a) && matches_any(to, b) && !matches_any(except, b)
            }),
            Rule::TextOnlyIn {
                name,
                text,
                only_in,
            } => {
                for (file, source) in graph.files.iter().zip(&graph.texts) {
                    if matches_any(only_in, file) {
                        continue;
                    }
                    for (n, line) in source.lines().enumerate() {
                        if line.contains(text) {
                            out.push(Violation {
                                file: file.clone(),
                                rule: name,
                                what: format!("line {}: {}", n + 1, line.trim()),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// A violation of `rule` for every edge `broken(from, to)` holds for.
fn for_each_edge(
    graph: &Graph,
    rule: &'static str,
    out: &mut Vec<Violation>,
    broken: impl Fn(&str, &str) -> bool,
) {
    for (from, edges) in graph.edges.iter().enumerate() {
        for (&to, path) in edges {
            let (a, b) = (&graph.files[from], &graph.files[to]);
            if broken(a, b) {
                out.push(Violation {
                    file: a.clone(),
                    rule,
                    what: format!("{path} (→ {b})"),
                });
            }
        }
    }
}

fn matches_any(patterns: &[&str], file: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix("/**") {
        _ if *p == "**" => true,
        Some(dir) => file.strip_prefix(dir).is_some_and(|r| r.starts_with('/')),
        None => file == *p,
    })
}
