//! `cargo xtask layers`: checks the module structure of the facade crate
//! (`crates/unigpu/src`).
//!
//! Dependencies point one way: the public types use the backend contract,
//! backends use neither the public types nor each other; no import cycle
//! among the facade's modules. The command builds the graph of the
//! facade's files (an edge for each `crate::`, `super::`, `self::` or
//! child-module path, see graph.rs), reports every import cycle with an
//! example path through it, then every broken rule of the table in
//! rules.rs, and fails if there is any.
//!
//! It also checks the crate-level rules of crates.rs on the workspace's
//! resolved dependency graph (`cargo metadata`): the core crate
//! (`unigpu-core`) depends on no backend, directly or not; and, from
//! `cargo tree`, that the facade without its default features compiles no
//! CUDA crate.

mod crates;
mod cycles;
mod graph;
mod rules;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use cycles::Cycle;
use graph::Graph;
use rules::Violation;

const USAGE: &str = "usage: cargo xtask layers [--edges] [--root <dir>]";

pub fn run(args: &[String]) -> Result<()> {
    let mut show_edges = false;
    let mut root = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--edges" => show_edges = true,
            "--root" => match args.next() {
                Some(dir) => root = Some(PathBuf::from(dir)),
                None => bail!("--root needs a directory\n{USAGE}"),
            },
            _ => bail!("unknown argument `{arg}`\n{USAGE}"),
        }
    }
    let root = root.unwrap_or_else(|| crate::generator::repo_root().join("crates/unigpu/src"));
    if !root.is_dir() {
        bail!("layers: {} is not a directory", root.display());
    }
    let report = check(&root)?;
    if show_edges {
        print!("{}", report.edges());
    }
    print!("{}", report.problems());
    let repo = crate::generator::repo_root();
    let graph = crates::resolve(&repo)?;
    let mut crate_violations = crates::check(&graph, crates::CRATE_RULES);
    for rule in crates::FEATURE_RULES {
        crate_violations.extend(crates::check_built(&crates::built(&repo, rule)?, rule));
    }
    for violation in &crate_violations {
        println!("{violation}");
    }
    if !report.passed() || !crate_violations.is_empty() {
        bail!(
            "layers: {} import cycle(s), {} rule violation(s), {} crate rule violation(s)",
            report.cycles.len(),
            report.violations.len(),
            crate_violations.len()
        );
    }
    println!("{}", report.summary());
    println!(
        "layers: {} crate rule(s) hold ({})",
        crates::CRATE_RULES.len() + crates::FEATURE_RULES.len(),
        crates::CRATE_RULES
            .iter()
            .map(|r| r.name)
            .chain(crates::FEATURE_RULES.iter().map(|r| r.name))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok(())
}

/// What the check found in one source tree.
#[derive(Debug)]
pub struct Report {
    pub graph: Graph,
    pub cycles: Vec<Cycle>,
    pub violations: Vec<Violation>,
}

/// Reads the tree at `root` and checks it for cycles and against the rules.
pub fn check(root: &Path) -> Result<Report> {
    let graph = Graph::read(root)?;
    let cycles = cycles::find(&graph.edges);
    let violations = rules::check(&graph, rules::RULES);
    Ok(Report {
        graph,
        cycles,
        violations,
    })
}

impl Report {
    pub fn passed(&self) -> bool {
        self.cycles.is_empty() && self.violations.is_empty()
    }

    pub fn summary(&self) -> String {
        format!(
            "layers: {} files, {} edges, no cycles, rules hold",
            self.graph.files.len(),
            self.graph.edge_count()
        )
    }

    /// Every edge, `from → to (first path)`, one a line.
    pub fn edges(&self) -> String {
        let files = &self.graph.files;
        let mut out = String::new();
        for (from, edges) in self.graph.edges.iter().enumerate() {
            for (&to, path) in edges {
                let _ = writeln!(out, "{} → {} ({path})", files[from], files[to]);
            }
        }
        out
    }

    /// The cycles, then the violations, as text (empty if none).
    pub fn problems(&self) -> String {
        let files = &self.graph.files;
        let mut out = String::new();
        for cycle in &self.cycles {
            let _ = writeln!(out, "import cycle among {} files:", cycle.files.len());
            let mut line = String::new();
            for &f in &cycle.files {
                if !line.is_empty() && line.len() + files[f].len() > 90 {
                    let _ = writeln!(out, "   {line}");
                    line.clear();
                }
                let _ = write!(line, " {},", files[f]);
            }
            let _ = writeln!(out, "   {}", line.trim_end_matches(','));
            let _ = writeln!(out, "  for example:");
            for &(from, to) in &cycle.example {
                let path = &self.graph.edges[from][&to];
                let _ = writeln!(out, "    {} → {} ({path})", files[from], files[to]);
            }
        }
        if !self.cycles.is_empty() && !self.violations.is_empty() {
            out.push('\n');
        }
        for violation in &self.violations {
            let _ = writeln!(out, "{violation}");
        }
        out
    }
}
