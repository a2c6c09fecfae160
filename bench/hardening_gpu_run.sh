#!/usr/bin/env bash
# On the GPU machine, one call: the facade's test binaries built with the
# torch feature (every ::cuda, ::torch and ::vulkan variant, under the leak
# guard of tests/common/mod.rs), then compute-sanitizer's memcheck,
# racecheck and synccheck over the cuda variants of some of them. API
# errors are not reported: those tests make the driver refuse calls on
# purpose (a missing kernel, an image for another GPU).
# Pack here (release, torch feature; LIBTORCH_USE_PYTORCH=1 with
# .venv-torch on PATH):
#   cargo test --release -p unigpu --features torch --test churn --test kernels \
#     --test precompiled --test kernel_fault --test out_of_memory --test allocator --test arrays \
#     --test ops --test streams --test graphs --no-run
#   bash bench/hardening_gpu_run.sh --pack      # .gpu-pack/hard.tar.gz
# then run(command="bash bench/hardening_gpu_run.sh",
#          carry=[".gpu-pack/hard.tar.gz", ".gl"])
set -uo pipefail
cd "$(dirname "$0")/.."
TESTS=${TESTS:-"churn kernels precompiled kernel_fault out_of_memory allocator arrays ops streams graphs"}
SANITIZED=${SANITIZED:-"kernels precompiled arrays graphs"}
if [ "${1:-}" = --pack ]; then
  rm -rf /tmp/hard && mkdir -p /tmp/hard
  for t in $TESTS; do
    exe=$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)
    cp "$exe" /tmp/hard/$t
  done
  tar czf .gpu-pack/hard.tar.gz -C /tmp hard
  ls -l .gpu-pack/hard.tar.gz
  exit 0
fi
out=${OUT:-/tmp}
tar xzf .gpu-pack/hard.tar.gz -C /tmp
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
status=0
for t in $TESTS; do
  start=$(date +%s)
  extra=""; [ "$t" = churn ] && extra=--nocapture
  echo "==== $t" >>"$out/tests.txt"
  timeout 300 /tmp/hard/$t --include-ignored $extra >/tmp/one.txt 2>&1 || status=1
  cat /tmp/one.txt >>"$out/tests.txt"
  echo "== $t ($(( $(date +%s) - start )) s)"
  grep -E "^test result|FAILED|panicked|leak in" /tmp/one.txt | head -12
done
grep -h "^churn on .*after" "$out/tests.txt" | head -20
cs=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer --tool $tool: cuda variants"
  for t in $SANITIZED; do
    echo "==== $tool $t" >>"$out/sanitizer.txt"
    timeout 240 "$cs" --tool "$tool" --report-api-errors no --error-exitcode 7 \
      /tmp/hard/$t --include-ignored --skip ::torch --skip ::vulkan --test-threads 1 \
      >/tmp/one.txt 2>&1
    code=$?
    cat /tmp/one.txt >>"$out/sanitizer.txt"
    [ $code = 0 ] || status=1
    echo "$t: exit $code ; $(grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY)' /tmp/one.txt | tail -1) ; $(grep -E '^test result' /tmp/one.txt | tail -1)"
  done
done
exit $status
