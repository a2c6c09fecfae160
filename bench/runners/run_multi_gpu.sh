#!/usr/bin/env bash
# The multi-GPU run (issue 14), for the nvidia-h200-x2 kind (any count of
# two or more GPUs): the two-GPU tests, the one-process-per-GPU tests
# (rendezvous over loopback TCP and a temp file, a dying and a missing
# rank), the data-parallel example on 1..N GPUs, peer-copy GB/s both ways
# (direct, then staged through pinned memory), and all-reduce bus
# bandwidth 1 MiB..1 GiB for unigpu and for torch.distributed (NCCL), in
# one call, unigpu's both with one process driving every GPU and with one
# process a GPU; training an MLP with 25 MiB gradient buckets beside
# torch's DDP. Writes multi_gpu.txt (every line) and ratios.txt under $OUT.
# Needs `cargo xtask gpu-pack` first (.gpu-pack/bin), or the smaller pack
# of just these binaries (.gpu-pack/mg.tar.gz, carry it alone):
#   cargo test --release -p unigpu --test multi_gpu --test multi_process \
#     --test rendezvous --test missing_libnccl --no-run
#   cargo test --release -p unigpu-cuda-safe --test multi_gpu --test no_nccl --no-run
#   cargo build --release -p unigpu --example 12_data_parallel --example multi_gpu_bench
#   (with torch's venv on PATH and LIBTORCH_USE_PYTORCH=1, for collectives
#   on torch contexts:)
#   cargo test --release -p unigpu --features torch --test multi_gpu_torch --no-run
#   bash bench/runners/run_multi_gpu.sh --pack
set -u
if [ "${1:-}" = --pack ]; then
  cd "$(dirname "$0")/../.." && rm -rf /tmp/mg && mkdir -p /tmp/mg/bin || exit 1
  # name:count: the newest builds of that test (multi_gpu: the facade's
  # and cuda-safe's, just built)
  for t in multi_gpu:2 multi_process:1 rendezvous:1 missing_libnccl:1 no_nccl:1 multi_gpu_torch:1; do
    for exe in $(ls -t target/release/deps/${t%:*}-* 2>/dev/null | grep -v '\.d$' | head -"${t#*:}"); do cp "$exe" /tmp/mg/bin/; done
  done
  cp target/release/examples/12_data_parallel target/release/examples/multi_gpu_bench /tmp/mg/bin/
  mkdir -p .gpu-pack && tar czf .gpu-pack/mg.tar.gz -C /tmp/mg bin && ls -l .gpu-pack/mg.tar.gz
  exit 0
fi
# NVLink multicast stays off in every process started from here: it can
# take the shared host's GPUs out of service. Nothing here calls
# cuMulticastCreate.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
out="${OUT:-/tmp/unigpu-multi-gpu}"; mkdir -p "$out"
log="$out/multi_gpu.txt"; : >"$log"
bin="$root/.gpu-pack/bin"
if [ -f "$root/.gpu-pack/mg.tar.gz" ]; then bin=/tmp/mg/bin; mkdir -p /tmp/mg; tar xzf "$root/.gpu-pack/mg.tar.gz" -C /tmp/mg
else [ -d "$bin" ] || tar xzf "$root/.gpu-pack/bin.tar.gz" -C "$root/.gpu-pack"; fi
site=/opt/torch/.venv/lib/python3.12/site-packages
nccl=$(find "$site/nvidia" -name 'libnccl.so*' 2>/dev/null | head -n 1)
if [ -z "$nccl" ]; then echo "no libnccl.so* under $site/nvidia" | tee -a "$log"; exit 1; fi
export LD_LIBRARY_PATH="$(dirname "$nccl"):$site/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
echo "libnccl: $nccl" | tee -a "$log"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee -a "$log"
nvidia-smi topo -m 2>&1 | tee -a "$log"
failed=0
step() { echo "=== $*" | tee -a "$log"; "$@" >>"$log" 2>&1; rc=$?; tail -n 3 "$log"; [ $rc -eq 0 ] || { echo "FAILED (exit $rc): $*" | tee -a "$log"; failed=1; }; }

# The tests: every binary that has multi-GPU or NCCL tests, ignored ones
# included, with no test filter beyond the binary (each binary's other
# GPU tests run too: they need one GPU, which this machine has).
for t in "$bin"/multi_gpu-* "$bin"/multi_gpu_torch-* "$bin"/multi_process-* "$bin"/rendezvous-* "$bin"/missing_libnccl-* "$bin"/no_nccl-*; do
  [ -x "$t" ] || continue
  step "$t" --include-ignored --test-threads=1
done

# Collectives on torch contexts again with NCCL connecting at init (the
# variable a torch user sets; torch loads NCCL first, so unigpu cannot):
# blocking collectives on c10 streams.
for t in "$bin"/multi_gpu_torch-*; do
  [ -x "$t" ] || continue
  step env NCCL_RUNTIME_CONNECT=0 "$t" --include-ignored --test-threads=1 --nocapture
done

# Data parallel: 1..N GPUs in one run; each k checked against the host.
step "$bin/12_data_parallel" 64 16

# Training with 25 MiB gradient buckets on 1..N GPUs, unigpu then torch's
# DDP on the same model and data sizes.
step "$bin/12_data_parallel" ddp 20
step python3 "$root/bench/anchors/torch_ddp.py" 20

# Peer copies and all-reduce bus bandwidth, unigpu then torch.
step "$bin/multi_gpu_bench" 1024
UNIGPU_PEER_ACCESS=0 "$bin/multi_gpu_bench" 0 2>&1 | sed -n 's/^peer_copy_/staged_copy_/p' | tee -a "$log"
# The all-reduce again with one process a GPU (Communicator::join over
# loopback TCP), as torch.distributed runs: rank 0 prints allreduce_join_*.
join_bench() {
  local n port pids=() r rc=0
  n=$(nvidia-smi -L | wc -l); port=$((20000 + RANDOM % 20000))
  for r in $(seq 0 $((n - 1))); do
    UNIGPU_RENDEZVOUS=tcp://127.0.0.1:$port UNIGPU_WORLD_SIZE=$n UNIGPU_RANK=$r "$bin/multi_gpu_bench" 1024 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  return $rc
}
step join_bench
step python3 "$root/bench/anchors/torch_allreduce.py" 1024

python3 - "$log" <<'PY' | tee "$out/ratios.txt"
import re, sys
vals = {}
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+) ([0-9.]+)$", line.strip())
    if m:
        vals[m.group(1)] = float(m.group(2))
keys = ("allreduce_busbw_gbps_", "allreduce_host_us_", "allreduce_join_busbw_gbps_", "allreduce_join_host_us_", "peer_copy_", "ddp_")
for key in sorted(k for k in vals if k.startswith(keys)):
    # One process a GPU is compared with the same torch figure.
    anchor = vals.get("torch_" + key.replace("allreduce_join_", "allreduce_"))
    if anchor:
        print(f"{key} {vals[key]:.1f} torch {anchor:.1f} ratio {vals[key] / anchor:.3f}")
    else:
        print(f"{key} {vals[key]:.1f} (no torch figure)")
PY
[ $failed -eq 0 ] && echo "multi-GPU run: every step exited 0" || echo "multi-GPU run: FAILED (a step above exited non-zero)"
exit $failed
