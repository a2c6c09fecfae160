"""The numpy side of bench/runners/run_cpu.sh: the same ops, sizes and inputs as
`unigpu bench --cpu-ops-only`, printed as `numpy_cpu_<op>_<size>_ms` lines
(median wall time of 30 calls after 3 warm-up calls, float32; `unigpu bench
--numpy --reps N` runs this script with UNIGPU_BENCH_REPS=N)."""
import os
import time

import numpy as np

REPS = int(os.environ.get("UNIGPU_BENCH_REPS", 30))  # crates/cli/src/bench/ops_cpu.rs: CPU_REPS
N = 4 << 20


def median_ms(f):
    for _ in range(3):
        f()
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


def wave(k):
    # ops_cpu.rs's inputs: ((i * k) % 2001) * 1e-3 - 1, in f32.
    i = np.arange(N, dtype=np.int64)
    return (((i * k) % 2001).astype(np.float32) * np.float32(1e-3) - np.float32(1.0)).astype(np.float32)


def out(key, ms):
    print(f"numpy_cpu_{key}_ms {ms:.4f}", flush=True)


a, b = wave(7919), wave(104_729)
y = np.empty_like(a)
out("relu_4Mi", median_ms(lambda: np.maximum(a, 0, out=y)))
out("add_4Mi", median_ms(lambda: np.add(a, b, out=y)))


def sigmoid():
    # 1 / (1 + exp(-x)) with no temporaries, as unigpu writes into y.
    np.negative(a, out=y)
    np.exp(y, out=y)
    np.add(y, 1, out=y)
    np.reciprocal(y, out=y)


out("sigmoid_4Mi", median_ms(sigmoid))
out("sum_4Mi", median_ms(lambda: a.sum()))
out("max_4Mi", median_ms(lambda: a.max()))
out("dot_4Mi", median_ms(lambda: np.dot(a, b)))
for n in (512, 1024):
    ma, mb = a[: n * n].reshape(n, n), b[: n * n].reshape(n, n)
    c = np.empty((n, n), dtype=np.float32)
    out(f"matmul_{n}", median_ms(lambda: np.matmul(ma, mb, out=c)))
print(f"numpy_version {np.__version__}")
