#!/usr/bin/env bash
# The whole `unigpu bench` of two builds on one GPU in one call, against
# the same anchors (floor.cu, torch_cupy_baseline.py, torch_ops.py),
# in the order after, before, then (where the first pair left time)
# before, after; each run with a fresh disk cache. Writes NAME-ROUND.txt
# (anchors + the run's lines), .md, .json and -ratios.txt to $OUT.
#   bash bench/runners/before_after_gpu.sh BEFORE_BIN AFTER_BIN
# The vulkan driver's .debs (.gl, docs/vulkan.md) are unpacked when carried.
set -u
before="$1"; after="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"; cd "$root"
out=${OUT:-/tmp/unigpu-before-after}; mkdir -p "$out"
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" / 2>/dev/null; done; ldconfig 2>/dev/null || true
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json NODEVICE_SELECT=1
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
a="$out/anchors.txt"; : > "$a"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$a"
nvcc -O2 -o /tmp/floor bench/anchors/floor.cu -lcuda && /tmp/floor >> "$a"
python3 bench/anchors/torch_cupy_baseline.py >> "$a" 2>&1
python3 bench/anchors/torch_ops.py >> "$a" 2>&1
run() {  # NAME BINARY ROUND
  local log="$out/$1-$3.txt" cache; cp "$a" "$log"; cache="$(mktemp -d)"
  SECONDS=0
  UNIGPU_CACHE_DIR="$cache" timeout 200 "$2" bench --lines --anchors "$a" \
    --md "$out/$1-$3.md" --json "$out/$1-$3.json" >> "$log" 2> "$out/$1-$3.err"
  echo "$1 round $3: exit $? in ${SECONDS}s"
  python3 bench/runners/ratios.py "$log" > "$out/$1-$3-ratios.txt" 2>&1
}
start=$(date +%s)
run after "$after" 1
run before "$before" 1
if [ $(( $(date +%s) - start )) -lt 250 ]; then
  run before "$before" 2
  run after "$after" 2
fi
for f in "$out"/*-ratios.txt; do echo "== $f"; head -40 "$f"; done
