#!/usr/bin/env bash
# The pipeline workload of bench/anchors/torch_cupy_baseline.py (16 batches
# of 64 MiB, depth 3, compute calibrated to one upload) with each batch
# moved whole and in 2, 4 and 8 pieces, twice each, on the GPU machine.
# Prints the stage times, speedups and efficiencies of every run.
# Needs `cargo xtask gpu-pack` first.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ -d "$root/.gpu-pack/bin" ] || { xz -dc "$root/.gpu-pack/bin.tar.xz" | tar xf - -C "$root/.gpu-pack"; }
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for round in 1 2; do
  for pieces in 1 2 4 8; do
    echo "# round $round, pieces $pieces"
    "$root/.gpu-pack/bin/unigpu" pipeline --trace "/tmp/pipeline-$pieces.json" --pieces "$pieces" \
      | grep -E "stages|sequential|pipelined|ideal|efficiency"
  done
done
