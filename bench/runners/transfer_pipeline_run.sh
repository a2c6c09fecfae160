#!/usr/bin/env bash
# The GPU-machine measurements behind huge pages for new vectors and the
# pinned pipeline (issue 12): pageable transfers with the huge-page advice
# on and off (UNIGPU_HUGE_PAGES), alternating, in one process each; then
# the pipeline workload from pinned and ordinary memory, whole and in
# pieces, with the trace of a pinned run. Writes into $OUT.
# Needs `cargo xtask gpu-pack` first.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ -d "$root/.gpu-pack/bin" ] || { xz -dc "$root/.gpu-pack/bin.tar.xz" | tar xf - -C "$root/.gpu-pack"; }
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bench() { "$root/.gpu-pack/bin/unigpu" bench --backend cuda --only transfer --reps 10 --lines -q 2>&1 | grep -E "pageable|new_vec"; }
{
  for round in 1 2 3; do
    for huge in 1 0; do
      echo "# round $round, UNIGPU_HUGE_PAGES=$huge"
      UNIGPU_HUGE_PAGES=$huge bench
    done
  done
} > "$OUT/transfers.txt" 2>&1
{
  for round in 1 2; do
    for shape in "1 pinned" "4 pinned" "1 pageable"; do
      set -- $shape
      echo "# round $round, pieces $1, $2"
      host=; [ "$2" = pageable ] && host=--pageable
      "$root/.gpu-pack/bin/unigpu" pipeline --trace "$OUT/pipe-$1-$2.json" --pieces "$1" $host \
        | grep -E "stages|sequential|pipelined|ideal|efficiency"
    done
  done
} > "$OUT/pipeline.txt" 2>&1
