#!/usr/bin/env bash
# CI for the torch tier (feature `torch`), on CPU: installs torch 2.11.0
# from pip into .venv-torch (about 4.6 GB), builds unigpu-torch-sys (tch's
# torch-sys) and the c10 bridge generated from specs/torch.yaml against it,
# and runs their tests. Without a GPU they cover tensors, DLPack and the
# error path of every CUDA call; the GPU tests run on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV="$ROOT/.venv-torch"

step() { printf '\n==> %s\n' "$*"; }

step "torch 2.11.0 into $VENV"
python3 -c 'import venv, ensurepip' 2>/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv
}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
start=$(date +%s)
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check torch==2.11.0 nvidia-cuda-crt==13.0.88
echo "installed in $(( $(date +%s) - start ))s: $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"

# tch's torch-sys asks the first python on PATH where torch is.
export PATH="$VENV/bin:$PATH" LIBTORCH_USE_PYTORCH=1
TORCH_LIB=$("$VENV/bin/python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

step "clippy (feature torch)"
cargo clippy -p unigpu-torch-sys -p unigpu-torch-bridge -p unigpu \
  --features unigpu-torch-sys/torch,unigpu-torch-bridge/torch,unigpu/torch --all-targets -- -D warnings

step "tests (feature torch, CPU; GPU tests are ignored here)"
UNIGPU_EXPECT_NO_GPU=1 cargo test -p unigpu-torch-sys -p unigpu-torch-bridge \
  --features unigpu-torch-sys/torch,unigpu-torch-bridge/torch
# Of the facade's tests, those where the feature changes what runs on a
# machine without a GPU: the backend list and fallback chain (lib,
# context), backend names in config files, the torch backend's own
# no-GPU errors and the kernel cache's torch entries. The rest run the
# same CPU code as in the plain run; clippy above still builds every
# target with the feature, and the GPU-marked ones run below.
UNIGPU_EXPECT_NO_GPU=1 cargo test -p unigpu --features unigpu/torch \
  --lib --test torch_backend --test context --test config --test kernel_cache

step "the torch backend example says why it cannot run here, and fails"
# Without a GPU the example must exit 2 with "no torch GPU here: ..." (a
# run that checked nothing is not a pass); anything else fails CI.
cargo build -q -p unigpu --features torch --example 07_torch_backend
set +e
example_out=$(cargo run -q -p unigpu --features torch --example 07_torch_backend 2>&1)
example_rc=$?
set -e
printf '%s\n' "$example_out"
if [ "$example_rc" -ne 2 ] || ! grep -q '^no torch GPU here: ' <<<"$example_out"; then
  echo "07_torch_backend: expected exit 2 with 'no torch GPU here: ...', got exit $example_rc" >&2
  exit 1
fi
echo "07_torch_backend: exit 2 with the no-GPU message, as expected"

step "GPU-marked tests (feature torch) all fail without a GPU, each with the no-GPU message"
bash .ci/gpu-tests-fail-without-gpu.sh -p unigpu-torch-sys -p unigpu-torch-bridge -p unigpu \
  --features unigpu-torch-sys/torch,unigpu-torch-bridge/torch,unigpu/torch
