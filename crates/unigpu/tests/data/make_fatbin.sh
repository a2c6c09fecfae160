#!/usr/bin/env bash
# Makes crates/unigpu/tests/data/axpy.fatbin, the fixture of the fatbin
# test in crates/unigpu/tests/precompiled.rs, from axpy.cu beside it:
# machine code for sm_90 and PTX for compute_90 (which the driver compiles
# for newer GPUs). Needs nvcc (the CUDA toolkit), so run it on the GPU
# machine and commit the result:
#   run(command="bash crates/unigpu/tests/data/make_fatbin.sh $OUT/axpy.fatbin")
# then copy the returned file to crates/unigpu/tests/data/axpy.fatbin.
# Arguments: the output path (default: the fixture's place). NVCC names
# the compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
src=crates/unigpu/tests/data/axpy.cu
out=${1:-crates/unigpu/tests/data/axpy.fatbin}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "error: no nvcc (set NVCC, or install the CUDA toolkit)" >&2; exit 1; }
"$nvcc" --version | tail -n 2
"$nvcc" -fatbin \
  -gencode arch=compute_90,code=sm_90 \
  -gencode arch=compute_90,code=compute_90 \
  -o "$out" "$src"
# A fatbin starts with its magic number 0xBA55ED50, little-endian.
magic=$(od -An -tx1 -N4 "$out" | tr -d ' \n')
[ "$magic" = "50ed55ba" ] || { echo "error: $out does not start with the fatbin magic (got $magic)" >&2; exit 1; }
echo "wrote $out ($(wc -c <"$out") bytes)"
