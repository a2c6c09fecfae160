"""Shared fixtures. Every test runs on the CPU backend; the CUDA variants
(the `ctx` fixture's "cuda" parameter, marked `gpu`) skip unless
UNIGPU_TEST_GPU=1, and then FAIL if no CUDA context can be made."""

import os
import zlib

import numpy as np
import pytest

import unigpu

GPU = os.environ.get("UNIGPU_TEST_GPU") == "1"

FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["i32", "u32", "i64", "u64", "u8"]
ALL = FLOATS + INTS
NP = {
    "f32": np.float32,
    "f64": np.float64,
    "f16": np.float16,
    "bf16": np.uint16,  # bit patterns
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "u64": np.uint64,
    "u8": np.uint8,
}
# Per dtype: (rtol, atol) for one rounded result computed in f32 (f64 for f64).
TOL = {
    "f32": (1e-5, 1e-6),
    "f64": (1e-12, 1e-14),
    "f16": (2e-3, 1e-3),
    "bf16": (1.6e-2, 1e-2),
}
# Unit roundoff per float dtype, for error bounds of sums.
EPS = {"f32": 2.0**-24, "f64": 2.0**-53, "f16": 2.0**-11, "bf16": 2.0**-8}


def cuda_context():
    """The CUDA context for GPU tests: skips without UNIGPU_TEST_GPU=1,
    fails (not skips) with it when CUDA cannot be opened."""
    if not GPU:
        pytest.skip("needs a CUDA GPU: set UNIGPU_TEST_GPU=1 on a machine with one")
    try:
        return unigpu.Context.new("cuda", 0)
    except unigpu.UnigpuError as e:
        pytest.fail(f"UNIGPU_TEST_GPU=1 but no CUDA context could be made: {e}")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (runs with UNIGPU_TEST_GPU=1)")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def ctx(request):
    """A context of each backend: the same test on CPU and on CUDA."""
    if request.param == "cuda":
        return cuda_context()
    return unigpu.Context.new("cpu")


@pytest.fixture
def cpu():
    return unigpu.Context.new("cpu")


@pytest.fixture
def cuda():
    return cuda_context()


@pytest.fixture
def rng(request):
    # A different but reproducible stream per test.
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


def random_values(rng, dtype, n, low=-1.0, high=1.0):
    """Random host data for `dtype`: (data to upload, the exact values it
    holds as float64 or int). bf16 data are uint16 bit patterns."""
    if dtype in INTS:
        info = np.iinfo(NP[dtype])
        data = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=NP[dtype])
        return data, data
    v = rng.uniform(low, high, size=n)
    if dtype == "bf16":
        bits = unigpu.float32_to_bf16(v.astype(np.float32))
        return bits, unigpu.bf16_to_float32(bits).astype(np.float64)
    data = v.astype(NP[dtype])
    return data, data.astype(np.float64)


def as_float(arr, dtype):
    """An Array's contents as float64 values (bf16 bits decoded)."""
    host = arr.numpy()
    if dtype == "bf16":
        return unigpu.bf16_to_float32(host).astype(np.float64)
    return host.astype(np.float64)


def upload(ctx, rng, dtype, n, low=-1.0, high=1.0):
    data, values = random_values(rng, dtype, n, low, high)
    return ctx.array(data, dtype=dtype), values
