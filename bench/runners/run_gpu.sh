#!/usr/bin/env bash
# One GPU-machine run of the benchmark with its anchors, all in the same
# call: raw CUDA floor, torch/CuPy baseline, torch axpy/matmul, then
# `unigpu bench --lines` with those lines as its anchors (its compile_disk
# case starts `unigpu bench --compile-only` in a new process with the same
# cache directory). It also writes bench.md (the table for
# docs/benchmarks.md), bench.json and bench.svg to $OUT.
# Needs `cargo xtask gpu-pack` first (for .gpu-pack/bin/unigpu).
set -u
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
out="${OUT:-/tmp/unigpu-bench}"; mkdir -p "$out"
log="$out/bench.txt"; : >"$log"
[ -d "$root/.gpu-pack/bin" ] || { xz -dc "$root/.gpu-pack/bin.tar.xz" | tar xf - -C "$root/.gpu-pack"; }
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$log"
nvcc -O2 -o /tmp/floor "$root/bench/anchors/floor.cu" -lcuda && /tmp/floor | tee -a "$log"
python3 "$root/bench/anchors/torch_cupy_baseline.py" 2>&1 | tee -a "$log"
python3 "$root/bench/anchors/torch_ops.py" 2>&1 | tee -a "$log"
cache="$(mktemp -d)"
# The anchors file is read before the first line is written to it.
UNIGPU_CACHE_DIR="$cache" "$root/.gpu-pack/bin/unigpu" bench --lines --anchors "$log" \
  --md "$out/bench.md" --json "$out/bench.json" --plot "$out/bench.svg" 2>&1 | tee -a "$log"
if [ -x "$root/.gpu-pack/bin/torch_copy_bench" ]; then
  "$root/.gpu-pack/bin/torch_copy_bench" 2>&1 | tee -a "$log"
fi
if [ -x "$root/.gpu-pack/bin/torch-torch_backend_bench" ]; then
  "$root/.gpu-pack/bin/torch-torch_backend_bench" 2>&1 | tee -a "$log"
fi
# floor.cu again, after the torch anchors' and our own heavy cases: the
# device-bound figures (graph replay) drift with the GPU's state over a
# run, so the floor is on record at both ends.
/tmp/floor | sed 's/^/after_bench_/' | tee -a "$log"
python3 "$here/ratios.py" "$log" | tee "$out/ratios.txt"
cat "$out/bench.md"
