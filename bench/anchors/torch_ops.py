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

# Issue 28's ops (crates/cli/src/bench/array_ops.rs): the same op at the
# same size, f32, 2^24 elements in [0.5, 1.5), timed as above; GB/s of the
# bytes the op must move (read and written once each).
import torch.nn.functional as F

n = 1 << 24
i = torch.arange(n, device=dev, dtype=torch.int64)
a = 0.5 + ((i * 7919) % 2001).float() * 5e-4
b = 0.5 + ((i * 104729) % 2001).float() * 5e-4
del i
y = torch.empty_like(a)
mask = torch.empty(n, device=dev, dtype=torch.bool)
ra, ry = a.view(-1, 1024), y.view(-1, 1024)
unary, binary = 8, 12
ops = [
    ("neg", unary, lambda: torch.neg(a, out=y)),
    ("abs", unary, lambda: torch.abs(a, out=y)),
    ("floor", unary, lambda: torch.floor(a, out=y)),
    ("ceil", unary, lambda: torch.ceil(a, out=y)),
    ("round", unary, lambda: torch.round(a, out=y)),
    ("clamp", unary, lambda: torch.clamp(a, 0.75, 1.25, out=y)),
    ("exp", unary, lambda: torch.exp(a, out=y)),
    ("log", unary, lambda: torch.log(a, out=y)),
    ("sqrt", unary, lambda: torch.sqrt(a, out=y)),
    ("rsqrt", unary, lambda: torch.rsqrt(a, out=y)),
    ("sin", unary, lambda: torch.sin(a, out=y)),
    ("cos", unary, lambda: torch.cos(a, out=y)),
    ("tanh", unary, lambda: torch.tanh(a, out=y)),
    ("sigmoid", unary, lambda: torch.sigmoid(a, out=y)),
    ("relu", unary, lambda: torch.clamp_min(a, 0.0, out=y)),
    # No out= for these two: torch's caching allocator makes the result.
    ("gelu", unary, lambda: F.gelu(a, approximate="tanh")),
    ("silu", unary, lambda: F.silu(a)),
    ("pow_scalar", unary, lambda: torch.pow(a, 2.5, out=y)),
    ("add", binary, lambda: torch.add(a, b, out=y)),
    ("sub", binary, lambda: torch.sub(a, b, out=y)),
    ("mul", binary, lambda: torch.mul(a, b, out=y)),
    ("div", binary, lambda: torch.div(a, b, out=y)),
    ("minimum", binary, lambda: torch.minimum(a, b, out=y)),
    ("maximum", binary, lambda: torch.maximum(a, b, out=y)),
    ("pow", binary, lambda: torch.pow(a, b, out=y)),
    ("lt", 9, lambda: torch.lt(a, b, out=mask)),
    ("where", 13, lambda: torch.where(mask, a, b, out=y)),
    ("sum_rows", 4, lambda: ra.sum(dim=1)),
    ("mean_rows", 4, lambda: ra.mean(dim=1)),
    ("max_rows", 4, lambda: ra.amax(dim=1)),
    ("argmax_rows", 4, lambda: ra.argmax(dim=1)),
    ("softmax_rows", unary, lambda: torch.softmax(ra, dim=1)),
    ("log_softmax_rows", unary, lambda: torch.log_softmax(ra, dim=1)),
    ("randn", 4, lambda: y.normal_()),
]
for name, bytes_per, fn in ops:
    fn()
    torch.cuda.synchronize()
    ms = timed(fn, 20)
    out(f"torch_op_{name}_f32_GBps", f"{bytes_per * n / (ms * 1e-3) / 1e9:.1f}")
