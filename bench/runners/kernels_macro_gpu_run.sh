#!/usr/bin/env bash
# On the GPU machine, one call: `unigpu bench`'s #[unigpu::kernel] cases
# (the `kernels` group and the macro's first launch from the disk cache)
# on cuda, then on vulkan (NVIDIA's driver), then on torch when the binary
# has it; each figure beside its anchor from the same process. Pack here:
#   cargo build --release -p unigpu-cli
#   bash bench/runners/kernels_macro_gpu_run.sh --pack     # .gpu-pack/km.tar.gz
# then run(command="bash bench/runners/kernels_macro_gpu_run.sh",
#          carry=[".gpu-pack/km.tar.gz", ".gl"])   # .gl: docs/vulkan.md
# or, after `cargo xtask gpu-pack` and its run.sh on the same call:
#   UNIGPU_BIN=.gpu-pack/bin/unigpu bash bench/runners/kernels_macro_gpu_run.sh
# Tables land in $OUT/kernels-{cuda,vulkan,torch}.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --pack ]; then
  rm -rf /tmp/km && mkdir -p /tmp/km .gpu-pack
  cp target/release/unigpu /tmp/km/unigpu
  tar czf .gpu-pack/km.tar.gz -C /tmp km
  ls -l .gpu-pack/km.tar.gz
  exit 0
fi
out=${OUT:-/tmp}
# UNIGPU_BIN: a unigpu binary already on the machine (the GPU pack's
# .gpu-pack/bin/unigpu, unpacked by its run.sh); else km.tar.gz's.
bin=${UNIGPU_BIN:-/tmp/km/unigpu}
[ -n "${UNIGPU_BIN:-}" ] || { mkdir -p /tmp/km && tar xzf .gpu-pack/km.tar.gz -C /tmp; }
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
kernels=kernel_saxpy,kernel_sum,kernel_matmul
# A fresh disk cache: `compile` and `compile_macro` compile cold, and the
# `_disk` cases' new processes are served from it.
export UNIGPU_CACHE_DIR="$(mktemp -d)"
status=0
for b in cuda vulkan torch; do
  only=$kernels
  [ "$b" = cuda ] && only=compile,compile_disk,compile_macro,compile_macro_disk,$kernels
  echo "== unigpu bench --backend $b --only $only"
  if "$bin" bench --backend "$b" --only "$only" --quiet \
      --md "$out/kernels-$b.md" >/dev/null 2>"$out/kernels-$b.err"; then
    cat "$out/kernels-$b.md"
  else
    # torch needs a binary built with the feature; say so, do not fail.
    echo "($b: $(tail -1 "$out/kernels-$b.err"))"
    [ "$b" = torch ] || status=1
  fi
done
exit $status
