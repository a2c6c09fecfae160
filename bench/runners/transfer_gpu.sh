#!/usr/bin/env bash
# Issue 29 item 3 on the GPU machine: bench/anchors/transfer_anchors.py
# (torch's and CuPy's pageable copies at 1, 16, 64 and 256 MiB), then
# `unigpu bench --backend cuda --only transfer` twice with those lines as
# anchors, then the anchors again, all in one call, and the ratios of both
# rounds (each against the anchors measured just before it).
#
#   bash bench/runners/transfer_gpu.sh PATH/TO/unigpu
#
# (the release `unigpu` from `cargo build --release -p unigpu-cli`, carried
# packed with xz; docs/benchmarks.md, "Transfers from ordinary memory").
set -u
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
bin=${1:?usage: transfer_gpu.sh PATH/TO/unigpu}
out="${OUT:-/tmp/unigpu-transfer}"; mkdir -p "$out"
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | sed -n 's/^Model name: *//p'; } | tee "$out/host.txt"
for round in 1 2; do
  python3 "$root/bench/anchors/transfer_anchors.py" >"$out/anchors$round.txt" 2>&1
  "$bin" bench --backend cuda --only transfer --reps 15 --lines --anchors "$out/anchors$round.txt" >"$out/round$round.txt" 2>&1
  echo "bench round $round: exit $?"
  cat "$out/anchors$round.txt" "$out/round$round.txt" >"$out/both$round.txt"
  echo "== round $round"
  python3 "$here/ratios.py" "$out/both$round.txt" | grep -E "MiB"
done
