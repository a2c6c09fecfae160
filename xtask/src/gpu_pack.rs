//! `cargo xtask gpu-pack`: the GPU machine has no Rust toolchain, so the
//! test binaries are built here, copied into `.gpu-pack/` (git-ignored) and
//! carried there with a script that runs them all, ignored tests included.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

const PACK_DIR: &str = ".gpu-pack";
/// Where the GPU machine keeps libcuda's companions and torch's libraries
/// (../shared/DESIGN.md, "GPU machine").
pub(crate) const DEVICE_LD_LIBRARY_PATH: &str =
    "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64";
/// Where the GPU machine keeps libnccl (torch's pip dependencies).
pub(crate) const NCCL_SEARCH: &str = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia";

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let root = workspace_root()?;
    let pack = root.join(PACK_DIR);
    if pack.exists() {
        fs::remove_dir_all(&pack).with_context(|| format!("clearing {}", pack.display()))?;
    }
    fs::create_dir_all(pack.join("bin"))?;

    let mut tests = Vec::new();
    for exe in build(
        &root,
        // The generator's own tests and the C API's need rustfmt, cargo and
        // gcc, which the GPU machine lacks; they run in CI instead, and the
        // C API's GPU run is bench/ffi_gpu_run.sh (C program built here).
        &[
            "test",
            "--workspace",
            "--exclude",
            "xtask",
            "--exclude",
            "unigpu-fixture",
            "--exclude",
            "unigpu-capi",
            "--release",
            "--no-run",
        ],
        args,
    )? {
        tests.push(copy_into(&pack, &exe)?);
    }
    // The direct-CUDA tier (specs/cuda_rt.yaml) builds against the CUDA headers
    // from pip; `.ci/gen-tests.sh` installs them into .venv-cuda.
    match cuda_wheel_home(&root) {
        Some(home) => {
            let features = [
                "test",
                "-p",
                "unigpu-cuda-rt",
                "--features",
                "cuda",
                "--release",
                "--no-run",
            ];
            for exe in build_with_env(&root, &features, args, &[("UNIGPU_CUDA_HOME", &home)])? {
                tests.push(copy_into(&pack, &exe)?);
            }
        }
        None => println!(
            "note: no .venv-cuda (run .ci/gen-tests.sh once): the cuda-rt GPU tests are not packed"
        ),
    }
    // The torch tier builds against the libtorch in .venv-torch
    // (`.ci/torch-tests.sh` installs it); the GPU machine has the same torch.
    let mut torch_tools = Vec::new();
    if root.join(".venv-torch/bin/python").is_file() {
        let venv_bin = root.join(".venv-torch/bin");
        let path = format!(
            "{}:{}",
            venv_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let torch = [
            "test",
            "-p",
            "unigpu-torch-bridge",
            "--features",
            "unigpu-torch-bridge/torch",
            "--release",
            "--no-run",
        ];
        let env = [("PATH", path.as_str()), ("LIBTORCH_USE_PYTORCH", "1")];
        for exe in build_with_env(&root, &torch, args, &env)? {
            tests.push(copy_into(&pack, &exe)?);
        }
        let torch_examples = [
            "build",
            "-p",
            "unigpu-torch-bridge",
            "--features",
            "unigpu-torch-bridge/torch",
            "--release",
            "--examples",
        ];
        for exe in build_with_env(&root, &torch_examples, args, &env)? {
            torch_tools.push(copy_into(&pack, &exe)?);
        }
        // The facade again with its torch backend: every `on_every_backend!`
        // test gains a torch variant, and the examples run on torch (the
        // default backend there). Prefixed, so they sit beside the plain ones.
        let facade = [
            "test",
            "-p",
            "unigpu",
            "--features",
            "unigpu/torch",
            "--release",
            "--no-run",
        ];
        for exe in build_with_env(&root, &facade, args, &env)? {
            tests.push(copy_into_as(&pack, &exe, "torch-")?);
        }
        let facade_examples = [
            "build",
            "-p",
            "unigpu",
            "--features",
            "unigpu/torch",
            "--release",
            "--examples",
        ];
        for exe in build_with_env(&root, &facade_examples, args, &env)? {
            torch_tools.push(copy_into_as(&pack, &exe, "torch-")?);
        }
    } else {
        println!(
            "note: no .venv-torch (run .ci/torch-tests.sh once): the torch tier's GPU tests are not packed"
        );
    }
    let mut tools = Vec::new();
    for exe in build(
        &root,
        &[
            "build",
            "--release",
            "-p",
            "unigpu-cli",
            "-p",
            "unigpu",
            "--bins",
            "--examples",
        ],
        args,
    )? {
        tools.push(copy_into(&pack, &exe)?);
    }
    if tests.is_empty() {
        bail!("cargo built no test binaries");
    }
    // Examples run as part of the GPU run; benchmarks run from bench/run_gpu.sh.
    let mut examples: Vec<String> = tools
        .iter()
        .filter(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        .cloned()
        .collect();
    examples.extend(torch_tools.into_iter().filter(|n| !n.contains("bench")));
    fs::write(pack.join("run.sh"), runner_script(&tests, &examples))?;

    let size = shrink(&pack)?;
    println!(
        "packed {} test binaries and {} tools into {PACK_DIR}/ ({:.1} MiB; the device tool carries 64 MiB at most)",
        tests.len(),
        tools.len(),
        size as f64 / (1 << 20) as f64
    );
    println!("run them on the GPU machine with the device tool:");
    println!("  run(command=\"bash {PACK_DIR}/run.sh\", carry=[\"{PACK_DIR}\", \".gl\"])");
    println!(
        "  (.gl: the Vulkan loader's .debs for the vulkan tests; docs/vulkan.md says how to make it)"
    );
    println!("extra arguments to run.sh go to every test binary (e.g. --skip NAME).");
    Ok(())
}

/// Strips the binaries and packs them into bin.tar.gz, which run.sh
/// unpacks: the plain binaries no longer fit the device tool's carry limit.
/// Returns the pack's size in bytes.
pub(crate) fn shrink(pack: &Path) -> anyhow::Result<u64> {
    let bin = pack.join("bin");
    let files: Vec<PathBuf> = fs::read_dir(&bin)?
        .map(|e| Ok(e?.path()))
        .collect::<std::io::Result<_>>()?;
    let stripped = std::process::Command::new("strip")
        .args(&files)
        .status()
        .context("running strip")?;
    if !stripped.success() {
        bail!("strip failed on the packed binaries");
    }
    let tarred = std::process::Command::new("tar")
        .arg("czf")
        .arg(pack.join("bin.tar.gz"))
        .arg("-C")
        .arg(pack)
        .arg("bin")
        .status()
        .context("running tar")?;
    if !tarred.success() {
        bail!("tar failed while packing the binaries");
    }
    fs::remove_dir_all(&bin)?;
    Ok(fs::metadata(pack.join("bin.tar.gz"))?.len())
}

pub(crate) fn workspace_root() -> anyhow::Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Ok(manifest
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf())
}

/// `.venv-cuda/lib/python*/site-packages/nvidia/cu13`, if installed.
fn cuda_wheel_home(root: &Path) -> Option<String> {
    let lib = root.join(".venv-cuda").join("lib");
    fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok())
        .find_map(|e| {
            let home = e.path().join("site-packages/nvidia/cu13");
            home.join("include")
                .is_dir()
                .then(|| home.display().to_string())
        })
}

/// Runs cargo with JSON messages and returns the executables it produced.
fn build(root: &Path, cargo_args: &[&str], extra: &[String]) -> anyhow::Result<Vec<PathBuf>> {
    build_with_env(root, cargo_args, extra, &[])
}

pub(crate) fn build_with_env(
    root: &Path,
    cargo_args: &[&str],
    extra: &[String],
    env: &[(&str, &str)],
) -> anyhow::Result<Vec<PathBuf>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root)
        .envs(env.iter().copied())
        .args(cargo_args)
        .args(extra)
        .arg("--message-format=json-render-diagnostics")
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo")?;
    if !out.status.success() {
        bail!("cargo {} failed", cargo_args.join(" "));
    }
    let mut exes = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        // `cargo test --no-run` also builds the bin targets that
        // integration tests call; only test harnesses go in the test list.
        let wants_tests = cargo_args[0] == "test";
        if msg["reason"] != "compiler-artifact" || (wants_tests && msg["profile"]["test"] != true) {
            continue;
        }
        if let Some(exe) = msg["executable"].as_str() {
            exes.push(PathBuf::from(exe));
        }
    }
    Ok(exes)
}

fn copy_into(pack: &Path, exe: &Path) -> anyhow::Result<String> {
    copy_into_as(pack, exe, "")
}

/// Copies `exe` into the pack as `<prefix><its name>`.
pub(crate) fn copy_into_as(pack: &Path, exe: &Path, prefix: &str) -> anyhow::Result<String> {
    let name = format!(
        "{prefix}{}",
        exe.file_name()
            .and_then(|n| n.to_str())
            .context("executable without a name")?
    );
    fs::copy(exe, pack.join("bin").join(&name))
        .with_context(|| format!("copying {}", exe.display()))?;
    Ok(name)
}

fn runner_script(tests: &[String], examples: &[String]) -> String {
    let list = tests.join(" ");
    let example_list = examples.join(" ");
    format!(
        r#"#!/usr/bin/env bash
# Generated by `cargo xtask gpu-pack`; runs `unigpu info`, the demo, every
# test binary (ignored GPU tests included) and every example, and prints one
# summary line per step. Exits non-zero when any of them exits non-zero.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
[ -d "$here/bin" ] || tar xzf "$here/bin.tar.gz" -C "$here" || {{ echo "cannot unpack $here/bin.tar.gz"; exit 1; }}
export LD_LIBRARY_PATH="{DEVICE_LD_LIBRARY_PATH}:${{LD_LIBRARY_PATH:-}}"
# NCCL (the collectives' tests and examples): pip's libnccl.so.2, and
# NVLink multicast off in every process (it can take a shared host's
# GPUs out of service). Tests that need two GPUs are named two_gpus_*
# (add `--skip two_gpus` on a one-GPU machine).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nccl=$(find {NCCL_SEARCH} -name 'libnccl.so*' 2>/dev/null | head -n 1)
[ -n "$nccl" ] && export LD_LIBRARY_PATH="$(dirname "$nccl"):$LD_LIBRARY_PATH"
export UNIGPU_BIN="$here/bin/unigpu"
# The vulkan tests need a Vulkan loader, which the GPU machine lacks: carry
# `.gl` (its .debs; docs/vulkan.md) and it is unpacked here; without it they
# fail saying "needs a Vulkan adapter". NVIDIA's driver manifest, where the
# loader does not find it alone.
for f in "$here"/../.gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" / ; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && [ -z "${{VK_DRIVER_FILES:-}}" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1
out="${{OUT:-/tmp/unigpu-gpu-pack}}"; mkdir -p "$out"
failed=0; passed_total=0; failed_total=0
nvidia-smi -L || true
"$here/bin/unigpu" info >"$out/info.txt" 2>&1; rc=$?; cat "$out/info.txt"
if [ $rc -eq 0 ]; then echo "info: ok"; else echo "info: FAILED (exit $rc)"; failed=1; fi
if "$here/bin/unigpu" demo >"$out/demo.txt" 2>&1; then echo "demo: ok"; tail -n 2 "$out/demo.txt"; else echo "demo: FAILED (exit $?)"; cat "$out/demo.txt"; failed=1; fi
log="$out/tests.log"
for t in {list}; do
  echo "=== $t" >>"$log"
  # torch's tests one at a time: c10 hands the same pool streams to every
  # test and its caching allocator takes one lock for all of them, so a
  # test that holds a stream behind a gate can stall another test's calls.
  threads=(); case "$t" in torch-*|gpu-*|cpu-*) threads=(--test-threads=1);; esac
  one=$(mktemp); "$here/bin/$t" --include-ignored "${{threads[@]}}" "$@" >"$one" 2>&1; rc=$?; cat "$one" >>"$log"
  line=$(grep -E '^test result:' "$one" | tail -n 1)
  echo "$t: ${{line:-no result line}} (exit $rc)"
  p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line"); f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
  passed_total=$((passed_total + ${{p:-0}})); failed_total=$((failed_total + ${{f:-0}}))
  if [ $rc -ne 0 ]; then failed=1; grep -E -A15 '^---- |panicked' "$one" | head -n 60; fi
  rm -f "$one"
done
for e in {example_list}; do
  echo "=== example $e" >>"$log"
  "$here/bin/$e" >>"$log" 2>&1; rc=$?
  if [ $rc -eq 0 ]; then echo "example $e: ok"; else echo "example $e: FAILED (exit $rc)"; failed=1; fi
done
echo "GPU run: $passed_total passed, $failed_total failed"
[ $failed -eq 0 ] && echo "GPU run: every step exited 0" || echo "GPU run: FAILED (a step above exited non-zero)"
exit $failed
"#
    )
}

#[cfg(test)]
mod tests {
    use super::runner_script;

    /// Runs the generated script with fake binaries: each step's exit
    /// status must reach the script's own.
    fn run_with(fail: Option<&str>) -> std::process::Output {
        let dir = std::env::temp_dir().join(format!(
            "unigpu-runner-test-{}-{}",
            std::process::id(),
            fail.unwrap_or("none")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let names = ["unigpu", "t1", "t2", "ex1"];
        for name in names {
            let body = if Some(name) == fail {
                "#!/bin/sh\necho 'test result: FAILED. 0 passed; 1 failed'\nexit 3\n"
            } else {
                "#!/bin/sh\necho 'test result: ok. 1 passed; 0 failed'\nexit 0\n"
            };
            let path = bin.join(name);
            std::fs::write(&path, body).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let script = dir.join("run.sh");
        std::fs::write(
            &script,
            runner_script(&["t1".into(), "t2".into()], &["ex1".into()]),
        )
        .unwrap();
        let out = std::process::Command::new("bash")
            .arg(&script)
            .env("OUT", dir.join("out"))
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    #[test]
    fn run_sh_fails_when_any_step_fails() {
        let ok = run_with(None);
        assert!(ok.status.success(), "{ok:?}");
        // `unigpu` is both `info` and `demo` here.
        for step in ["unigpu", "t1", "t2", "ex1"] {
            let out = run_with(Some(step));
            assert_eq!(
                out.status.code(),
                Some(1),
                "a failing {step} must fail run.sh: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}
