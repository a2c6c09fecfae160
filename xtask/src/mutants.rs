//! `cargo xtask mutants`: proves the test suite can fail. Each mutation is
//! a deliberate bug written into the CPU backend's source (a reduction that
//! drops its last block, a `wait` that does nothing, ...); the facade's
//! tests run against it and must fail. The source is restored after each
//! mutation, also when the run is interrupted by an error. A mutation the
//! tests survive is a hole in the suite, and the command fails.
//!
//! The mutations patch text, so each names the exact lines it replaces; a
//! source change that moves them makes the command fail with "not found"
//! rather than test nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// One deliberate bug.
struct Mutation {
    name: &'static str,
    file: &'static str,
    /// Text that occurs exactly once in `file`.
    original: &'static str,
    mutated: &'static str,
}

const MUTATIONS: &[Mutation] = &[
    Mutation {
        name: "a reduction that drops its last block",
        file: "crates/unigpu/src/ops/cpu.rs",
        original: "        let xs = read(&dx);\n",
        mutated: "        let whole = read(&dx);\n        let xs = &whole[..whole.len().saturating_sub(1024).max(whole.len() / 2)];\n",
    },
    Mutation {
        name: "a wait that does nothing",
        file: "crates/unigpu/src/stream.rs",
        original: "                Some(fence) => s.enqueue(Box::new(move || {\n                    fence.wait();\n                    Ok(())\n                })),",
        mutated: "                Some(fence) => s.enqueue(Box::new(move || {\n                    drop(fence);\n                    Ok(())\n                })),",
    },
    Mutation {
        name: "a sum accumulated in the element type (bf16 in bf16)",
        file: "crates/unigpu/src/ops/cpu.rs",
        original: "            Reduce::Sum => T::from_acc(acc_from_f64::<T>(\n                xs.iter().map(|v| v.to_acc().into()).sum(),\n            )),",
        mutated: "            Reduce::Sum => xs\n                .iter()\n                .fold(T::from_acc(T::Acc::zero()), |s, v| T::from_acc(s.to_acc() + v.to_acc())),",
    },
    Mutation {
        name: "a matmul with one wrong tile",
        file: "crates/unigpu/src/ops/cpu.rs",
        original: "        T::Acc::gemm(&av, &bv, cv);\n",
        mutated: "        T::Acc::gemm(&av, &bv, cv);\n        for i in (m.saturating_sub(8))..m {\n            for j in (n.saturating_sub(8))..n {\n                vc[i * n + j] = vc[i * n + j] * (T::Acc::one() + T::Acc::one());\n            }\n        }\n",
    },
    Mutation {
        name: "a copy that skips its last element",
        file: "crates/unigpu/src/stream.rs",
        original: "                    write(&to).copy_from_slice(&read(&from));\n",
        mutated: "                    let (mut to, from) = (write(&to), read(&from));\n                    let n = from.len().saturating_sub(1);\n                    to[..n].copy_from_slice(&from[..n]);\n",
    },
];

/// The facade's test binaries the mutations are checked against.
const TESTS: &[&str] = &["ops", "streams", "arrays", "kernels", "dlpack"];

pub fn run(args: &[String]) -> anyhow::Result<()> {
    if let Some(a) = args.first() {
        bail!("`cargo xtask mutants` takes no arguments (got `{a}`)");
    }
    let root = crate::generator::repo_root();
    let mut survivors = Vec::new();
    for m in MUTATIONS {
        println!("mutation: {}", m.name);
        let failed = with_mutation(&root, m, || failing_tests(&root))?;
        if failed.is_empty() {
            println!("  SURVIVED: no test failed");
            survivors.push(m.name);
        } else {
            println!(
                "  caught by {} test(s): {}",
                failed.len(),
                failed.join(", ")
            );
        }
    }
    if !survivors.is_empty() {
        bail!("the tests did not catch: {}", survivors.join("; "));
    }
    println!("mutants: {} caught, 0 survived", MUTATIONS.len());
    Ok(())
}

/// Runs `f` with `m` written into its file, restoring the file afterwards.
fn with_mutation<R>(
    root: &Path,
    m: &Mutation,
    f: impl FnOnce() -> anyhow::Result<R>,
) -> anyhow::Result<R> {
    let path: PathBuf = root.join(m.file);
    let source = fs::read_to_string(&path).with_context(|| format!("reading {}", m.file))?;
    if source.matches(m.original).count() != 1 {
        bail!(
            "mutation `{}`: its text is not found exactly once in {}; update xtask/src/mutants.rs",
            m.name,
            m.file
        );
    }
    fs::write(&path, source.replacen(m.original, m.mutated, 1))?;
    let result = f();
    fs::write(&path, &source).with_context(|| format!("restoring {}", m.file))?;
    result
}

/// The names of the tests that fail. A mutation that does not compile is
/// an error, not a catch: it must build to count.
fn failing_tests(root: &Path) -> anyhow::Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["test", "-q", "-p", "unigpu", "--no-fail-fast"]);
    for t in TESTS {
        cmd.args(["--test", t]);
    }
    let out = cmd.output().context("running cargo test")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("error[E") || stderr.contains("could not compile") {
        bail!("the mutated source does not compile:\n{stderr}");
    }
    let failed: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("---- "))
        .filter_map(|l| l.strip_suffix(" stdout ----"))
        .map(str::to_string)
        .collect();
    if out.status.success() && !failed.is_empty() {
        bail!("cargo test succeeded yet listed failures; cannot tell what happened");
    }
    Ok(failed)
}
