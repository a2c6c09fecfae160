#!/usr/bin/env bash
# CI for `cargo xtask gen` (issue 3): freshness of the generated files, the
# generator's tests (goldens, spec errors, the four regression tests, C/C++
# header compilation), the fixture library from Rust and from a C program
# (under valgrind), and the direct-CUDA tier built against the CUDA 13.0
# headers and libcudart from pip wheels. Runs without a GPU (CI=true), where
# each of that tier's GPU tests must fail naming the missing GPU; on a
# machine with a GPU it also runs the GPU tests.
#
# Installs what it needs: gcc, g++, valgrind, python3-venv (apt-get), rustfmt
# and clippy (rustup), the nvidia-cuda-runtime and nvidia-cuda-crt wheels
# (pip, into .venv-cuda in the repository).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)
CUDA_RUNTIME_WHEEL="nvidia-cuda-runtime==13.0.96"
CUDA_CRT_WHEEL="nvidia-cuda-crt==13.0.88"
VENV="$ROOT/.venv-cuda"
LOG_DIR=$(mktemp -d)
SUMMARY=()

step() { printf '\n==> %s\n' "$*"; }

# Runs a cargo test command, keeps its output, and records its result lines.
run_tests() {
  local label=$1
  shift
  local log="$LOG_DIR/$(echo "$label" | tr -c 'a-zA-Z0-9' '_').log"
  step "$label: $*"
  "$@" 2>&1 | tee "$log"
  local passed=0 failed=0 ignored=0
  while read -r p f i; do
    passed=$((passed + p)); failed=$((failed + f)); ignored=$((ignored + i))
  done < <(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$log")
  SUMMARY+=("$(printf '%-34s %4d passed, %d failed, %d ignored' "$label" "$passed" "$failed" "$ignored")")
}

# --- system packages ---------------------------------------------------------
need=()
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
command -v valgrind >/dev/null || need+=(valgrind)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if command -v rustup >/dev/null; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi

# --- generator ---------------------------------------------------------------
step "cargo xtask gen --check"
cargo xtask gen --check

step "format and lints of the generator and its crates"
cargo fmt --check -p xtask -p unigpu-fixture -p unigpu-cuda-rt -p unigpu-capi-runtime
cargo clippy -p xtask -p unigpu-fixture -p unigpu-cuda-rt -p unigpu-capi-runtime --all-targets -- -D warnings

run_tests "generator (xtask)" cargo test -p xtask
run_tests "C-ABI runtime (capi-runtime)" cargo test -p unigpu-capi-runtime
UNIGPU_REQUIRE_VALGRIND=1 run_tests "fixture library (crates/fixture)" cargo test -p unigpu-fixture

# --- direct CUDA tier against the pip wheels -----------------------------------
step "CUDA wheels into $VENV: $CUDA_RUNTIME_WHEEL $CUDA_CRT_WHEEL"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$CUDA_RUNTIME_WHEEL" "$CUDA_CRT_WHEEL"
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
header=$(find "$SITE/nvidia" -name cuda_runtime.h -path '*/include/*' | head -n 1)
if [ -z "$header" ]; then
  echo "error: cuda_runtime.h not found under $SITE/nvidia" >&2
  exit 1
fi
export UNIGPU_CUDA_HOME=$(dirname "$(dirname "$header")")
[ -f "$UNIGPU_CUDA_HOME/include/crt/host_defines.h" ] || { echo "error: crt/ headers missing ($CUDA_CRT_WHEEL)" >&2; exit 1; }
export LD_LIBRARY_PATH="$UNIGPU_CUDA_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "UNIGPU_CUDA_HOME=$UNIGPU_CUDA_HOME"

cargo clippy -p unigpu-cuda-rt --features cuda --all-targets -- -D warnings
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  run_tests "cuda tier (GPU present)" cargo test -p unigpu-cuda-rt --features cuda -- --include-ignored
else
  UNIGPU_EXPECT_NO_GPU=1 run_tests "cuda tier (no GPU: error path)" cargo test -p unigpu-cuda-rt --features cuda
  # The tier's GPU tests are built only with `cuda`, so the workspace-wide
  # check in .ci/run never sees them: each must fail here, naming the
  # missing GPU. Same features and profile as the line above: no rebuild.
  step "every GPU test of the cuda tier fails without a GPU"
  bash .ci/gpu-tests-fail-without-gpu.sh -p unigpu-cuda-rt --features cuda
fi

step "GPU test binary (release, not run here)"
cargo test -p unigpu-cuda-rt --features cuda --release --no-run 2>&1 | tail -n 3

# --- summary -----------------------------------------------------------------
printf '\n==> gen-tests summary (%ss)\n' "$(($(date +%s) - START))"
printf '%s\n' "${SUMMARY[@]}"
rm -rf "$LOG_DIR"
