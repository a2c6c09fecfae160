#!/usr/bin/env bash
# On the GPU machine, one call: the facade's test binaries built with the
# torch feature (every ::cuda, ::torch and ::vulkan variant, under the leak
# guard of tests/common/mod.rs), then compute-sanitizer's memcheck,
# racecheck and synccheck over the cuda variants of the kernel tests.
# Pack here (release, torch feature; LIBTORCH_USE_PYTORCH=1 with
# .venv-torch on PATH):
#   cargo test --release -p unigpu --features torch --test churn --test kernels \
#     --test precompiled --test kernel_fault --test allocator --test arrays \
#     --test ops --test streams --test graphs --no-run
#   bash bench/hardening_gpu_run.sh --pack      # .gpu-pack/hard.tar.gz
# then run(command="bash bench/hardening_gpu_run.sh",
#          carry=[".gpu-pack/hard.tar.gz", ".gl"])
set -uo pipefail
cd "$(dirname "$0")/.."
TESTS="churn kernels precompiled kernel_fault allocator arrays ops streams graphs"
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
  timeout 300 /tmp/hard/$t --include-ignored $extra >"$out/$t.txt" 2>&1 || status=1
  echo "== $t ($(( $(date +%s) - start )) s)"
  grep -E "^test result|FAILED|panicked|leak in" "$out/$t.txt" | head -12
done
grep -h "^churn on .*after" "$out/churn.txt" | head -20
cs=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer --tool $tool: kernels and precompiled, cuda variants"
  for t in kernels precompiled; do
    timeout 240 "$cs" --tool "$tool" --error-exitcode 7 \
      /tmp/hard/$t --include-ignored --skip ::torch --skip ::vulkan --test-threads 1 \
      >"$out/cs-$tool-$t.txt" 2>&1
    echo "$t: exit $? ; $(grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY)' "$out/cs-$tool-$t.txt" | tail -1) ; $(grep -E '^test result' "$out/cs-$tool-$t.txt" | tail -1)"
  done
done
exit $status
