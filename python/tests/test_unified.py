"""Unified (managed) memory: numpy views over an array's own memory,
written and read in place around ops on a stream, every element checked;
prefetch; refusals (ordinary arrays, bad locations, more than the device
has free)."""

import numpy as np
import pytest

import unigpu
from conftest import ALL, NP, random_values


@pytest.mark.parametrize("dtype", ALL)
def test_host_views_share_the_memory_every_dtype(ctx, rng, dtype):
    n = int(rng.integers(1, 5000))
    a = ctx.alloc_unified(n, dtype)
    assert a.is_unified and len(a) == n and a.dtype == dtype
    view = a.host_view()
    assert view.dtype == NP[dtype] and view.shape == (n,)
    assert not view.flags.writeable
    assert not view.any(), "zeroed"
    data, _ = random_values(rng, dtype, n)
    w = a.host_view(writable=True)
    assert w.flags.writeable
    w[:] = data
    # The same memory: an ordinary download and a fresh view see the writes.
    np.testing.assert_array_equal(a.numpy(), data)
    np.testing.assert_array_equal(a.host_view(), data)


def test_ops_on_a_stream_then_the_view_waits(ctx, rng):
    n = 100_003
    x = ctx.alloc_unified(n, "f32")
    out = ctx.alloc_unified(n, "f32")
    hx = rng.uniform(-100, 100, n).astype(np.float32)
    hy = rng.uniform(-100, 100, n).astype(np.float32)
    x.host_view(writable=True)[:] = hx
    y = ctx.array(hy)
    s = ctx.stream()
    s.prefetch(x, "device")
    s.prefetch(out)
    assert unigpu.add(x, y, out=out, stream=s) is out
    s.prefetch(out, "host")
    # No sync: host_view waits for the add.
    np.testing.assert_array_equal(out.host_view(), hx + hy)
    # The view keeps the memory alive after the array is gone.
    view = out.host_view()
    del out
    np.testing.assert_array_equal(view, hx + hy)


def test_ordinary_arrays_have_no_host_view(ctx):
    a = ctx.zeros(8, "f32")
    assert not a.is_unified
    with pytest.raises(unigpu.UnsupportedError, match="alloc_unified"):
        a.host_view()
    with pytest.raises(unigpu.UnsupportedError, match="alloc_unified"):
        a.host_view(writable=True)
    with pytest.raises(unigpu.UnsupportedError, match="alloc_unified"):
        ctx.default_stream.prefetch(a, "host")
    u = ctx.alloc_unified(8, "f32")
    with pytest.raises(ValueError, match="device"):
        ctx.default_stream.prefetch(u, "elsewhere")
    assert ctx.alloc_unified(0, "u8").host_view().shape == (0,)


def test_more_than_the_device_has_is_refused_with_the_free_bytes(ctx):
    free, total = ctx.memory_info()
    with pytest.raises(unigpu.OutOfMemoryError, match="bytes free"):
        ctx.alloc_unified(total + 1, "u8")
