"""torch's DistributedDataParallel on the model and data sizes of
`12_data_parallel ddp` (crates/unigpu/examples/12_data_parallel/buckets.rs):
LAYERS square bias-free Linear layers of WIDTH, ReLU between, loss
0.5 * ||y - t||^2 / BATCH, SGD, BATCH rows a GPU (weak scaling), DDP's
25 MiB buckets (bucket_cap_mb=25, its default). One process per GPU
(torch.multiprocessing), k = 1..N GPUs; rank 0 prints, as `key value`
lines with the example's names:

- torch_ddp_step_ms_<k>gpu: the mean wall time of a step over STEPS
  steps after 3 untimed ones (CUDA synchronized at both ends);
- torch_ddp_speedup_<k>gpu: k GPUs' samples a second over one GPU's.

    python3 bench/anchors/torch_ddp.py [STEPS] [GPUS]

Run with NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 in the
environment (bench/runners/run_multi_gpu.sh exports them).
"""

import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

import dist_ranks

WIDTH = 2048
LAYERS = 8
BATCH = 4096
LR = 1e-3


def model():
    layers = []
    for l in range(LAYERS):
        layers.append(torch.nn.Linear(WIDTH, WIDTH, bias=False))
        if l + 1 < LAYERS:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def rank_main(rank, world, port, steps, out):
    dist_ranks.init(rank, world, port)
    torch.manual_seed(2026)  # the same initial weights on every rank
    net = DDP(model().cuda(rank), device_ids=[rank], bucket_cap_mb=25)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    g = torch.Generator(device=f"cuda:{rank}").manual_seed(1000 + rank)
    x = torch.randn(BATCH, WIDTH, device=f"cuda:{rank}", generator=g)
    t = torch.randn(BATCH, WIDTH, device=f"cuda:{rank}", generator=g)

    def step():
        opt.zero_grad(set_to_none=False)
        y = net(x)
        loss = 0.5 * ((y - t) ** 2).sum() / BATCH
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - start) * 1e3 / steps
    if rank == 0:
        out.put(ms)
    dist.destroy_process_group()


def run(world, steps):
    out = mp.get_context("spawn").SimpleQueue()
    dist_ranks.spawn(rank_main, world, (steps, out))
    return out.get()


def main():
    for var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"):
        wanted = "0" if var == "NCCL_NVLS_ENABLE" else "1"
        if os.environ.get(var) != wanted:
            sys.exit(f"set {var}={wanted} first (NVLink multicast must stay off)")
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    gpus = min(int(sys.argv[2]) if len(sys.argv) > 2 else 99, torch.cuda.device_count())
    if gpus < 1:
        sys.exit("torch_ddp.py needs a CUDA GPU")
    print(f"torch {torch.__version__} nccl {'.'.join(map(str, torch.cuda.nccl.version()))}")
    print(f"tf32 matmul: {torch.backends.cuda.matmul.allow_tf32}")
    base = None
    for k in range(1, gpus + 1):
        ms = run(k, steps)
        base = base or ms
        print(f"torch_ddp_step_ms_{k}gpu {ms:.2f}", flush=True)
        print(f"torch_ddp_speedup_{k}gpu {k * base / ms:.3f}", flush=True)


if __name__ == "__main__":
    main()
