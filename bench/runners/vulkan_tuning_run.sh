#!/usr/bin/env bash
# On the GPU machine: the vulkan tuning probe (crates/cli/examples/
# vulkan_tuning.rs) beside the cuda backend, in one process. Built here
# with `cargo build --release -p unigpu-cli --example vulkan_tuning`, then
#   run(command="bash bench/runners/vulkan_tuning_run.sh",
#       carry=["target/release/examples/vulkan_tuning", ".gl"])
# The Vulkan loader comes from .gl's .debs (docs/vulkan.md says how to make
# them); NVIDIA's driver is named explicitly, lavapipe is not there.
set -uo pipefail
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv" ] && export VK_DRIVER_FILES="$nv"
export NODEVICE_SELECT=1 UNIGPU_BACKEND=cuda
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
out=${OUT:-/tmp}/vulkan-tuning.txt
target/release/examples/vulkan_tuning "$@" 2>&1 | tee "$out"
