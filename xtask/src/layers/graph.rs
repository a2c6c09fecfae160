//! The module graph of a source tree: one node per `.rs` file, an edge from
//! a file to every file whose module one of its paths names.
//!
//! A path counts when it starts with `crate::`, `self::` or `super::`, or
//! with the name of a child module of the module it is written in (how
//! `pub use child::Item;` re-exports are written). It resolves to the file
//! of its longest module prefix: `crate::kernel::Grid` is `kernel/mod.rs`,
//! even when `Grid` is a re-export. `mod child;` is not an edge.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{Context as _, Result};
use syn::buffer::{Cursor, TokenBuffer};
use syn::visit::{self, Visit};

/// The files of the tree and the edges between them.
#[derive(Debug)]
pub struct Graph {
    /// Paths relative to the root, with `/`, sorted.
    pub files: Vec<String>,
    /// Each file's source text.
    pub texts: Vec<String>,
    /// `edges[from]`: target file → the first path text that made the edge.
    pub edges: Vec<BTreeMap<usize, String>>,
}

impl Graph {
    /// Reads and parses every `.rs` file under `root`.
    pub fn read(root: &Path) -> Result<Graph> {
        let mut files = Vec::new();
        list_rs(root, root, &mut files)?;
        files.sort();
        let texts = files
            .iter()
            .map(|f| std::fs::read_to_string(root.join(f)).with_context(|| format!("reading {f}")))
            .collect::<Result<Vec<_>>>()?;
        let modules: HashMap<Vec<String>, usize> = files
            .iter()
            .enumerate()
            .map(|(i, f)| (module_of(f), i))
            .collect();
        let mut edges = Vec::new();
        for (i, (file, text)) in files.iter().zip(&texts).enumerate() {
            let ast = syn::parse_file(text).with_context(|| format!("parsing {file}"))?;
            let mut paths = Paths {
                module: module_of(file),
                modules: &modules,
                found: Vec::new(),
            };
            paths.visit_file(&ast);
            let mut out = BTreeMap::new();
            for (absolute, text) in paths.found {
                let target = (0..=absolute.len())
                    .rev()
                    .find_map(|n| modules.get(&absolute[..n]).copied());
                if let Some(target) = target.filter(|&t| t != i) {
                    out.entry(target).or_insert(text);
                }
            }
            edges.push(out);
        }
        Ok(Graph {
            files,
            texts,
            edges,
        })
    }

    pub fn edge_count(&self) -> usize {
        self.edges.iter().map(BTreeMap::len).sum()
    }
}

/// Every `.rs` file under `dir`, relative to `base`.
fn list_rs(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            list_rs(base, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(base).expect("under base");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// The module a file holds: `lib.rs` is the crate (`[]`), `a/b.rs` and
/// `a/b/mod.rs` are `a::b`.
pub fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if stem == "lib" || stem == "mod" {
        return Vec::new();
    }
    stem.split('/').map(str::to_owned).collect()
}

/// Collects the module paths a file names, made absolute.
struct Paths<'a> {
    /// The module being visited (the file's, plus inline `mod x { }`s).
    module: Vec<String>,
    modules: &'a HashMap<Vec<String>, usize>,
    /// Absolute path, the path as written.
    found: Vec<(Vec<String>, String)>,
}

impl Paths<'_> {
    /// Records `segments` if they start at the crate, this module or a child.
    fn add(&mut self, segments: &[String], text: String) {
        if let Some(absolute) = self.absolute(segments) {
            self.found.push((absolute, text));
        }
    }

    /// `segments` as a path from the crate root, or `None` if not ours.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, mut rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut base = self.module.clone();
                base.pop()?;
                while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
                    base.pop()?;
                    rest = tail;
                }
                base
            }
            _ => {
                // `child::Item`; a bare `child` alone is more likely a local.
                let mut child = self.module.clone();
                child.push(first.clone());
                if rest.is_empty() || !self.modules.contains_key(&child) {
                    return None;
                }
                child
            }
        };
        base.extend_from_slice(rest);
        Some(base)
    }

    /// Every path a `use` tree imports, with the prefix above it.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident, ""),
            syn::UseTree::Rename(r) => {
                self.use_leaf(prefix, &r.ident, &format!(" as {}", r.rename))
            }
            syn::UseTree::Glob(_) => {
                let text = format!("{}::*", prefix.join("::"));
                self.add(prefix, text);
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], last: &syn::Ident, suffix: &str) {
        let mut segments = prefix.to_vec();
        // `use a::{self}` imports `a` itself.
        if last != "self" || prefix.is_empty() {
            segments.push(last.to_string());
        }
        let text = format!("{}{suffix}", segments.join("::"));
        match segments.as_slice() {
            // In a `use`, a child module's name alone counts too.
            [only] if !matches!(only.as_str(), "crate" | "self" | "super") => {
                let child = [self.module.as_slice(), segments.as_slice()].concat();
                if self.modules.contains_key(&child) {
                    self.found.push((child, text));
                }
            }
            _ => self.add(&segments, text),
        }
    }

    /// Paths in a macro's tokens (runs of `a::b::c`, `$crate::x`), which
    /// syn leaves unparsed.
    fn tokens(&mut self, mut cursor: Cursor) {
        while !cursor.eof() {
            if let Some((inside, _, _, next)) = cursor.any_group() {
                self.tokens(inside);
                cursor = next;
                continue;
            }
            let (segments, next) = path_at(cursor);
            if segments.len() > 1 {
                self.add(&segments, segments.join("::"));
            }
            cursor = match next {
                Some(next) => next,
                None => cursor
                    .token_tree()
                    .map_or(Cursor::empty(), |(_, next)| next),
            };
        }
    }
}

/// The `a::b::c` run of identifiers at `cursor` and the cursor after it
/// (`None` if there is no identifier there). `$crate` reads as `crate`.
fn path_at(cursor: Cursor) -> (Vec<String>, Option<Cursor>) {
    let mut segments = Vec::new();
    let mut at = cursor;
    if let Some((dollar, next)) = at.punct()
        && dollar.as_char() == '$'
        && next.ident().is_some_and(|(id, _)| id == "crate")
    {
        at = next;
    }
    let mut end = None;
    while let Some((ident, next)) = at.ident() {
        segments.push(ident.to_string());
        end = Some(next);
        match colons(next).and_then(|after| after.ident().map(|_| after)) {
            Some(after) => at = after,
            None => break,
        }
    }
    (segments, end)
}

/// The cursor after a `::` at `cursor`.
fn colons(cursor: Cursor) -> Option<Cursor> {
    let (first, next) = cursor.punct()?;
    let (second, after) = next.punct()?;
    (first.as_char() == ':' && second.as_char() == ':').then_some(after)
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_none() {
            self.use_tree(&mut Vec::new(), &item.tree);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.add(&segments, segments.join("::"));
        }
        visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.module.push(item.ident.to_string());
            visit::visit_item_mod(self, item);
            self.module.pop();
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let buffer = TokenBuffer::new2(mac.tokens.clone());
        self.tokens(buffer.begin());
        visit::visit_macro(self, mac);
    }
}
