#!/usr/bin/env bash
# A/B of two builds of `unigpu bench` on one GPU in one run: the builds
# alternate, ROUNDS times, in ABBA order (odd rounds before first, even
# rounds after first), so drift in the machine hits both alike.
#   bash bench/runners/compare_builds.sh BEFORE_BIN AFTER_BIN [ROUNDS]
# Prints each round's figures, then the median of each per build and the
# after/before ratio (below 1 is faster for times, above 1 for rates).
set -u
before="$1"; after="$2"; rounds="${3:-5}"
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
keys="unigpu_empty_launch_submit_us unigpu_empty_launch_default_stream_submit_us unigpu_launch_sync_roundtrip_us_median unigpu_axpy_f32_GBps unigpu_matmul_f32_TFLOPs unigpu_matmul_bf16_TFLOPs"
tmp="$(mktemp -d)"
for r in $(seq "$rounds"); do
  order="before after"; [ $((r % 2)) -eq 0 ] && order="after before"
  for which in $order; do
    bin="$before"; [ "$which" = after ] && bin="$after"
    # Builds with the markdown report print `key value` lines with --lines;
    # older builds print them by default.
    lines=""; "$bin" bench --help 2>/dev/null | grep -q -- '--lines' && lines="--lines"
    UNIGPU_CACHE_DIR="$tmp/cache" "$bin" bench $lines 2>/dev/null | grep -E "^($(echo $keys | tr ' ' '|')) " \
      | sed "s/^/$which $r /" | tee -a "$tmp/all.txt"
  done
done
python3 - "$tmp/all.txt" $keys <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'figure':48} {'before':>10} {'after':>10} {'after/before':>12}")
for k in sys.argv[2:]:
    med = {w: statistics.median(float(r[3]) for r in rows if r[0] == w and r[2] == k) for w in ("before", "after")}
    print(f"{k:48} {med['before']:10.4g} {med['after']:10.4g} {med['after'] / med['before']:12.3f}")
PY
