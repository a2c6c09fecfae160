#!/usr/bin/env bash
# On the GPU machine, one call: the facade's test binaries built with the
# torch feature (every ::cuda, ::torch and ::vulkan variant, under the leak
# guard of tests/common/mod.rs), then compute-sanitizer's memcheck,
# racecheck and synccheck over the cuda variants of some of them. API
# errors are not reported: those tests make the driver refuse calls on
# purpose (a missing kernel, an image for another GPU).
# Pack here: `bash tests/gpu/hardening_gpu_run.sh --pack` builds (release; the
# facade with the torch feature, so LIBTORCH_USE_PYTORCH=1 with .venv-torch
# on PATH, which the script sets) every binary of $TESTS and $EXTRA into
# .gpu-pack/hard.tar.xz; then
#   run(command="bash tests/gpu/hardening_gpu_run.sh",
#       carry=[".gpu-pack/hard.tar.xz", ".gl"])
# TESTS: the facade's test binaries (each under the leak guard of
# tests/common/mod.rs); EXTRA: safe_gpu (cuda-safe's tests/gpu.rs) and
# rt_gpu (cuda-rt's, direct CUDA runtime tier: needs .venv-cuda, see
# .ci/gen-tests.sh); SANITIZED: which facade binaries compute-sanitizer runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
TESTS=${TESTS:-"churn kernels precompiled kernel_fault out_of_memory allocator arrays ops streams graphs"}
EXTRA=${EXTRA:-}
SANITIZED=${SANITIZED:-"kernels precompiled arrays graphs"}
# cargo's own list of the test executables it built: `<alias> <path>` lines.
executables() {
  python3 -c '
import json, sys
alias = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(alias or m["target"]["name"], m["executable"])
' "$1"
}
if [ "${1:-}" = --pack ]; then
  rm -rf /tmp/hard && mkdir -p /tmp/hard
  args=(); for t in $TESTS; do args+=(--test "$t"); done
  { PATH=$PWD/.venv-torch/bin:$PATH LIBTORCH_USE_PYTORCH=1 cargo test --release -q -p unigpu \
      --features torch "${args[@]}" --no-run --message-format=json | executables ""
    for e in $EXTRA; do
      case $e in
        safe_gpu) cargo test --release -q -p unigpu-cuda-safe --test gpu --no-run --message-format=json | executables safe_gpu ;;
        rt_gpu) UNIGPU_CUDA_HOME=${UNIGPU_CUDA_HOME:-$PWD/.venv-cuda/lib/python3.11/site-packages/nvidia/cu13} \
          cargo test --release -q -p unigpu-cuda-rt --features cuda --test gpu --no-run --message-format=json | executables rt_gpu ;;
        *) echo "unknown EXTRA binary: $e" >&2; exit 1 ;;
      esac
    done
  } | while read -r alias path; do cp "$path" "/tmp/hard/$alias"; done
  # xz: gzip leaves 20 binaries at 66 MB, over what a call may carry (64 MiB)
  rm -f .gpu-pack/hard.tar.gz
  tar cf - -C /tmp hard | xz -T0 -6 >.gpu-pack/hard.tar.xz
  ls -l .gpu-pack/hard.tar.xz; ls /tmp/hard
  exit 0
fi
out=${OUT:-/tmp}
tar xJf .gpu-pack/hard.tar.xz -C /tmp
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
status=0
for t in $TESTS $EXTRA; do
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
