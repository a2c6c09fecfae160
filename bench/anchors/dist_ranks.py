"""What the torch.distributed anchors share (torch_allreduce.py,
torch_ddp.py): one process per GPU over loopback TCP.

- init(rank, world, port): the process group of rank `rank` (NCCL, GPU
  `rank`);
- spawn(fn, world, args): runs fn(rank, world, port, *args) in `world`
  processes, on a free port, trying another when the port was taken
  between the probe and rank 0's listen (three tries).
"""

import sys
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def init(rank, world, port):
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        device_id=torch.device(f"cuda:{rank}"),
    )


def spawn(fn, world, args):
    for attempt in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            mp.spawn(fn, args=(world, port, *args), nprocs=world, join=True)
            return
        except mp.ProcessRaisedException as e:
            if "EADDRINUSE" not in str(e) or attempt == 2:
                raise
            print(f"port {port} was taken; trying another", file=sys.stderr, flush=True)
