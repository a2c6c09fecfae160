"""torch's numbers for the same axpy and matmul sizes `unigpu bench` uses."""
import torch

dev = "cuda"


def out(k, v):
    print(f"{k} {v}", flush=True)


def timed(fn, reps):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps


n = 1 << 26
x = torch.rand(n, device=dev)
y = torch.zeros(n, device=dev)
y.add_(x, alpha=2.0)
torch.cuda.synchronize()
ms = timed(lambda: y.add_(x, alpha=2.0), 20)
out("torch_axpy_f32_ms", f"{ms:.4f}")
out("torch_axpy_f32_GBps", f"{3 * 4 * n / (ms * 1e-3) / 1e9:.1f}")

# A GPU-to-GPU copy of 256 MiB into a new tensor, as `to_context` does
# (allocation from the warm caching allocator included).
import time

src = torch.zeros(64 << 20, device=dev)
best = float("inf")
for _ in range(5):
    torch.cuda.synchronize()
    t = time.perf_counter()
    dst = src.clone()
    torch.cuda.synchronize()
    best = min(best, time.perf_counter() - t)
    del dst
out("torch_clone_256MiB_GBps", f"{2 * 256 * (1 << 20) / best / 1e9:.1f}")

assert not torch.backends.cuda.matmul.allow_tf32, "compare plain fp32 with plain fp32"
for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
    m = 4096
    a = (torch.rand(m, m, device=dev) - 0.5).to(dtype)
    b = (torch.rand(m, m, device=dev) - 0.5).to(dtype)
    c = torch.empty(m, m, device=dev, dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    ms = timed(lambda: torch.matmul(a, b, out=c), 10)
    out(f"torch_matmul_{name}_ms", f"{ms:.4f}")
    out(f"torch_matmul_{name}_TFLOPs", f"{2 * m**3 / (ms * 1e-3) / 1e12:.2f}")

# Batched: 32 products of 512^3, as the bmm case of `unigpu bench`.
for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
    g, m = 32, 512
    a = (torch.rand(g, m, m, device=dev) - 0.5).to(dtype)
    b = (torch.rand(g, m, m, device=dev) - 0.5).to(dtype)
    c = torch.empty(g, m, m, device=dev, dtype=dtype)
    for _ in range(3):
        torch.bmm(a, b, out=c)
    ms = timed(lambda: torch.bmm(a, b, out=c), 10)
    out(f"torch_bmm_{name}_ms", f"{ms:.4f}")
    out(f"torch_bmm_{name}_TFLOPs", f"{2 * g * m**3 / (ms * 1e-3) / 1e12:.2f}")

# CuPy's compile cache: the same source again (CuPy keeps compiled modules
# in memory, keyed by source and options), and a new source each time.
import statistics
import time

import cupy as cp

src = r'extern "C" __global__ void bench_saxpy(float a, const float* x, float* y, unsigned int n) { unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }'
cp.RawModule(code=src).get_function("bench_saxpy")
ts = []
for _ in range(1000):
    t = time.perf_counter()
    cp.RawModule(code=src).get_function("bench_saxpy")
    ts.append(time.perf_counter() - t)
out("cupy_compile_cached_ms_median", f"{statistics.median(ts) * 1e3:.5f}")
