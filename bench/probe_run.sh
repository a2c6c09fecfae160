#!/usr/bin/env bash
# One GPU-machine call that gathers what the transfer and pipeline work of
# issue 12 needs: the fresh-page probe, pipeline traces whole and in
# pieces, and a staging-shape sweep. Writes into $OUT.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
[ -d "$root/.gpu-pack/bin" ] || { xz -dc "$root/.gpu-pack/bin.tar.xz" | tar xf - -C "$root/.gpu-pack"; }
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
{
  echo "# THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag); kernel $(uname -r); $(nproc) cpus"
  cc -O2 -pthread "$root/bench/probes/fresh_pages.c" -o /tmp/fresh_pages && /tmp/fresh_pages 64 && /tmp/fresh_pages 256
} > "$OUT/fresh_pages.txt" 2>&1
for p in 1 8; do
  "$root/.gpu-pack/bin/08_pipeline" "$OUT/pipeline-$p.json" 16 64 3 0 "$p" > "$OUT/pipeline-$p.txt" 2>&1
done
SHAPES="${SHAPES:-16,4,256 8,4,256 8,8,256 4,8,256 4,16,256}" bash "$root/bench/staging_sweep.sh" > "$OUT/staging.txt" 2>&1
