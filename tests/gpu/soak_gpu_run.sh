#!/usr/bin/env bash
# The soak run on the GPU machine (issue 15 item 6, docs/reliability.md,
# "Soak"): `unigpu soak --backend all --require cuda,vulkan --seconds 120 --threads 4`, random
# mixes of uploads, ops, kernels, streams and events, graph replays,
# pipelines and DLPack from four threads on every backend that opens there
# (torch, cuda, vulkan on the NVIDIA ICD, cpu), every result checked
# against the host; memory before, during and after. Writes soak.txt,
# soak.json and info.txt under $OUT; exits non-zero when the soak fails.
# Pack here (release; with the torch feature when .venv-torch exists,
# which .ci/torch-tests.sh makes):
#   bash tests/gpu/soak_gpu_run.sh --pack      # .gpu-pack/soak.tar.gz
# then run(command="bash tests/gpu/soak_gpu_run.sh",
#          carry=[".gpu-pack/soak.tar.gz", ".gl"])
# SOAK_SECONDS and SOAK_THREADS override the duration and threads;
# SOAK_ARGS adds flags (e.g. "--seed 123" to replay a run).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --pack ]; then
  set -e
  if [ -x .venv-torch/bin/python ]; then
    # torch's Python on PATH tells torch-sys where libtorch is; the GPU
    # machine has the same torch (docs/torch.md).
    PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1 PYTHONDONTWRITEBYTECODE=1 \
      cargo build --release -p unigpu-cli --features torch
    echo "packed: unigpu with the torch backend"
  else
    echo "note: no .venv-torch (run .ci/torch-tests.sh once): packing unigpu without the torch backend" >&2
    cargo build --release -p unigpu-cli
  fi
  rm -rf /tmp/soak && mkdir -p /tmp/soak .gpu-pack
  cp target/release/unigpu /tmp/soak/unigpu
  tar czf .gpu-pack/soak.tar.gz -C /tmp soak
  ls -l .gpu-pack/soak.tar.gz
  exit 0
fi
out=${OUT:-/tmp}
seconds=${SOAK_SECONDS:-120}
threads=${SOAK_THREADS:-4}
tar xzf .gpu-pack/soak.tar.gz -C /tmp
# The Vulkan loader (the GPU machine has none of its own) and NVIDIA's ICD,
# as tests/gpu/hardening_gpu_run.sh sets them up.
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
/tmp/soak/unigpu info >"$out/info.txt" 2>&1
grep -E "^  (torch|cuda|vulkan|cpu) " "$out/info.txt"
# The soak ends its own run after $seconds and fails a step still running
# 120 s later; the timeout is only a last resort.
# shellcheck disable=SC2086 # SOAK_ARGS is a list of flags
# cuda and vulkan must open here (the run fails, naming them, if not);
# torch too when the binary has it (--backend all requires it then).
timeout $((seconds + 400)) /tmp/soak/unigpu soak --backend all --require cuda,vulkan --seconds "$seconds" \
  --threads "$threads" --json "$out/soak.json" ${SOAK_ARGS:-} 2>&1 | tee "$out/soak.txt"
status=${PIPESTATUS[0]}
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
echo "soak exit status: $status"
exit "$status"
