#!/usr/bin/env bash
# The CPU backend beside numpy, in one run on one machine: bench/anchors/numpy_ops.py,
# then `unigpu bench --cpu-ops-only --lines` on UNIGPU_BACKEND=cpu with
# numpy's lines as its anchors (it also writes bench_cpu.md, .json and .svg
# to $OUT), then bench/runners/ratios.py's unigpu/numpy ratio of each op (lower is
# better there; 1.0 is numpy's time; the markdown table's ratio is the
# other way up: above 1 is better).
# PYTHON picks the interpreter (default: the checkout's .venv-python).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
out="${OUT:-/tmp/unigpu-bench-cpu}"; mkdir -p "$out"
log="$out/bench_cpu.txt"; : >"$log"
python="${PYTHON:-$root/.venv-python/bin/python}"
{ echo "nproc $(nproc)"; lscpu | sed -n 's/^Model name: *//p' | tr ' ' '_' | sed 's/^/cpu_model /'; } | tee -a "$log"
(cd "$root" && cargo build --release -q -p unigpu-cli)
bin="${CARGO_TARGET_DIR:-$root/target}/release/unigpu"
"$python" "$root/bench/anchors/numpy_ops.py" 2>&1 | tee -a "$log"
# The anchors file is read before the first line is written to it.
UNIGPU_BACKEND=cpu "$bin" bench --cpu-ops-only --lines --anchors "$log" \
  --md "$out/bench_cpu.md" --json "$out/bench_cpu.json" --plot "$out/bench_cpu.svg" | tee -a "$log"
"$python" "$here/ratios.py" --cpu "$log" | tee "$out/ratios_cpu.txt"
cat "$out/bench_cpu.md"
