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

# Issue 28's ops (crates/cli/src/bench/array_ops.rs on the CPU backend):
# inputs in [0.5, 1.5), `numpy_cpu_op_<op>_ms`. Where numpy has no one
# function (rsqrt, sigmoid, gelu, silu, softmax) it is composed in place,
# without temporaries where numpy allows, as a numpy user would write it.
i = np.arange(N, dtype=np.int64)
a = (0.5 + ((i * 7919) % 2001).astype(np.float32) * np.float32(5e-4)).astype(np.float32)
b = (0.5 + ((i * 104_729) % 2001).astype(np.float32) * np.float32(5e-4)).astype(np.float32)
y = np.empty_like(a)
mask = np.less(a, b)
ra, ry = a.reshape(-1, 1024), y.reshape(-1, 1024)


def op_out(key, f):
    print(f"numpy_cpu_op_{key}_ms {median_ms(f):.4f}", flush=True)


def rsqrt():
    np.sqrt(a, out=y)
    np.reciprocal(y, out=y)


def sigmoid_op():
    np.negative(a, out=y)
    np.exp(y, out=y)
    np.add(y, 1, out=y)
    np.reciprocal(y, out=y)


def gelu():
    # 0.5 a (1 + tanh(0.79788456 (a + 0.044715 a^3)))
    np.multiply(a, a, out=y)
    np.multiply(y, a, out=y)
    np.multiply(y, np.float32(0.044715), out=y)
    np.add(y, a, out=y)
    np.multiply(y, np.float32(0.7978845608), out=y)
    np.tanh(y, out=y)
    np.add(y, 1, out=y)
    np.multiply(y, a, out=y)
    np.multiply(y, np.float32(0.5), out=y)


def silu():
    sigmoid_op()
    np.multiply(y, a, out=y)


def softmax(log):
    m = ra.max(axis=1, keepdims=True)
    np.subtract(ra, m, out=ry)
    if log:
        s = np.log(np.exp(ry).sum(axis=1, keepdims=True))
        np.subtract(ry, s, out=ry)
    else:
        np.exp(ry, out=ry)
        np.divide(ry, ry.sum(axis=1, keepdims=True), out=ry)


rng = np.random.default_rng(7)
for key, f in [
    ("neg", lambda: np.negative(a, out=y)),
    ("abs", lambda: np.abs(a, out=y)),
    ("floor", lambda: np.floor(a, out=y)),
    ("ceil", lambda: np.ceil(a, out=y)),
    ("round", lambda: np.rint(a, out=y)),
    ("clamp", lambda: np.clip(a, 0.75, 1.25, out=y)),
    ("exp", lambda: np.exp(a, out=y)),
    ("log", lambda: np.log(a, out=y)),
    ("sqrt", lambda: np.sqrt(a, out=y)),
    ("rsqrt", rsqrt),
    ("sin", lambda: np.sin(a, out=y)),
    ("cos", lambda: np.cos(a, out=y)),
    ("tanh", lambda: np.tanh(a, out=y)),
    ("sigmoid", sigmoid_op),
    ("relu", lambda: np.maximum(a, 0, out=y)),
    ("gelu", gelu),
    ("silu", silu),
    ("pow_scalar", lambda: np.power(a, np.float32(2.5), out=y)),
    ("add", lambda: np.add(a, b, out=y)),
    ("sub", lambda: np.subtract(a, b, out=y)),
    ("mul", lambda: np.multiply(a, b, out=y)),
    ("div", lambda: np.divide(a, b, out=y)),
    ("minimum", lambda: np.minimum(a, b, out=y)),
    ("maximum", lambda: np.maximum(a, b, out=y)),
    ("pow", lambda: np.power(a, b, out=y)),
    ("lt", lambda: np.less(a, b, out=mask)),
    ("where", lambda: np.where(mask, a, b)),
    ("sum_rows", lambda: ra.sum(axis=1)),
    ("mean_rows", lambda: ra.mean(axis=1)),
    ("max_rows", lambda: ra.max(axis=1)),
    ("argmax_rows", lambda: ra.argmax(axis=1)),
    ("softmax_rows", lambda: softmax(False)),
    ("log_softmax_rows", lambda: softmax(True)),
    ("randn", lambda: rng.standard_normal(N, dtype=np.float32, out=y)),
]:
    op_out(key, f)
print(f"numpy_version {np.__version__}")
