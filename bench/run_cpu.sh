#!/usr/bin/env bash
# The CPU backend beside numpy, in one run on one machine: `unigpu bench
# --cpu-ops-only` on UNIGPU_BACKEND=cpu, then bench/numpy_ops.py, then the
# unigpu/numpy ratio of each op (lower is better; 1.0 is numpy's time).
# PYTHON picks the interpreter (default: the checkout's .venv-python).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/.."
out="${OUT:-/tmp/unigpu-bench-cpu}"; mkdir -p "$out"
log="$out/bench_cpu.txt"; : >"$log"
python="${PYTHON:-$root/.venv-python/bin/python}"
{ echo "nproc $(nproc)"; lscpu | sed -n 's/^Model name: *//p' | tr ' ' '_' | sed 's/^/cpu_model /'; } | tee -a "$log"
(cd "$root" && cargo build --release -q -p unigpu-cli)
bin="${CARGO_TARGET_DIR:-$root/target}/release/unigpu"
UNIGPU_BACKEND=cpu "$bin" bench --cpu-ops-only 2>&1 | tee -a "$log"
"$python" "$here/numpy_ops.py" 2>&1 | tee -a "$log"
"$python" "$here/ratios.py" --cpu "$log" | tee "$out/ratios_cpu.txt"
