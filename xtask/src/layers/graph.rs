//! The module graph of a source tree: one node per `.rs` file, an edge from
//! a file to every file whose module one of its paths names.
//!
//! A path counts when it starts with `crate::`, `self::` or `super::`, or
//! with the name of a child module of the module it is written in (how
//! `pub use child::Item;` re-exports are written). It resolves to the file
//! of its longest module prefix, then through re-exports: when that module
//! re-exports the path's next name (`pub use`, `pub(crate) use`, a rename,
//! or a glob that holds the name), the path goes on from where the re-export
//! points, so `crate::Error` is `error.rs` even though `lib.rs` names it. A
//! re-export of another crate ends the path there: no edge. A name the
//! module does not re-export (defined there, a macro, unknown) stays at the
//! module's file. A file's own `pub use` items are still its edges, and a
//! private `use` is not a re-export. `mod child;` is not an edge.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use syn::buffer::{Cursor, TokenBuffer};
use syn::visit::{self, Visit};

/// How many re-exports one path is followed through, against loops.
const MAX_HOPS: usize = 16;

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

/// What a module makes visible to paths through it.
#[derive(Debug, Default)]
struct Exports {
    /// Re-exported name → the absolute path it points to (`None`: another
    /// crate's item).
    named: HashMap<String, Option<Vec<String>>>,
    /// `pub use m::*` of a module of this crate: `m`, absolute.
    globs: Vec<Vec<String>>,
    /// Names of the items defined in the module itself.
    defined: HashSet<String>,
}

impl Graph {
    /// Reads and parses every `.rs` file under `root`. A file that does not
    /// parse is an error naming it (all such files, not just the first).
    pub fn read(root: &Path) -> Result<Graph> {
        let mut files = Vec::new();
        list_rs(root, root, &mut files)?;
        files.sort();
        let texts = files
            .iter()
            .map(|f| std::fs::read_to_string(root.join(f)).with_context(|| format!("reading {f}")))
            .collect::<Result<Vec<_>>>()?;
        let mut asts = Vec::new();
        let mut errors = Vec::new();
        for (file, text) in files.iter().zip(&texts) {
            match syn::parse_file(text) {
                Ok(ast) => asts.push(ast),
                Err(e) => errors.push(format!("parsing {file}: {e}")),
            }
        }
        if !errors.is_empty() {
            bail!("{}", errors.join("\n"));
        }
        // Every module, inline `mod x { }`s included, → the file holding it.
        let mut modules: HashMap<Vec<String>, usize> = HashMap::new();
        for (i, (file, ast)) in files.iter().zip(&asts).enumerate() {
            let mut module = module_of(file);
            inline_modules(&ast.items, &mut module, i, &mut modules);
            modules.insert(module, i);
        }
        let mut found = Vec::new();
        let mut exports: HashMap<Vec<String>, Exports> = HashMap::new();
        for (file, ast) in files.iter().zip(&asts) {
            let mut paths = Paths {
                module: module_of(file),
                modules: &modules,
                found: Vec::new(),
                exports: &mut exports,
            };
            paths.exports_mut().defined.extend(defined(&ast.items));
            paths.visit_file(ast);
            found.push(paths.found);
        }
        let resolver = Resolver {
            modules: &modules,
            exports: &exports,
        };
        let edges = found
            .into_iter()
            .enumerate()
            .map(|(i, found)| {
                let mut out = BTreeMap::new();
                for (absolute, text) in found {
                    if let Some(target) = resolver.resolve(&absolute, 0).filter(|&t| t != i) {
                        out.entry(target).or_insert(text);
                    }
                }
                out
            })
            .collect();
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

/// Follows absolute paths through modules and their re-exports to files.
struct Resolver<'a> {
    modules: &'a HashMap<Vec<String>, usize>,
    exports: &'a HashMap<Vec<String>, Exports>,
}

impl Resolver<'_> {
    /// The file that defines what `path` names (`None`: another crate's).
    fn resolve(&self, path: &[String], hops: usize) -> Option<usize> {
        let (n, file) = (0..=path.len())
            .rev()
            .find_map(|n| self.modules.get(&path[..n]).map(|&f| (n, f)))?;
        if n == path.len() || hops >= MAX_HOPS {
            return Some(file);
        }
        self.lookup(&path[..n], &path[n], &path[n + 1..], hops)
            .unwrap_or(Some(file))
    }

    /// Where `module::name::rest` leads, or `None` if `module` neither
    /// re-exports nor defines `name`.
    fn lookup(
        &self,
        module: &[String],
        name: &str,
        rest: &[String],
        hops: usize,
    ) -> Option<Option<usize>> {
        let exports = self.exports.get(module)?;
        if let Some(target) = exports.named.get(name) {
            return Some(target.as_ref().and_then(|target| {
                if hops + 1 >= MAX_HOPS {
                    return self.modules.get(module).copied();
                }
                self.resolve(&[target.as_slice(), rest].concat(), hops + 1)
            }));
        }
        if exports.defined.contains(name) {
            return self.modules.get(module).map(|&f| Some(f));
        }
        if hops + 1 < MAX_HOPS {
            for glob in &exports.globs {
                if let Some(found) = self.lookup(glob, name, rest, hops + 1) {
                    return Some(found);
                }
            }
        }
        // Unknown here: it must come in through a glob, if there is one.
        let glob = exports.globs.first()?;
        self.modules.get(glob).map(|&f| Some(f))
    }
}

/// Records the inline modules under `module` (`mod x { }`), as in `file`.
fn inline_modules(
    items: &[syn::Item],
    module: &mut Vec<String>,
    file: usize,
    out: &mut HashMap<Vec<String>, usize>,
) {
    for item in items {
        if let syn::Item::Mod(m) = item
            && let Some((_, items)) = &m.content
        {
            module.push(m.ident.to_string());
            out.insert(module.clone(), file);
            inline_modules(items, module, file, out);
            module.pop();
        }
    }
}

/// The names of the items `items` define (not their `use`s).
fn defined(items: &[syn::Item]) -> impl Iterator<Item = String> + '_ {
    items.iter().filter_map(|item| {
        let ident = match item {
            syn::Item::Const(i) => &i.ident,
            syn::Item::Enum(i) => &i.ident,
            syn::Item::ExternCrate(i) => i.rename.as_ref().map_or(&i.ident, |(_, r)| r),
            syn::Item::Fn(i) => &i.sig.ident,
            syn::Item::Macro(i) => i.ident.as_ref()?,
            syn::Item::Mod(i) => &i.ident,
            syn::Item::Static(i) => &i.ident,
            syn::Item::Struct(i) => &i.ident,
            syn::Item::Trait(i) => &i.ident,
            syn::Item::TraitAlias(i) => &i.ident,
            syn::Item::Type(i) => &i.ident,
            syn::Item::Union(i) => &i.ident,
            _ => return None,
        };
        Some(ident.to_string())
    })
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

/// Collects the module paths a file names, made absolute, and what each of
/// its modules re-exports.
struct Paths<'a> {
    /// The module being visited (the file's, plus inline `mod x { }`s).
    module: Vec<String>,
    modules: &'a HashMap<Vec<String>, usize>,
    /// Absolute path, the path as written.
    found: Vec<(Vec<String>, String)>,
    /// Every module's re-exports, this file's being filled in.
    exports: &'a mut HashMap<Vec<String>, Exports>,
}

impl Paths<'_> {
    /// Records `segments` if they start at the crate, this module or a child.
    fn add(&mut self, segments: &[String], text: String) {
        if let Some(absolute) = self.absolute(segments) {
            self.found.push((absolute, text));
        }
    }

    /// The re-exports of the module being visited.
    fn exports_mut(&mut self) -> &mut Exports {
        self.exports.entry(self.module.clone()).or_default()
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

    /// `segments` of a `use` as a path from the crate root: as `absolute`,
    /// but a child module's name alone counts too.
    fn use_absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        match segments {
            [only] if !matches!(only.as_str(), "crate" | "self" | "super") => {
                let child = [self.module.as_slice(), segments].concat();
                self.modules.contains_key(&child).then_some(child)
            }
            _ => self.absolute(segments),
        }
    }

    /// Every path a `use` tree imports, with the prefix above it; with
    /// `export` (a `pub use`), each is a re-export of the module too.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, export: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, export);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident, None, export),
            syn::UseTree::Rename(r) => self.use_leaf(prefix, &r.ident, Some(&r.rename), export),
            syn::UseTree::Glob(_) => {
                let text = format!("{}::*", prefix.join("::"));
                let absolute = self.use_absolute(prefix);
                if let Some(absolute) = absolute {
                    if export && self.modules.contains_key(&absolute) {
                        self.exports_mut().globs.push(absolute.clone());
                    }
                    self.found.push((absolute, text));
                }
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item, export);
                }
            }
        }
    }

    fn use_leaf(
        &mut self,
        prefix: &[String],
        last: &syn::Ident,
        rename: Option<&syn::Ident>,
        export: bool,
    ) {
        let mut segments = prefix.to_vec();
        // `use a::{self}` imports `a` itself.
        if last != "self" || prefix.is_empty() {
            segments.push(last.to_string());
        }
        let suffix = rename.map_or(String::new(), |r| format!(" as {r}"));
        let text = format!("{}{suffix}", segments.join("::"));
        let absolute = self.use_absolute(&segments);
        if export && let Some(first) = segments.first() {
            let name =
                rename.map_or_else(|| segments[segments.len() - 1].clone(), ToString::to_string);
            let exports = self.exports_mut();
            if absolute.is_none() && (segments.len() == 1 || exports.defined.contains(first)) {
                // `pub use local_macro;`, `pub use Enum::Variant`: defined here.
                exports.defined.insert(name);
            } else {
                // `None`: another crate's item, e.g. `pub use half::f16`.
                exports.named.insert(name, absolute.clone());
            }
        }
        if let Some(absolute) = absolute {
            self.found.push((absolute, text));
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
            let export = !matches!(item.vis, syn::Visibility::Inherited);
            self.use_tree(&mut Vec::new(), &item.tree, export);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.add(&segments, segments.join("::"));
        }
        visit::visit_path(self, path);
    }

    // `pub(crate)`, `pub(super)`, `pub(in path)` name no item.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if let Some((_, items)) = &item.content {
            self.module.push(item.ident.to_string());
            self.exports_mut().defined.extend(defined(items));
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
