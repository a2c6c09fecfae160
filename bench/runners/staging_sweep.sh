#!/usr/bin/env bash
# Sweeps the staging ring's shape (slot size, slot count, host-copy piece)
# on the GPU machine and prints the pageable transfer figures of each, so
# the defaults in crates/cuda-safe/src/staging.rs rest on measurements.
# Needs `cargo xtask gpu-pack` first.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ -d "$root/.gpu-pack/bin" ] || { xz -dc "$root/.gpu-pack/bin.tar.xz" | tar xf - -C "$root/.gpu-pack"; }
# SHAPES="16,4,256 8,8,256" (slot MiB, slots, piece KiB) picks the shapes.
for shape in ${SHAPES:-16,6,256 16,4,256 16,8,256 32,6,256 8,8,256}; do
  set -- ${shape//,/ }
  echo "# slot ${1} MiB, ${2} slots, piece ${3} KiB"
  UNIGPU_STAGING_SLOT_MIB=$1 UNIGPU_STAGING_SLOTS=$2 UNIGPU_STAGING_PIECE_KIB=$3 \
    "$root/.gpu-pack/bin/unigpu" bench --backend cuda --only transfer --reps 10 --lines -q 2>&1 \
    | grep -E "pageable|new_vec"
done
# The upload ring write-combined (the default) and not.
for wc in 1 0; do
  echo "# UNIGPU_STAGING_WRITE_COMBINED=$wc"
  UNIGPU_STAGING_WRITE_COMBINED=$wc "$root/.gpu-pack/bin/unigpu" bench --backend cuda --only transfer --reps 10 --lines -q 2>&1 \
    | grep -E "pageable"
done
