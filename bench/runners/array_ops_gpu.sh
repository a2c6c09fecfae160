#!/usr/bin/env bash
# Issue 28 item 7 on the GPU machine: bench/anchors/torch_ops.py, then
# `unigpu bench --backend cuda --only array_ops` twice with those lines as
# anchors, all in one call, and the ratios of both rounds.
#
#   bash bench/runners/array_ops_gpu.sh PATH/TO/unigpu
#
# (the release `unigpu` from `cargo build --release -p unigpu-cli`, carried
# packed with xz; docs/benchmarks.md, "Arrays' ops").
set -u
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
bin=${1:?usage: array_ops_gpu.sh PATH/TO/unigpu}
out="${OUT:-/tmp/unigpu-array-ops}"; mkdir -p "$out"
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 "$root/bench/anchors/torch_ops.py" >"$out/anchors.txt" 2>&1
for round in 1 2; do
  "$bin" bench --backend cuda --only array_ops --lines --anchors "$out/anchors.txt" >"$out/round$round.txt" 2>&1
  echo "bench round $round: exit $?"
  cat "$out/anchors.txt" "$out/round$round.txt" >"$out/both$round.txt"
  echo "== round $round"
  python3 "$here/ratios.py" "$out/both$round.txt" | grep -E "^ *op "
done
