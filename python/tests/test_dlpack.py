"""DLPack both ways: numpy (CPU), and torch and CuPy (CUDA, with
UNIGPU_TEST_GPU=1): shared memory (same data pointer, writes seen on both
sides), capsule rules, ordering before the consumer's stream, errors."""

import gc
import threading
import time

import numpy as np
import pytest

import unigpu
from conftest import ALL, GPU, NP, cuda_context

# numpy exports and imports these through DLPack (no bf16 in numpy).
NUMPY_DTYPES = [d for d in ALL if d != "bf16"]


def random_host(rng, dtype, n):
    t = NP[dtype]
    if np.issubdtype(t, np.floating):
        return rng.uniform(-1e3, 1e3, n).astype(t)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, n, dtype=t, endpoint=True)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_from_dlpack_shares_memory(cpu, rng, dtype):
    host = random_host(rng, dtype, 1000)
    a = cpu.array(host)
    view = np.from_dlpack(a)
    assert view.dtype == host.dtype and view.shape == (1000,)
    assert view.ctypes.data == a.data_ptr()
    np.testing.assert_array_equal(view, host)
    # A write through numpy is seen by unigpu, and the other way round.
    other = random_host(rng, dtype, 1000)
    view[:] = other
    np.testing.assert_array_equal(a.numpy(), other)
    unigpu.fill(a, 7)
    cpu.sync()
    assert (view == 7).all()


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_unigpu_from_dlpack_of_numpy_shares_memory(rng, dtype):
    host = random_host(rng, dtype, 777)
    a = unigpu.from_dlpack(host)
    assert a.context.backend == "cpu"
    assert a.dtype == dtype and len(a) == 777
    assert a.data_ptr() == host.ctypes.data
    np.testing.assert_array_equal(a.numpy(), host)
    host[:] = random_host(rng, dtype, 777)
    np.testing.assert_array_equal(a.numpy(), host)


def test_import_keeps_the_shape(rng):
    host = rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    a = unigpu.from_dlpack(host)
    assert a.shape == (3, 4, 5) and a.size == 60
    np.testing.assert_array_equal(a.numpy(), host)


def test_ops_write_through_to_numpy(cpu, rng):
    x = rng.uniform(-1, 1, 4096).astype(np.float32)
    y = rng.uniform(-1, 1, 4096).astype(np.float32)
    expect = 2.5 * x + y
    ux, uy = unigpu.from_dlpack(x, context=cpu), unigpu.from_dlpack(y, context=cpu)
    unigpu.axpy(2.5, ux, uy)
    cpu.sync()
    np.testing.assert_allclose(y, expect, rtol=1e-5, atol=1e-6)


def test_export_outlives_the_array(cpu, rng):
    host = rng.uniform(-1, 1, 10_000).astype(np.float64)
    a = cpu.array(host)
    view = np.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(view, host)


def test_unconsumed_capsules_are_deleted(cpu, rng):
    host = rng.uniform(-1, 1, 100).astype(np.float32)
    a = cpu.array(host)
    for max_version in [None, (1, 0)]:
        cap = a.__dlpack__(max_version=max_version)
        assert "dltensor" in repr(cap)
        del cap
        gc.collect()
    np.testing.assert_array_equal(a.numpy(), host)


def test_legacy_and_versioned_capsules_import(cpu, rng):
    host = rng.uniform(-1, 1, 64).astype(np.float32)
    a = cpu.array(host)

    class Legacy:
        """A producer from before DLPack 1.0: no max_version."""

        def __dlpack__(self, stream=None):
            return a.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    for producer in [a, Legacy()]:
        b = unigpu.from_dlpack(producer)
        assert b.data_ptr() == a.data_ptr()
        np.testing.assert_array_equal(b.numpy(), host)


def test_capsule_names(cpu):
    a = cpu.zeros(4, "f32")
    assert '"dltensor"' in repr(a.__dlpack__())
    assert '"dltensor_versioned"' in repr(a.__dlpack__(max_version=(1, 0)))
    assert a.__dlpack_device__() == (1, 0)


def test_rejected_inputs_raise(cpu, rng):
    ro = np.arange(10, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises((unigpu.DlpackError, BufferError)):
        unigpu.from_dlpack(ro)
    backwards = np.arange(20, dtype=np.float32)[::-2]
    with pytest.raises((unigpu.DlpackError, BufferError), match="negative|stride"):
        unigpu.from_dlpack(backwards)
    with pytest.raises(unigpu.DlpackError, match="dtype"):
        unigpu.from_dlpack(np.zeros(4, dtype=np.complex64))
    with pytest.raises(ValueError, match="CPU"):
        cpu.zeros(4, "f32").__dlpack__(stream=5)
    with pytest.raises(TypeError):
        unigpu.from_dlpack(object())


def test_copy_arguments(cpu, rng):
    host = rng.uniform(-1, 1, 32).astype(np.float32)
    a = cpu.array(host)
    copied = np.from_dlpack(a, copy=True)
    assert copied.ctypes.data != a.data_ptr()
    np.testing.assert_array_equal(copied, host)
    same = np.from_dlpack(a, copy=False)
    assert same.ctypes.data == a.data_ptr()


# --- CUDA: torch and CuPy --------------------------------------------------

SPIN_WRITE = r"""
extern "C" __global__ void spin_then_write(float* x, float value, unsigned n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
"""


def torch_or_skip():
    if not GPU:
        pytest.skip("needs a CUDA GPU: set UNIGPU_TEST_GPU=1")
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.fail("UNIGPU_TEST_GPU=1 but torch sees no CUDA device")
    return torch


def cupy_or_skip():
    if not GPU:
        pytest.skip("needs a CUDA GPU: set UNIGPU_TEST_GPU=1")
    try:
        import cupy
    except ImportError:
        pytest.skip("cupy is not installed")
    return cupy


@pytest.mark.gpu
def test_torch_shares_cuda_memory_both_ways(rng):
    torch = torch_or_skip()
    ctx = cuda_context()
    host = rng.uniform(-1, 1, 1 << 20).astype(np.float32)
    a = ctx.array(host)
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.data_ptr() == a.data_ptr()
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    t.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.numpy(), host * 2)

    src = torch.randn(4096, device="cuda", dtype=torch.float16)
    b = unigpu.from_dlpack(src)
    assert b.dtype == "f16" and b.data_ptr() == src.data_ptr()
    np.testing.assert_array_equal(b.numpy(), src.cpu().numpy())


@pytest.mark.gpu
def test_cupy_shares_cuda_memory_both_ways(rng):
    cp = cupy_or_skip()
    ctx = cuda_context()
    host = rng.uniform(-1, 1, 1 << 16).astype(np.float64)
    a = ctx.array(host)
    c = cp.from_dlpack(a)
    assert c.data.ptr == a.data_ptr()
    np.testing.assert_array_equal(cp.asnumpy(c), host)
    src = cp.arange(1000, dtype=cp.int32)
    b = unigpu.from_dlpack(src)
    assert b.data_ptr() == src.data.ptr
    np.testing.assert_array_equal(b.numpy(), np.arange(1000, dtype=np.int32))


@pytest.mark.gpu
def test_consumer_stream_waits_for_producer_work():
    torch = torch_or_skip()
    ctx = cuda_context()
    n = 1 << 20
    k = ctx.compile(SPIN_WRITE).kernel("spin_then_write")
    for trial in range(3):
        a = ctx.zeros(n, "f32")
        # ~0.2 s of spinning before the write, on unigpu's default stream.
        ctx.launch(k, (n + 255) // 256, 256, [a, 42.0 + trial, n, 400_000_000])
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            t = torch.from_dlpack(a)  # passes s: s must wait for the kernel
            seen = t.clone()
        s.synchronize()
        assert (seen == 42.0 + trial).all().item(), "the consumer read before the producer wrote"


# ---- an array and its own export imported again are one array to the
# ordering rules (docs/dlpack.md): a write through either, then a read
# through the other on any stream, sees the write. The writing stream is
# held back by a kernel that touches only a scratch array of its own (a CPU
# kernel blocked on a threading.Event, or a GPU kernel spinning about a
# second), and the write (a copy) is queued behind it: a read on another
# stream that does not wait copies the old data, every time.


def cpu_hold(stream, ctx):
    """Blocks `stream` (a CPU one) until the returned function is called:
    a CPU kernel on a scratch array waits for a gate of its own."""
    gate = threading.Event()

    def impl(scratch):
        assert gate.wait(30), "the test never opened the gate"

    k = unigpu.Kernel.cpu_only("hold", impl, params=["f32*"])
    stream.launch(k, 1, 1, [ctx.zeros(1, "f32")])
    return gate.set


def held_write_then_read(ctx, writer, reader, fresh, hold):
    """Writes `fresh` into `writer` on a held-back stream, then reads
    `reader` on another stream and with numpy()."""
    src = ctx.array(fresh)
    copy = ctx.zeros(len(fresh), "f32")
    s1, s2 = ctx.stream(), ctx.stream()
    ctx.sync()
    release = hold(s1, ctx)
    s1.ops.copy(src, writer)
    s2.ops.copy(reader, copy)
    time.sleep(0.2)
    assert not s2.is_idle(), "the read finished while the write it must see was held back"
    release()
    s2.sync()
    np.testing.assert_array_equal(copy.numpy(), fresh)
    np.testing.assert_array_equal(reader.numpy(), fresh)
    s1.sync()


def reimport_is_ordered(ctx, rng, hold):
    n = int(rng.integers(1, 1 << 16))
    a = ctx.array(rng.uniform(-1e3, 1e3, n).astype(np.float32))
    b = unigpu.from_dlpack(a, context=ctx)
    assert b.data_ptr() == a.data_ptr()
    held_write_then_read(ctx, b, a, rng.uniform(-1e3, 1e3, n).astype(np.float32), hold)
    held_write_then_read(ctx, a, b, rng.uniform(-1e3, 1e3, n).astype(np.float32), hold)


def test_reimport_is_ordered_with_the_original_cpu(cpu, rng):
    reimport_is_ordered(cpu, rng, cpu_hold)


SPIN = r"""
extern "C" __global__ void spin(float* scratch, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    scratch[0] = 0.0f;
}
"""


@pytest.mark.gpu
def test_reimport_is_ordered_with_the_original_cuda(rng):
    ctx = cuda_context()
    k = ctx.compile(SPIN).kernel("spin")

    def hold(stream, ctx):
        # About a second of spinning: the read on the other stream, if it
        # does not wait, is long done by then.
        stream.launch(k, 1, 1, [ctx.zeros(1, "f32"), 2_000_000_000])
        return lambda: None

    reimport_is_ordered(ctx, rng, hold)


def test_host_export_waits_for_pending_writes(cpu, rng):
    # numpy passes no stream: the export blocks until the held-back write
    # on another stream is done, so numpy's view shows the written data.
    n = int(rng.integers(1, 1 << 16))
    a = cpu.array(rng.uniform(-1e3, 1e3, n).astype(np.float32))
    fresh = rng.uniform(-1e3, 1e3, n).astype(np.float32)
    src = cpu.array(fresh)
    s = cpu.stream()
    cpu.sync()
    release = cpu_hold(s, cpu)
    s.ops.copy(src, a)
    threading.Timer(0.2, release).start()
    view = np.from_dlpack(a)
    np.testing.assert_array_equal(view, fresh)
    s.sync()
