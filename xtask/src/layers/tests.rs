//! Tests of `cargo xtask layers` on small source trees written to a
//! temporary directory.

use std::path::{Path, PathBuf};

use super::{Report, check};

/// A source tree in a fresh temporary directory, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(files: &[(&str, &str)]) -> Tree {
        let root = std::env::temp_dir().join(format!(
            "unigpu-layers-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
            std::fs::write(path, text).expect("write file");
        }
        Tree(root)
    }

    fn check(&self) -> Report {
        check(&self.0).expect("check runs")
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every edge as `from -> to (path)`, sorted.
fn edges(report: &Report) -> Vec<String> {
    let files = &report.graph.files;
    let mut out: Vec<String> = report
        .graph
        .edges
        .iter()
        .enumerate()
        .flat_map(|(from, edges)| {
            edges
                .iter()
                .map(move |(&to, path)| format!("{} -> {} ({path})", files[from], files[to]))
        })
        .collect();
    out.sort();
    out
}

/// A layered tree: public types over the backend contract, two backends.
const CLEAN: &[(&str, &str)] = &[
    (
        "lib.rs",
        "#![cfg_attr(feature = \"torch\", allow(unused))]\n\
         mod backend; mod context; mod error; pub mod kernel;\n\
         pub use context::Context;\npub use error::Error;",
    ),
    ("error.rs", "pub struct Error;"),
    (
        "context.rs",
        "use crate::backend::{Api, cpu::Cpu};\n\
         pub struct Context(Box<dyn Api>);\n\
         impl Context { pub fn new() -> Self { Context(Box::new(Cpu)) } }\n\
         #[cfg(test)]\nmod tests { use super::*; fn t() { let _ = Context::new(); } }",
    ),
    (
        "kernel/mod.rs",
        "pub mod signature;\npub use signature::KernelDecl;\npub fn f() -> crate::error::Error { crate::error::Error }",
    ),
    ("kernel/signature.rs", "pub struct KernelDecl;"),
    (
        "backend/mod.rs",
        "mod contract; pub mod cpu; pub mod cuda;\npub use self::contract::Api;",
    ),
    (
        "backend/contract.rs",
        "pub trait Api { fn grid(&self) -> crate::kernel::signature::KernelDecl; }",
    ),
    ("backend/cpu/mod.rs", "mod api;\npub use api::Cpu;"),
    (
        "backend/cpu/api.rs",
        "use super::super::contract::Api;\n\
         pub struct Cpu;\n\
         impl Api for Cpu { fn grid(&self) -> crate::kernel::signature::KernelDecl { KernelDecl::ONE } }",
    ),
    (
        "backend/cuda/mod.rs",
        "pub fn g() { let _ = crate::error::Error; }",
    ),
];

fn with(base: &[(&'static str, &'static str)], changes: &[(&'static str, &'static str)]) -> Tree {
    let mut files = base.to_vec();
    for change in changes {
        files.retain(|(path, _)| *path != change.0);
        files.push(*change);
    }
    Tree::new(&files)
}

#[test]
fn layered_tree_passes_with_every_edge_found() {
    let report = with(CLEAN, &[]).check();
    assert_eq!(report.problems(), "");
    assert!(report.passed());
    assert_eq!(
        edges(&report),
        [
            "backend/contract.rs -> kernel/signature.rs (crate::kernel::signature::KernelDecl)",
            "backend/cpu/api.rs -> backend/contract.rs (super::super::contract::Api)",
            "backend/cpu/api.rs -> kernel/signature.rs (crate::kernel::signature::KernelDecl)",
            "backend/cpu/mod.rs -> backend/cpu/api.rs (api::Cpu)",
            "backend/cuda/mod.rs -> error.rs (crate::error::Error)",
            "backend/mod.rs -> backend/contract.rs (self::contract::Api)",
            "context.rs -> backend/contract.rs (crate::backend::Api)",
            "context.rs -> backend/cpu/api.rs (crate::backend::cpu::Cpu)",
            "kernel/mod.rs -> error.rs (crate::error::Error)",
            "kernel/mod.rs -> kernel/signature.rs (signature::KernelDecl)",
            "lib.rs -> context.rs (context::Context)",
            "lib.rs -> error.rs (error::Error)",
        ]
    );
    assert_eq!(
        report.summary(),
        "layers: 10 files, 12 edges, no cycles, rules hold"
    );
}

#[test]
fn nested_use_groups_and_macros_are_edges() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a; mod c; mod m;"),
        ("a.rs", "pub struct B;"),
        ("c/mod.rs", "pub mod d; pub mod e;"),
        ("c/d.rs", ""),
        ("c/e.rs", ""),
        (
            "m.rs",
            "use crate::{a::B, c::{d, e::{self}}};\n\
             fn f() { println!(\"{}\", crate::c::mod_fn()); }\n\
             macro_rules! m { () => { $crate::a::B } }",
        ),
    ]);
    let report = tree.check();
    assert_eq!(
        edges(&report),
        [
            "m.rs -> a.rs (crate::a::B)",
            "m.rs -> c/d.rs (crate::c::d)",
            "m.rs -> c/e.rs (crate::c::e)",
            "m.rs -> c/mod.rs (crate::c::mod_fn)",
        ]
    );
}

#[test]
fn cycle_is_reported_with_an_example_path() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a.rs", "use crate::b::B;\npub(crate) fn g() {}"),
        ("b.rs", "pub struct B;\nfn f() { super::c::h(); }"),
        ("c.rs", "pub fn h() { crate::a::g() }"),
    ]);
    let report = tree.check();
    assert!(!report.passed());
    assert_eq!(report.cycles.len(), 1);
    assert_eq!(
        report.problems(),
        "import cycle among 3 files:\n    a.rs, b.rs, c.rs\n  for example:\n    \
         a.rs → b.rs (crate::b::B)\n    \
         b.rs → c.rs (super::c::h)\n    \
         c.rs → a.rs (crate::a::g)\n"
    );
}

#[test]
fn mod_declarations_and_own_module_are_not_edges() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a;"),
        (
            "a.rs",
            "mod inner { use super::*; fn f() { self::g(); crate::a::h(); } }\nfn h() {}",
        ),
    ]);
    assert_eq!(edges(&tree.check()), Vec::<String>::new());
}

#[test]
fn backend_using_a_sibling_or_a_public_type_is_reported() {
    let tree = with(
        CLEAN,
        &[
            (
                "backend/cuda/mod.rs",
                "use crate::backend::cpu::Cpu;\nuse crate::kernel::signature::KernelDecl;",
            ),
            (
                "backend/cpu/mod.rs",
                "pub struct Cpu(crate::context::Context);",
            ),
            ("context.rs", "pub struct Context;"),
        ],
    );
    let report = tree.check();
    assert!(report.cycles.is_empty());
    assert!(!report.passed());
    let lines: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "backend/cuda/mod.rs: backends do not use each other: \
             crate::backend::cpu::Cpu (→ backend/cpu/mod.rs)",
            "backend/cpu/mod.rs: backends do not use the public types: \
             crate::context::Context (→ context.rs)",
        ]
    );
}

#[test]
fn torch_feature_outside_its_files_is_reported() {
    let tree = with(
        CLEAN,
        &[(
            "context.rs",
            "pub struct Context;\n#[cfg(feature = \"torch\")]\nfn t() {}",
        )],
    );
    let lines: Vec<String> = tree
        .check()
        .violations
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        lines,
        [
            "context.rs: the torch feature is named only by the backend dispatch: \
             line 2: #[cfg(feature = \"torch\")]",
        ]
    );
}

#[test]
fn unparsable_file_is_an_error_naming_it() {
    let tree = Tree::new(&[("lib.rs", "fn ("), ("ok.rs", "")]);
    let err = check(Path::new(&tree.0)).expect_err("parse error");
    assert!(format!("{err:#}").contains("parsing lib.rs"), "{err:#}");
}

#[test]
fn cycle_through_a_reexport_is_found() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a; mod b;\npub use b::Thing;"),
        ("a.rs", "use crate::Thing;\npub struct X;"),
        ("b.rs", "pub struct Thing;\nfn f(_: crate::a::X) {}"),
    ]);
    let report = tree.check();
    assert_eq!(
        edges(&report),
        [
            "a.rs -> b.rs (crate::Thing)",
            "b.rs -> a.rs (crate::a::X)",
            "lib.rs -> b.rs (b::Thing)",
        ]
    );
    assert_eq!(
        report.problems(),
        "import cycle among 2 files:\n    a.rs, b.rs\n  for example:\n    \
         a.rs → b.rs (crate::Thing)\n    \
         b.rs → a.rs (crate::a::X)\n"
    );
}

#[test]
fn reexport_through_the_crate_root_is_no_cycle() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a; mod b;\npub use a::X;\npub use b::Thing;"),
        ("a.rs", "use crate::Thing;\npub struct X;"),
        ("b.rs", "pub struct Thing;"),
    ]);
    let report = tree.check();
    assert_eq!(
        edges(&report),
        [
            "a.rs -> b.rs (crate::Thing)",
            "lib.rs -> a.rs (a::X)",
            "lib.rs -> b.rs (b::Thing)",
        ]
    );
    assert_eq!(report.problems(), "");
    assert!(report.passed());
}

#[test]
fn reexports_are_followed_through_chains_renames_globs_and_inline_modules() {
    let tree = Tree::new(&[
        (
            "lib.rs",
            "mod backend; mod g; pub mod kernel; mod local; mod user;\n\
             pub use kernel::{Grid, Renamed as Alias, Cached};\n\
             pub use g::*;\n\
             pub use half::{bf16, f16};\n\
             pub(crate) use backend::CpuArgs;\n\
             use local::Private;\n\
             pub struct Own;\n\
             macro_rules! m { () => {} }\n\
             pub(crate) use m;",
        ),
        (
            "kernel/mod.rs",
            "pub mod grid; mod renamed;\n\
             pub use grid::Grid;\n\
             pub use renamed::Original as Renamed;\n\
             pub use crate::backend::CpuArgs;\n\
             mod cache { pub use crate::backend::Cached; }\n\
             pub use cache::Cached;",
        ),
        ("kernel/grid.rs", "pub struct Grid;"),
        ("kernel/renamed.rs", "pub struct Original;"),
        (
            "backend/mod.rs",
            "mod cpu;\npub use cpu::*;\npub use cpu::Kind::{self, A};",
        ),
        (
            "backend/cpu.rs",
            "pub struct CpuArgs; pub struct Cached; pub enum Kind { A }",
        ),
        ("g.rs", "pub struct FromGlob;"),
        ("local.rs", "pub struct Private;"),
        (
            "user.rs",
            "use crate::{Grid, Alias, Own, FromGlob, bf16};\n\
             fn f() {\n\
                 let _ = crate::kernel::CpuArgs;\n\
                 let _ = crate::Cached;\n\
                 let _ = crate::Private;\n\
                 crate::m!();\n\
                 let _ = crate::backend::A;\n\
             }",
        ),
    ]);
    let report = tree.check();
    let user: Vec<String> = edges(&report)
        .into_iter()
        .filter(|e| e.starts_with("user.rs"))
        .collect();
    assert_eq!(
        user,
        [
            // Also `crate::Cached` (through an inline module) and
            // `crate::backend::A` (an enum variant re-exported).
            "user.rs -> backend/cpu.rs (crate::kernel::CpuArgs)",
            "user.rs -> g.rs (crate::FromGlob)",
            "user.rs -> kernel/grid.rs (crate::Grid)",
            "user.rs -> kernel/renamed.rs (crate::Alias)",
            // `Own`, the macro, and the private `use` (not a re-export).
            "user.rs -> lib.rs (crate::Own)",
        ]
    );
    // The re-exports are the re-exporting file's own edges; `half` is
    // another crate: no edge.
    let lib: Vec<String> = edges(&report)
        .into_iter()
        .filter(|e| e.starts_with("lib.rs"))
        .collect();
    assert_eq!(
        lib,
        [
            "lib.rs -> backend/cpu.rs (kernel::Cached)",
            "lib.rs -> g.rs (g::*)",
            "lib.rs -> kernel/grid.rs (kernel::Grid)",
            "lib.rs -> kernel/renamed.rs (kernel::Renamed as Alias)",
            "lib.rs -> local.rs (local::Private)",
        ]
    );
}

#[test]
fn reexport_loops_end() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a; mod b;\npub use a::X;"),
        ("a.rs", "pub use crate::X;"),
        ("b.rs", "fn f() { let _ = crate::X; }"),
    ]);
    // The check ends; `X` is defined nowhere, so any file of the loop will do.
    let b: Vec<String> = edges(&tree.check())
        .into_iter()
        .filter(|e| e.starts_with("b.rs"))
        .collect();
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(b[0].ends_with("(crate::X)"), "{b:?}");
}

#[test]
fn backends_may_use_nvrtc_and_the_allowed_files_only() {
    let tree = Tree::new(&[
        (
            "lib.rs",
            "mod backend; mod config; mod device; mod dlpack; mod element; mod error; \
             mod kernel; mod lock;",
        ),
        ("config.rs", "pub struct Config;"),
        ("device.rs", "pub struct DeviceInfo;"),
        ("dlpack/mod.rs", "pub mod sync;\npub struct Tensor;"),
        ("dlpack/sync.rs", "pub struct DlpackSync;"),
        ("element.rs", "pub struct DType;"),
        ("error.rs", "pub struct Error;"),
        ("kernel/mod.rs", "pub mod options;"),
        ("kernel/options.rs", "pub struct CompileOptions;"),
        ("lock.rs", "pub fn lock() {}"),
        (
            "backend/mod.rs",
            "mod cpu; mod cuda; mod dispatch; mod nvrtc; mod torch;",
        ),
        ("backend/nvrtc/mod.rs", "pub fn compile() {}"),
        ("backend/cpu/mod.rs", "pub struct Cpu;"),
        (
            "backend/cuda/mod.rs",
            "use crate::backend::nvrtc::compile;\n\
             use crate::{device::DeviceInfo, dlpack::sync::DlpackSync, element::DType};\n\
             use crate::{error::Error, kernel::options::CompileOptions, lock::lock};\n\
             use crate::config::Config;\n\
             use crate::dlpack::Tensor;",
        ),
        ("backend/torch/mod.rs", "use super::nvrtc::compile;"),
        (
            "backend/dispatch.rs",
            "use super::{cpu::Cpu, cuda::g, torch::t};",
        ),
    ]);
    let report = tree.check();
    let lines: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "backend/cuda/mod.rs: backends do not use the public types: \
             crate::config::Config (→ config.rs)",
            "backend/cuda/mod.rs: backends do not use the public types: \
             crate::dlpack::Tensor (→ dlpack/mod.rs)",
        ]
    );
    // backend/dispatch.rs, directly in backend/, names every backend.
    assert!(
        edges(&report)
            .contains(&"backend/dispatch.rs -> backend/cpu/mod.rs (super::cpu::Cpu)".to_owned())
    );
}

#[test]
fn a_forbidden_file_reached_through_an_allowed_one_is_reported() {
    let tree = Tree::new(&[
        ("lib.rs", "mod backend; mod config; mod error;"),
        ("config.rs", "pub struct ConfigError;"),
        ("error.rs", "pub struct Error(crate::config::ConfigError);"),
        ("backend/mod.rs", "mod cpu;"),
        ("backend/cpu/mod.rs", "pub struct Cpu(crate::error::Error);"),
    ]);
    let lines: Vec<String> = tree
        .check()
        .violations
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        lines,
        ["backend/cpu/mod.rs: backends do not use the public types: \
             crate::error::Error (→ error.rs → config.rs)",]
    );
}

/// A dependency graph from `(package, [deps])` pairs.
fn crate_graph(
    pairs: &[(&str, &[&str])],
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    pairs
        .iter()
        .map(|(p, deps)| (p.to_string(), deps.iter().map(|d| d.to_string()).collect()))
        .collect()
}

#[test]
fn the_core_crate_may_not_reach_a_backend_even_through_another_crate() {
    use super::crates::{CRATE_RULES, check};
    let clean = crate_graph(&[
        ("unigpu-core", &["half", "bytemuck"]),
        ("half", &["bytemuck"]),
        ("bytemuck", &[]),
        ("unigpu-cuda-safe", &["unigpu-core", "cudarc"]),
    ]);
    assert_eq!(check(&clean, CRATE_RULES), Vec::new());

    let direct = crate_graph(&[
        ("unigpu-core", &["unigpu-cuda-safe"]),
        ("unigpu-cuda-safe", &[]),
    ]);
    let v = check(&direct, CRATE_RULES);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].file, "unigpu-core");
    assert_eq!(
        v[0].what,
        "depends on unigpu-cuda-safe (unigpu-core → unigpu-cuda-safe)"
    );

    let indirect = crate_graph(&[
        ("unigpu-core", &["helper"]),
        ("helper", &["wgpu"]),
        ("wgpu", &[]),
    ]);
    let v = check(&indirect, CRATE_RULES);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].what, "depends on wgpu (unigpu-core → helper → wgpu)");

    let missing = crate_graph(&[("other", &[])]);
    assert_eq!(check(&missing, CRATE_RULES).len(), 1);
}

#[test]
fn a_cuda_crate_in_the_build_without_cuda_is_reported() {
    use super::crates::{FEATURE_RULES, check_built};
    let rule = &FEATURE_RULES[0];
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let clean = names(&["unigpu", "unigpu-core", "half", "wgpu"]);
    assert_eq!(check_built(&clean, rule), Vec::new());
    let v = check_built(&names(&["unigpu", "unigpu-cuda-safe", "cudarc"]), rule);
    let lines: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            format!(
                "unigpu --no-default-features: {}: compiles unigpu-cuda-safe",
                rule.name
            ),
            format!(
                "unigpu --no-default-features: {}: compiles cudarc",
                rule.name
            ),
        ]
    );
}
