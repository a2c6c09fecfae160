//! `cargo xtask mutants --gpu-pack`: the CUDA and torch mutations, built
//! here (the GPU machine has no Rust) and run there.
//!
//! For each mutation the test binaries it names are built with the torch
//! feature (so they hold cpu, cuda and torch variants), stripped and packed
//! as `bin/m<N>-<test>`; `bin/m0-*` is the unmutated baseline. The script
//! runs each mutant's GPU tests of its backend only (`::cuda` or `::torch`
//! variants; all of the CUDA RAII crate's), one at a time, and reports the
//! tests that failed. It fails when the baseline fails, or when a mutant
//! passes: that bug would have gone unnoticed on the GPU.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{MUTATIONS, Mutation, Target, with_mutation};
use crate::gpu_pack::{DEVICE_LD_LIBRARY_PATH, UNPACK, build_with_env, copy_into_as, shrink};

const PACK_DIR: &str = ".gpu-mutants";

/// `only`: `--only`'s text (the mutations whose names hold it, or one of
/// its `|`-separated parts), or every GPU mutation.
pub(super) fn pack(only: Option<&str>) -> anyhow::Result<()> {
    let root = crate::gpu_pack::workspace_root()?;
    if !root.join(".venv-torch/bin/python").is_file() {
        bail!(
            "the GPU mutants are built with the torch feature: run .ci/torch-tests.sh once to make .venv-torch"
        );
    }
    let pack = root.join(PACK_DIR);
    if pack.exists() {
        fs::remove_dir_all(&pack).with_context(|| format!("clearing {}", pack.display()))?;
    }
    fs::create_dir_all(pack.join("bin"))?;

    let gpu: Vec<&Mutation> = MUTATIONS
        .iter()
        .filter(|m| m.target != Target::Cpu && super::chosen(m, only))
        .collect();
    if gpu.is_empty() {
        bail!("no GPU mutation's name holds {only:?}");
    }
    // The baseline holds every binary any mutant runs.
    let all: BTreeSet<&str> = gpu.iter().flat_map(|m| m.tests.iter().copied()).collect();
    let all: Vec<&str> = all.into_iter().collect();
    println!("baseline (no mutation): building {}", all.join(", "));
    build_into(&root, &pack, 0, &all)?;
    let mut lines = Vec::new();
    for (i, m) in gpu.iter().enumerate() {
        let idx = i + 1;
        println!(
            "mutant m{idx} ({}): {}: building {}",
            m.target.name(),
            m.name,
            m.tests.join(", ")
        );
        with_mutation(&root, m, || build_into(&root, &pack, idx, m.tests))?;
        lines.push(format!(
            "m{idx}|{}|{}|{}",
            m.target.name(),
            m.tests.join(" "),
            m.name
        ));
    }
    fs::write(pack.join("mutants.txt"), lines.join("\n") + "\n")?;
    fs::write(pack.join("run.sh"), runner_script(&all))?;
    let size = shrink(&pack)?;
    println!(
        "packed {} mutants and the baseline into {PACK_DIR}/ ({:.1} MiB; the device tool carries 64 MiB at most)",
        gpu.len(),
        size as f64 / (1 << 20) as f64
    );
    println!("run them on the GPU machine with the device tool:");
    println!("  run(command=\"bash {PACK_DIR}/run.sh\", carry=[\"{PACK_DIR}\"])");
    Ok(())
}

/// Builds `tests` (facade test names, or `safe:gpu`) as they stand now and
/// copies them into the pack as `m<idx>-<test>`.
fn build_into(root: &Path, pack: &Path, idx: usize, tests: &[&str]) -> anyhow::Result<()> {
    let venv_bin = root.join(".venv-torch/bin");
    let path = format!(
        "{}:{}",
        venv_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [("PATH", path.as_str()), ("LIBTORCH_USE_PYTORCH", "1")];
    let mut facade: Vec<&str> = vec![
        "test",
        "-p",
        "unigpu",
        "--features",
        "unigpu/torch",
        "--release",
        "--no-run",
    ];
    let mut safe: Vec<&str> = vec!["test", "-p", "unigpu-cuda-safe", "--release", "--no-run"];
    let (mut want_facade, mut want_safe) = (false, false);
    for t in tests {
        match t.strip_prefix("safe:") {
            Some(name) => {
                safe.extend(["--test", name]);
                want_safe = true;
            }
            None => {
                facade.extend(["--test", t]);
                want_facade = true;
            }
        }
    }
    let mut exes: Vec<(PathBuf, &str)> = Vec::new();
    if want_facade {
        exes.extend(
            build_with_env(root, &facade, &[], &env)?
                .into_iter()
                .map(|e| (e, "")),
        );
    }
    if want_safe {
        exes.extend(
            build_with_env(root, &safe, &[], &env)?
                .into_iter()
                .map(|e| (e, "safe:")),
        );
    }
    for (exe, prefix) in exes {
        let file = exe
            .file_name()
            .and_then(|n| n.to_str())
            .context("executable without a name")?;
        // `ops-<hash>` → `ops`
        let test = file.rsplit_once('-').map_or(file, |(name, _)| name);
        let label = format!("{prefix}{test}");
        if !tests.contains(&label.as_str()) {
            continue;
        }
        let tmp = copy_into_as(pack, &exe, &format!("m{idx}-"))?;
        let name = format!("m{idx}-{}", label.replace(':', "_"));
        fs::rename(pack.join("bin").join(&tmp), pack.join("bin").join(&name))?;
    }
    for t in tests {
        let name = format!("m{idx}-{}", t.replace(':', "_"));
        if !pack.join("bin").join(&name).is_file() {
            bail!("cargo built no test binary `{t}` for m{idx}");
        }
    }
    Ok(())
}

fn runner_script(baseline: &[&str]) -> String {
    let baseline = baseline.join(" ");
    format!(
        r#"#!/usr/bin/env bash
# Generated by `cargo xtask mutants --gpu-pack`. Runs the unmutated
# baseline, then each mutant's GPU tests of its backend, and says which
# tests caught each mutant. Exits non-zero when the baseline fails or a
# mutant survives.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
{UNPACK}
export LD_LIBRARY_PATH="{DEVICE_LD_LIBRARY_PATH}:${{LD_LIBRARY_PATH:-}}"
out="${{OUT:-/tmp/unigpu-gpu-mutants}}"; mkdir -p "$out"; log="$out/mutants.log"; : >"$log"
nvidia-smi -L || true

# run_tests IDX BACKEND TESTS...: prints the failing tests, one per line;
# a binary that does not finish in time counts as failing as a whole.
run_tests() {{
  local idx=$1 backend=$2; shift 2
  for t in "$@"; do
    local bin="$here/bin/m$idx-${{t/:/_}}" filter=()
    case "$t" in safe:*) ;; *) filter=("::$backend");; esac
    local one; one=$(mktemp)
    timeout 300 "$bin" --ignored --test-threads=1 "${{filter[@]}}" >"$one" 2>&1; local rc=$?
    {{ echo "=== m$idx $backend $t (exit $rc)"; cat "$one"; }} >>"$log"
    sed -nE 's/^test (.*) \.\.\. FAILED$/\1/p' "$one" | sed "s|^|$t: |"
    if [ $rc -eq 124 ]; then echo "$t: (timed out after 300 s)"; fi
    if [ $rc -ne 0 ] && ! grep -qE '^test .* FAILED$' "$one" && [ $rc -ne 124 ]; then echo "$t: (exit $rc without a failing test)"; fi
    if ! grep -qE '^test result:' "$one" && [ $rc -eq 0 ]; then echo "$t: (no test result line)"; fi
    rm -f "$one"
  done
}}

failed=0
for backend in cuda torch; do
  base=$(run_tests 0 "$backend" {baseline})
  if [ -n "$base" ]; then
    echo "baseline ($backend): FAILED, so the mutants below prove nothing:"; echo "$base" | sed 's/^/  /'; failed=1
  else
    echo "baseline ($backend): every GPU test passed"
  fi
done
caught=0; survived=0
while IFS='|' read -r idx backend tests name; do
  [ -n "$idx" ] || continue
  failing=$(run_tests "${{idx#m}}" "$backend" $tests)
  if [ -n "$failing" ]; then
    caught=$((caught + 1)); n=$(echo "$failing" | wc -l)
    echo "mutation $idx ($backend): $name"; echo "  caught by $n test(s):"; echo "$failing" | sed 's/^/    /'
  else
    survived=$((survived + 1)); failed=1
    echo "mutation $idx ($backend): $name"; echo "  SURVIVED: every test in $tests passed"
  fi
done <"$here/mutants.txt"
echo "GPU mutants: $caught caught, $survived survived"
exit $failed
"#
    )
}
