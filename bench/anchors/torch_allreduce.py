"""torch.distributed's NCCL all-reduce and torch's peer copy: the anchors
for crates/unigpu/examples/multi_gpu_bench.rs, printed as `key value`
lines with the same sizes and formulas:

- torch_peer_copy_<a>_to_<b>_gbps: x.copy_(y) between GPUs, 256 MiB,
  median of 10;
- torch_allreduce_busbw_gbps_<MiB>mib (and _algbw_): dist.all_reduce of
  f32 (sum, in place), one process per GPU (torch.multiprocessing), 1 MiB
  to MAX_MiB, median of per-call CUDA-event times on rank 0, bus bandwidth
  as nccl-tests computes it (algbw * 2(n-1)/n).

    python3 bench/anchors/torch_allreduce.py [MAX_MiB]

Run with NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 in the
environment (bench/runners/run_multi_gpu.sh exports them; the children inherit).
"""

import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import dist_ranks


def peer_copies():
    n = (256 << 20) // 4
    count = torch.cuda.device_count()
    for a in range(count):
        for b in range(count):
            if a == b:
                continue
            src = torch.ones(n, device=f"cuda:{a}")
            dst = torch.empty(n, device=f"cuda:{b}")
            dst.copy_(src)
            torch.cuda.synchronize(a)
            torch.cuda.synchronize(b)
            times = []
            for _ in range(10):
                torch.cuda.synchronize(a)
                t = time.perf_counter()
                dst.copy_(src)
                torch.cuda.synchronize(b)
                torch.cuda.synchronize(a)
                times.append(time.perf_counter() - t)
            gbps = (n * 4) / statistics.median(times) / 1e9
            print(f"torch_peer_copy_{a}_to_{b}_gbps {gbps:.1f}", flush=True)


def rank_main(rank, world, port, max_mib):
    dist_ranks.init(rank, world, port)
    kib = 256
    while kib <= max_mib << 10:
        size = f"{kib >> 10}mib" if kib >= 1024 else f"{kib}kib"
        x = torch.ones((kib << 10) // 4, device=f"cuda:{rank}")
        iters = 10 if kib >= 256 << 10 else 30
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        marks[0].record()
        host = []
        for i in range(iters):
            t = time.perf_counter()
            dist.all_reduce(x)
            host.append(time.perf_counter() - t)
            marks[i + 1].record()
        torch.cuda.synchronize()
        times = [marks[i].elapsed_time(marks[i + 1]) / 1e3 for i in range(iters)]
        algbw = (kib << 10) / statistics.median(times) / 1e9
        if rank == 0:
            print(f"torch_allreduce_algbw_gbps_{size} {algbw:.1f}", flush=True)
            busbw = algbw * 2 * (world - 1) / world
            print(f"torch_allreduce_busbw_gbps_{size} {busbw:.1f}", flush=True)
            print(f"torch_allreduce_host_us_{size} {statistics.median(host) * 1e6:.1f}", flush=True)
        kib *= 2
    dist.destroy_process_group()


def main():
    for var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"):
        wanted = "0" if var == "NCCL_NVLS_ENABLE" else "1"
        if os.environ.get(var) != wanted:
            sys.exit(f"set {var}={wanted} first (NVLink multicast must stay off)")
    max_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    world = torch.cuda.device_count()
    if world < 2:
        sys.exit(f"torch_allreduce.py needs two GPUs, found {world}")
    print(f"torch {torch.__version__} nccl {'.'.join(map(str, torch.cuda.nccl.version()))}")
    peer_copies()
    dist_ranks.spawn(rank_main, world, (max_mib,))

if __name__ == "__main__":
    main()
