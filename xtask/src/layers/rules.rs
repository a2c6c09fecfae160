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
    /// unless the file matches `except`: not directly, nor through other
    /// files (an allowed file that uses a forbidden one makes it reachable
    /// from every file that uses it).
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
        // NVRTC and its caches, which the cuda and torch backends share; not
        // a backend itself.
        shared: &["nvrtc"],
    },
    Rule::Forbid {
        name: "backends do not use the public types",
        from: &["backend/**"],
        to: &["**"],
        // What a backend may use outside backend/, directly or through
        // another file: plain values and leaf files with no public handles
        // in them (kernel/comments.rs: signature.rs's comment scanner).
        // Not config.rs, nor lib.rs.
        except: &[
            "backend/**",
            "device.rs",
            "dlpack/sync.rs",
            "element.rs",
            "error.rs",
            "kernel/comments.rs",
            "kernel/options.rs",
            "kernel/signature.rs",
            "lock.rs",
            "ops/kinds.rs",
            "simd.rs",
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
            } => for_each_reach(graph, name, &mut out, from, |b| {
                matches_any(to, b) && !matches_any(except, b)
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

/// A violation of `rule` for every file that a file matching `from`
/// reaches, directly or not, and `forbidden` holds for; the path
/// through the graph is the first edge's text and the files after it (the
/// shortest chain, found breadth first). Neither forbidden files nor other
/// files matching `from` are gone through: each forbidden one is reported,
/// not what lies behind it, and each `from` file reports its own reach.
fn for_each_reach(
    graph: &Graph,
    rule: &'static str,
    out: &mut Vec<Violation>,
    from: &[&str],
    forbidden: impl Fn(&str) -> bool,
) {
    for (start, file) in graph.files.iter().enumerate() {
        if !matches_any(from, file) {
            continue;
        }
        // Each reached file's predecessor on the shortest chain.
        let mut before: Vec<Option<usize>> = vec![None; graph.files.len()];
        let mut seen = vec![false; graph.files.len()];
        seen[start] = true;
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for &to in graph.edges[at].keys() {
                if seen[to] {
                    continue;
                }
                seen[to] = true;
                before[to] = Some(at);
                if forbidden(&graph.files[to]) {
                    out.push(Violation {
                        file: file.clone(),
                        rule,
                        what: chain(graph, start, to, &before),
                    });
                } else if !matches_any(from, &graph.files[to]) {
                    queue.push_back(to);
                }
            }
        }
    }
}

/// `path (→ a → b → end)`: the text of the first edge from `start` and
/// the files from there to `end`.
fn chain(graph: &Graph, start: usize, end: usize, before: &[Option<usize>]) -> String {
    let mut files = vec![end];
    let mut at = end;
    while let Some(prev) = before[at].filter(|&p| p != start) {
        files.push(prev);
        at = prev;
    }
    files.reverse();
    let path = &graph.edges[start][&files[0]];
    let names: Vec<&str> = files.iter().map(|&f| graph.files[f].as_str()).collect();
    format!("{path} (→ {})", names.join(" → "))
}

fn matches_any(patterns: &[&str], file: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix("/**") {
        _ if *p == "**" => true,
        Some(dir) => file.strip_prefix(dir).is_some_and(|r| r.starts_with('/')),
        None => file == *p,
    })
}
