#!/usr/bin/env bash
# On the GPU machine, one call: the precompiled, kernels, ops and shapes
# test binaries (cuda and vulkan variants; the fatbin fixture is built into
# them), tests/vulkan.rs, and `unigpu bench`'s vulkan group beside cuda. Pack here:
#   cargo test --release -p unigpu --test precompiled --test kernels --test ops --test shapes --test vulkan --no-run
#   cargo build --release -p unigpu-cli
#   bash tests/gpu/kernels_vulkan_gpu_run.sh --pack     # .gpu-pack/kv.tar.gz
# then run(command="bash tests/gpu/kernels_vulkan_gpu_run.sh",
#          carry=[".gpu-pack/kv.tar.gz", ".gl"])
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --pack ]; then
  rm -rf /tmp/kv && mkdir -p /tmp/kv
  for t in precompiled kernels ops shapes vulkan; do
    exe=$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)
    cp "$exe" /tmp/kv/$t
  done
  cp target/release/unigpu /tmp/kv/unigpu
  tar czf .gpu-pack/kv.tar.gz -C /tmp kv
  ls -l .gpu-pack/kv.tar.gz
  exit 0
fi
out=${OUT:-/tmp}
mkdir -p /tmp/kv && tar xzf .gpu-pack/kv.tar.gz -C /tmp
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
status=0
for t in precompiled kernels ops shapes; do
  echo "== $t (cuda and vulkan variants)"
  /tmp/kv/$t --include-ignored --skip ::torch >"$out/$t.txt" 2>&1 || status=1
  grep -E "^test result|FAILED|panicked" "$out/$t.txt" | head -20
done
echo "== vulkan (tests/vulkan.rs, every test)"
/tmp/kv/vulkan --include-ignored >"$out/vulkan.txt" 2>&1 || status=1
grep -E "^test result|FAILED|panicked" "$out/vulkan.txt" | head -20
echo "== unigpu bench: vulkan beside cuda"
/tmp/kv/unigpu bench --backend cuda --only ${ONLY:-axpy,matmul_f32,transfer,vulkan_axpy,vulkan_matmul_f32,vulkan_dispatch,vulkan_transfer} \
  >"$out/vulkan-bench.md" 2>"$out/vulkan-bench.err" || status=1
cat "$out/vulkan-bench.md"
exit $status
