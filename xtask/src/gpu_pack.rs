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
        // C API's GPU run is tests/gpu/ffi_gpu_run.sh (C program built here).
        &[
            "test",
            "--workspace",
            "--exclude",
            "xtask",
            "--exclude",
            "unigpu-fixture",
            "--exclude",
            "unigpu-capi",
            // trybuild's compile-fail cases run cargo, and a proc macro's
            // unit tests link libstd dynamically: both are CI's.
            "--exclude",
            "unigpu-kernel-macros",
            // Text constants only: no test of its own on any GPU.
            "--exclude",
            "unigpu-shader-text",
            // The random-kernel generator: its unit tests run on the host
            // (CI's), and its test binary links libstd dynamically, which
            // the GPU machine lacks (exit 127 in the 2026-11-27 runs);
            // tests/kernel_prop.rs, which uses it, is packed.
            "--exclude",
            "unigpu-kernel-proptest",
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
    // Examples run as part of the GPU run; benchmarks run from bench/runners/run_gpu.sh.
    let mut examples: Vec<String> = tools
        .iter()
        .filter(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        .cloned()
        .collect();
    examples.extend(torch_tools.into_iter().filter(|n| !n.contains("bench")));
    fs::write(pack.join("run.sh"), runner_script(&tests, &examples))?;

    let shares = shares()?;
    if shares > 1 {
        return split(&root, &pack, &tests, &examples, shares);
    }
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

/// `UNIGPU_PACK_SHARES`: into how many packs to split the binaries (1 by
/// default), each under the device tool's 64 MiB carry when one is not.
fn shares() -> anyhow::Result<usize> {
    let Ok(text) = std::env::var("UNIGPU_PACK_SHARES") else {
        return Ok(1);
    };
    match text.parse::<usize>() {
        Ok(n @ 1..=9) => Ok(n),
        _ => bail!("UNIGPU_PACK_SHARES={text:?}: expected a count from 1 to 9"),
    }
}

/// Splits the pack into `.gpu-pack-1/` … `.gpu-pack-N/`, one a
/// `run.sh --part K/N` call: share K holds the test binaries that part
/// runs (the runner's own `share`: every N-th of its order, from the
/// K-th), share 1 the examples too, and every share the tools `run.sh`
/// itself runs (the CLI). Each is stripped and packed alone, in parallel.
fn split(
    root: &Path,
    pack: &Path,
    tests: &[String],
    examples: &[String],
    n: usize,
) -> anyhow::Result<()> {
    let order = runner_order(tests);
    let bin = pack.join("bin");
    let names: Vec<String> = fs::read_dir(&bin)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    let mut dirs = Vec::new();
    for k in 1..=n {
        let dir = root.join(format!("{PACK_DIR}-{k}"));
        if dir.exists() {
            fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        fs::create_dir_all(dir.join("bin"))?;
        fs::copy(pack.join("run.sh"), dir.join("run.sh"))?;
        for name in &names {
            if in_share(name, k, n, &order, examples) {
                fs::copy(bin.join(name), dir.join("bin").join(name))?;
            }
        }
        dirs.push(dir);
    }
    fs::remove_dir_all(pack)?;
    let sizes = std::thread::scope(|scope| {
        let jobs: Vec<_> = dirs
            .iter()
            .map(|d| scope.spawn(move || shrink(d)))
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("a packing thread panicked"))
            .collect::<anyhow::Result<Vec<u64>>>()
    })?;
    for (k, size) in sizes.iter().enumerate() {
        let k = k + 1;
        println!(
            "{PACK_DIR}-{k}/: {:.1} MiB; run it with the device tool:",
            *size as f64 / (1 << 20) as f64
        );
        println!(
            "  run(command=\"bash {PACK_DIR}-{k}/run.sh --part {k}/{n}\", carry=[\"{PACK_DIR}-{k}\", \".gl\"])"
        );
    }
    Ok(())
}

/// Whether pack `k` of `n` holds `name`: a test binary where `run.sh
/// --part k/n` runs it, an example in pack 1, any other tool in every one.
fn in_share(name: &str, k: usize, n: usize, order: &[String], examples: &[String]) -> bool {
    match order.iter().position(|t| t == name) {
        Some(i) => i % n + 1 == k,
        None if examples.iter().any(|e| e == name) => k == 1,
        None => true,
    }
}

/// The unpack line every generated runner starts with.
pub(crate) const UNPACK: &str = r#"[ -d "$here/bin" ] || { xz -dc "$here/bin.tar.xz" | tar xf - -C "$here"; } || { echo "cannot unpack $here/bin.tar.xz"; exit 1; }"#;

/// Strips the binaries and packs them into bin.tar.xz, which the runners
/// unpack: the plain binaries do not fit the device tool's 64 MiB carry.
/// The test binaries share most of their code (each links the whole
/// facade), so xz with a dictionary as large as the tar finds one copy of
/// it in another: 627 MB of binaries in about 45 MB, where gzip's 32 KiB
/// window left 237 MB. Returns the pack's size in bytes.
pub(crate) fn shrink(pack: &Path) -> anyhow::Result<u64> {
    let bin = pack.join("bin");
    let files: Vec<PathBuf> = fs::read_dir(&bin)?
        .map(|e| Ok(e?.path()))
        .collect::<std::io::Result<_>>()?;
    let stripped = Command::new("strip")
        .args(&files)
        .status()
        .context("running strip")?;
    if !stripped.success() {
        bail!("strip failed on the packed binaries");
    }
    let total: u64 = files
        .iter()
        .map(|f| fs::metadata(f).map(|m| m.len()))
        .sum::<std::io::Result<u64>>()?;
    // xz's largest dictionary is 1.5 GiB; compressing takes about 7.5 times
    // the dictionary in memory (preset 1's hc4 match finder), unpacking
    // once. Preset 1 rather than 6: on two test binaries 11% larger, five
    // times faster (2.0 s of CPU against 11.3), and the copies of the facade
    // it must find are long matches either finder sees. UNIGPU_PACK_XZ_PRESET
    // picks another.
    let dict_mib = (total >> 20).clamp(8, 1536) + 1;
    let preset = std::env::var("UNIGPU_PACK_XZ_PRESET").unwrap_or_else(|_| "1".into());
    if !matches!(
        preset.as_str(),
        "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9"
    ) {
        bail!("UNIGPU_PACK_XZ_PRESET={preset:?}: xz's presets are 0 to 9");
    }
    let archive = pack.join("bin.tar.xz");
    let started = std::time::Instant::now();
    let packed = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; tar cf - -C \"$1\" bin | xz -T1 --lzma2=preset={preset},dict={dict_mib}MiB > \"$2\""
        ))
        .arg("pack")
        .arg(pack)
        .arg(&archive)
        .status()
        .context("running tar | xz")?;
    if !packed.success() {
        bail!("tar | xz failed while packing the binaries (is xz installed?)");
    }
    fs::remove_dir_all(&bin)?;
    let size = fs::metadata(&archive)?.len();
    println!(
        "xz: {:.0} MiB of binaries in {:.1} MiB ({dict_mib} MiB dictionary, {:.0} s)",
        total as f64 / (1 << 20) as f64,
        size as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(size)
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

/// Test binaries that need the whole host: every GPU (the multi-GPU and
/// NCCL tests, `device = "cuda:1"`), or that open a Vulkan device from a
/// test whose name does not say vulkan, so the lanes' `--skip vulkan`
/// keeps it in. NVIDIA's Vulkan driver ignores `CUDA_VISIBLE_DEVICES`, so
/// such a device may be on another lane's GPU, where its memory moves that
/// lane's leak guards (on 4 × H100, a cuda-safe and an ops guard failed by
/// 6-212 MiB while `cli`'s and `missing_libcuda`'s vulkan fallbacks ran in
/// other lanes). They are tests/vulkan.rs, the soak (every backend), the
/// fallback-chain tests (`context`, `missing_libcuda`) and the CLI's
/// `info`. They run alone, after the lanes.
fn needs_whole_host(name: &str) -> bool {
    let name = name.strip_prefix("torch-").unwrap_or(name);
    [
        "multi_gpu-",
        "multi_process-",
        "config-",
        "vulkan-",
        "soak-",
        "context-",
        "missing_libcuda-",
        "cli-",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Binaries that take minutes on a GPU (10,000 rounds of everything, the
/// pipeline's overlap workload, filling a device): the lanes start them
/// first, so that no lane is left with one of them at the end.
fn runs_long(name: &str) -> bool {
    let name = name.strip_prefix("torch-").unwrap_or(name);
    ["churn-", "pipeline-", "out_of_memory-", "ops-", "streams-"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The order `run.sh` takes the test binaries in, which its `--part`
/// shares count: long ones first (stable), the rest as cargo listed them.
fn runner_order(tests: &[String]) -> Vec<String> {
    let mut tests = tests.to_vec();
    tests.sort_by_key(|t| !runs_long(t));
    tests
}

fn runner_script(tests: &[String], examples: &[String]) -> String {
    let tests = runner_order(tests);
    let (whole, laned): (Vec<&String>, Vec<&String>) =
        tests.iter().partition(|t| needs_whole_host(t));
    let laned = laned
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let whole = whole
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let all = tests.join(" ");
    let example_list = examples.join(" ");
    format!(
        r#"#!/usr/bin/env bash
# Generated by `cargo xtask gpu-pack`; runs `unigpu info`, the demo, every
# test binary (ignored GPU tests included) and every example, and prints one
# summary line per step. Exits non-zero when any of them exits non-zero.
#
#   run.sh [--part K/N] [--lanes L] [ARGS...]
#
# --part K/N  runs the K-th of N shares of the test binaries (every N-th,
#             from the K-th), so that each call fits the device tool's
#             10-minute limit; the demo and the examples go with part 1.
# --lanes L   runs L test binaries at once, lane i on GPU i alone
#             (CUDA_VISIBLE_DEVICES), then the tests whose names say vulkan
#             and the binaries that need the whole host one at a time.
#             Default: one lane a GPU. With one lane everything runs in
#             order on every GPU.
# ARGS go to every test binary (--skip NAME, a filter).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
part=1/1; lanes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --part) part=${{2:-}}; shift 2 || {{ echo "--part needs K/N"; exit 2; }};;
    --lanes) lanes=${{2:-}}; shift 2 || {{ echo "--lanes needs a count"; exit 2; }};;
    *) break;;
  esac
done
k=${{part%/*}}; n=${{part#*/}}
case "$k/$n" in [1-9]*/[1-9]*) ;; *) echo "--part $part: expected K/N, as 1/3"; exit 2;; esac
[ "$k" -le "$n" ] || {{ echo "--part $part: K is past N"; exit 2; }}
{UNPACK}
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
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ -n "$lanes" ] || lanes=$gpus
[ "$lanes" -ge 1 ] 2>/dev/null || lanes=1
# One lane a GPU at most: two lanes on one GPU would move each other's
# readings of the driver's free memory (the leak guard's).
[ "$gpus" -ge 1 ] && [ "$lanes" -gt "$gpus" ] && lanes=$gpus
"$here/bin/unigpu" info >"$out/info.txt" 2>&1; rc=$?; cat "$out/info.txt"
if [ $rc -eq 0 ]; then echo "info: ok"; else echo "info: FAILED (exit $rc)"; failed=1; fi
if [ "$k" = 1 ]; then
  if "$here/bin/unigpu" demo >"$out/demo.txt" 2>&1; then echo "demo: ok"; tail -n 2 "$out/demo.txt"; else echo "demo: FAILED (exit $?)"; cat "$out/demo.txt"; failed=1; fi
fi
log="$out/tests.log"
tmp=$(mktemp -d)
# This part's share of a list: every N-th name from the K-th.
share() {{ local i=0; for t in "$@"; do [ $((i % n + 1)) -eq "$k" ] && printf '%s ' "$t"; i=$((i + 1)); done; }}
mine=" $(share {all}) "
keep() {{ for t in "$@"; do case "$mine" in *" $t "*) echo "$t";; esac; done; }}
laned=$(keep {laned}); whole=$(keep {whole})
if [ "$lanes" -eq 1 ]; then whole="$laned $whole"; laned=""; fi
started=$SECONDS

# A binary still running after this many seconds is killed and fails.
limit=${{UNIGPU_BINARY_TIMEOUT:-420}}

# run_one NAME TAG [ENV=VALUE...] -- [FILTER ARGS...]: one test binary; its
# line is printed and its output appended to the log as soon as it ends
# (a call cut off at its time limit still shows what finished).
run_one() {{
  local t=$1 tag=$2; shift 2
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  # torch's tests one at a time: c10 hands the same pool streams to every
  # test and its caching allocator takes one lock for all of them, so a
  # test that holds a stream behind a gate can stall another test's calls.
  local threads=(); case "$t" in torch-*|gpu-*|cpu-*) threads=(--test-threads=1);; esac
  local s=$SECONDS one="$tmp/$t.$tag"
  env "${{envs[@]}}" timeout -k 10 "$limit" "$here/bin/$t" --include-ignored "${{threads[@]}}" "$@" "${{ARGS[@]}}" >"$one" 2>&1
  local rc=$? secs=$((SECONDS - s))
  local line; line=$(grep -E '^test result:' "$one" | tail -n 1)
  [ $rc -eq 124 ] && line="TIMED OUT after $limit s (UNIGPU_BINARY_TIMEOUT); $(grep -E 'has been running for over' "$one" | head -n 5 | tr '\n' ' ')"
  {{
    flock 9
    {{ echo "=== $t ($tag)"; cat "$one"; }} >>"$log"
    echo "$t ($tag): ${{line:-no result line}} (exit $rc, $secs s)"
    if [ $rc -ne 0 ]; then grep -E -A15 '^---- |panicked' "$one" | head -n 60; fi
  }} 9>>"$tmp/print.lock"
  echo "$rc" >"$one.rc"
}}
ARGS=("$@")

# Lanes: each takes the next binary off a shared counter, on its own GPU.
if [ -n "$laned" ]; then
  set -- $laned; names=("$@"); echo 0 >"$tmp/next"
  for lane in $(seq 0 $((lanes - 1))); do
    (
      while :; do
        i=$(flock "$tmp/next" bash -c 'i=$(cat "$0"); echo $((i + 1)) >"$0"; echo $i' "$tmp/next")
        [ "$i" -lt ${{#names[@]}} ] || break
        run_one "${{names[$i]}}" lane CUDA_VISIBLE_DEVICES=$lane -- --skip vulkan
      done
    ) &
  done
  wait
  # Then their vulkan tests, one binary at a time on the whole host.
  for t in $laned; do run_one "$t" vulkan -- vulkan; done
fi
for t in $whole; do run_one "$t" all --; done

for t in $laned $whole; do
  for tag in lane vulkan all; do
    one="$tmp/$t.$tag"; [ -f "$one.rc" ] || continue
    rc=$(cat "$one.rc")
    line=$(grep -E '^test result:' "$one" | tail -n 1)
    p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line"); f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
    passed_total=$((passed_total + ${{p:-0}})); failed_total=$((failed_total + ${{f:-0}}))
    if [ "$rc" -ne 0 ]; then failed=1; fi
  done
done
rm -rf "$tmp"
echo "tests: $((SECONDS - started)) s in $lanes lane(s)"
if [ "$k" = 1 ]; then
  for e in {example_list}; do
    echo "=== example $e" >>"$log"
    "$here/bin/$e" >>"$log" 2>&1; rc=$?
    if [ $rc -eq 0 ]; then echo "example $e: ok"; else echo "example $e: FAILED (exit $rc)"; failed=1; fi
  done
fi
echo "GPU run (part $k/$n): $passed_total passed, $failed_total failed"
[ $failed -eq 0 ] && echo "GPU run: every step exited 0" || echo "GPU run: FAILED (a step above exited non-zero)"
exit $failed
"#
    )
}

#[cfg(test)]
mod tests {
    use super::{in_share, runner_order, runner_script};

    /// Runs the generated script with fake binaries and `args`: each
    /// step's exit status must reach the script's own. Each fake binary
    /// notes its name in `ran`.
    fn run_with(fail: Option<&str>, args: &[&str]) -> (std::process::Output, String) {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "unigpu-runner-test-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ran = dir.join("ran");
        let names = ["unigpu", "t1", "t2", "t3", "multi_gpu-1", "ex1"];
        for name in names {
            let result = if Some(name) == fail {
                "echo 'test result: FAILED. 0 passed; 1 failed'\nexit 3"
            } else {
                "echo 'test result: ok. 1 passed; 0 failed'\nexit 0"
            };
            let body = format!(
                "#!/bin/sh\necho \"$(basename \"$0\") $CUDA_VISIBLE_DEVICES $*\" >>{}\n{result}\n",
                ran.display()
            );
            let path = bin.join(name);
            std::fs::write(&path, body).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let script = dir.join("run.sh");
        let tests = ["t1", "t2", "t3", "multi_gpu-1"].map(String::from);
        std::fs::write(&script, runner_script(&tests, &["ex1".into()])).unwrap();
        let out = std::process::Command::new("bash")
            .arg(&script)
            .args(args)
            .env("OUT", dir.join("out"))
            .output()
            .unwrap();
        let ran = std::fs::read_to_string(&ran).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (out, ran)
    }

    fn ran_tests(ran: &str) -> Vec<&str> {
        let mut names: Vec<&str> = ran
            .lines()
            .filter_map(|l| l.split(' ').next())
            .filter(|n| n.starts_with('t') || n.starts_with("multi"))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn each_split_pack_holds_what_its_part_runs() {
        let tests = ["t1", "t2", "t3", "multi_gpu-1"].map(String::from);
        let examples = ["ex1".to_string()];
        let order = runner_order(&tests);
        for k in 1..=2 {
            let (out, ran) = run_with(None, &["--part", &format!("{k}/2")]);
            assert!(out.status.success(), "{out:?}");
            let mut held: Vec<&str> = tests
                .iter()
                .filter(|t| in_share(t, k, 2, &order, &examples))
                .map(|t| t.as_str())
                .collect();
            held.sort();
            assert_eq!(held, ran_tests(&ran), "part {k}/2: {ran}");
            assert!(in_share("unigpu", k, 2, &order, &examples));
            assert_eq!(in_share("ex1", k, 2, &order, &examples), k == 1);
        }
    }

    #[test]
    fn parts_share_the_binaries_out_and_lanes_run_each_on_one_gpu() {
        let (_, all) = run_with(None, &[]);
        assert_eq!(ran_tests(&all), ["multi_gpu-1", "t1", "t2", "t3"], "{all}");
        let (p1, one) = run_with(None, &["--part", "1/2"]);
        let (p2, two) = run_with(None, &["--part", "2/2"]);
        assert!(p1.status.success() && p2.status.success());
        assert_eq!(ran_tests(&one), ["t1", "t3"], "{one}");
        assert_eq!(ran_tests(&two), ["multi_gpu-1", "t2"], "{two}");
        // The examples and the demo go with part 1 only.
        assert!(one.contains("ex1") && !two.contains("ex1"), "{one}\n{two}");

        let (out, ran) = run_with(None, &["--lanes", "2", "--skip", "x"]);
        assert!(out.status.success(), "{out:?}");
        for t in ["t1", "t2", "t3"] {
            // On one GPU without its vulkan tests, then those on all.
            let lines: Vec<&str> = ran
                .lines()
                .filter(|l| l.starts_with(&format!("{t} ")))
                .collect();
            assert_eq!(lines.len(), 2, "{ran}");
            assert!(
                lines.iter().any(|l| l.contains("--skip vulkan --skip x")
                    && (l.starts_with(&format!("{t} 0 ")) || l.starts_with(&format!("{t} 1 ")))),
                "{ran}"
            );
            assert!(
                lines
                    .iter()
                    .any(|l| l.ends_with("--include-ignored vulkan --skip x")),
                "{ran}"
            );
        }
        // A binary that needs the whole host runs once, with every GPU.
        let multi: Vec<&str> = ran
            .lines()
            .filter(|l| l.starts_with("multi_gpu-1"))
            .collect();
        assert_eq!(multi, ["multi_gpu-1  --include-ignored --skip x"], "{ran}");
        let (bad, _) = run_with(None, &["--part", "3/2"]);
        assert_eq!(bad.status.code(), Some(2));
    }

    #[test]
    fn run_sh_fails_when_any_step_fails() {
        let (ok, _) = run_with(None, &[]);
        assert!(ok.status.success(), "{ok:?}");
        // `unigpu` is both `info` and `demo` here.
        for step in ["unigpu", "t1", "t2", "ex1"] {
            let (out, _) = run_with(Some(step), &[]);
            assert_eq!(
                out.status.code(),
                Some(1),
                "a failing {step} must fail run.sh: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        for step in ["t1", "multi_gpu-1"] {
            let (out, _) = run_with(Some(step), &["--lanes", "2"]);
            assert_eq!(
                out.status.code(),
                Some(1),
                "a failing {step} must fail run.sh: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}
