"""torch's and CuPy's copies between ordinary (pageable) host memory and the
GPU at the sizes `unigpu bench --only transfer` uses (1, 16, 64, 256 MiB of
f32): issue 29, item 3. Prints `name value` lines (GB/s, medians of 15
after one warm-up) that crates/cli/src/bench/anchors.rs pairs with ours:

  torch_h2d_pageable_{N}MiB_GBps   d.copy_(host) into an existing tensor
  torch_d2h_pageable_{N}MiB_GBps   host.copy_(d) into an existing tensor
  torch_d2h_cpu_{N}MiB_GBps        d.cpu(): a new host tensor
  cupy_h2d_pageable_{N}MiB_GBps    d.set(host) into an existing array
  cupy_d2h_pageable_{N}MiB_GBps    d.get(out=host) into an existing array
  cupy_d2h_asnumpy_{N}MiB_GBps     cupy.asnumpy(d): a new numpy array

Each copy is waited for (torch.cuda.synchronize / the stream's).
"""
import statistics
import time

import numpy as np
import torch


def out(name, v):
    print(f"{name} {v:.3f}", flush=True)


def rate(nbytes, f, reps=15):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return nbytes / statistics.median(ts) / 1e9


SIZES = (1, 16, 64, 256)
dev = torch.device("cuda:0")
print(f"device {torch.cuda.get_device_name(0).replace(' ', '_')}", flush=True)
for mib in SIZES:
    n = mib << 18  # f32 elements
    host = torch.arange(n, dtype=torch.float32) % 1000
    back = torch.empty_like(host)
    d = torch.empty(n, dtype=torch.float32, device=dev)

    def h2d():
        d.copy_(host)
        torch.cuda.synchronize()

    def d2h():
        back.copy_(d)
        torch.cuda.synchronize()

    def d2h_cpu():
        d.cpu()
        torch.cuda.synchronize()

    out(f"torch_h2d_pageable_{mib}MiB_GBps", rate(4 * n, h2d))
    out(f"torch_d2h_pageable_{mib}MiB_GBps", rate(4 * n, d2h))
    out(f"torch_d2h_cpu_{mib}MiB_GBps", rate(4 * n, d2h_cpu))
    assert torch.equal(back, host)
    del d

try:
    import cupy as cp

    for mib in SIZES:
        n = mib << 18
        host = np.arange(n, dtype=np.float32) % 1000
        back = np.empty_like(host)
        d = cp.empty(n, dtype=cp.float32)

        def h2d():
            d.set(host)
            cp.cuda.get_current_stream().synchronize()

        def d2h():
            d.get(out=back)
            cp.cuda.get_current_stream().synchronize()

        def asnumpy():
            cp.asnumpy(d)

        out(f"cupy_h2d_pageable_{mib}MiB_GBps", rate(4 * n, h2d))
        out(f"cupy_d2h_pageable_{mib}MiB_GBps", rate(4 * n, d2h))
        out(f"cupy_d2h_asnumpy_{mib}MiB_GBps", rate(4 * n, asnumpy))
        assert np.array_equal(back, host)
        del d
except ImportError as ex:
    print(f"cupy_error {ex!r}", flush=True)
