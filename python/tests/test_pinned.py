"""Pinned buffers: numpy views over page-locked memory (ordinary memory on
the CPU backend), random data through upload_pinned -> op ->
download_pinned, every element checked; views wait for pending copies;
mismatches refused."""

import numpy as np
import pytest

import unigpu
from conftest import ALL, NP, random_values


@pytest.mark.parametrize("dtype", ALL)
def test_pinned_round_trips_every_dtype(ctx, rng, dtype):
    n = int(rng.integers(1, 5000))
    src = ctx.pinned(n, dtype)
    assert len(src) == src.size == n and src.dtype == dtype
    assert src.nbytes == n * np.dtype(NP[dtype]).itemsize
    view = src.view()
    assert view.dtype == NP[dtype] and view.shape == (n,)
    assert not view.flags.writeable and not view.any(), "zeroed, read-only"
    data, _ = random_values(rng, dtype, n)
    src.view(writable=True)[:] = data
    s = ctx.stream()
    a = ctx.zeros(n, dtype)
    s.upload_pinned(src, a)
    b = ctx.zeros(n, dtype)
    unigpu.copy(a, b, stream=s)
    dst = ctx.pinned(n, dtype)
    s.download_pinned(b, dst)
    # No sync: view() waits for the download.
    np.testing.assert_array_equal(dst.view(), data)
    # Writing the source waits for the upload; the array keeps its data.
    src.view(writable=True)[:] = 0
    np.testing.assert_array_equal(a.numpy(), data)


def test_pinned_views_outlive_the_buffer(ctx, rng):
    p = ctx.pinned(64, "f64")
    data = rng.uniform(-1, 1, 64)
    p.view(writable=True)[:] = data
    view = p.view()
    del p
    np.testing.assert_array_equal(view, data)
    assert ctx.pinned(0, "u8").view().shape == (0,)


def test_pinned_copies_check_dtypes_and_lengths(ctx):
    s = ctx.stream()
    a = ctx.zeros(10, "f32")
    with pytest.raises(unigpu.DTypeMismatchError):
        s.upload_pinned(ctx.pinned(10, "f64"), a)
    with pytest.raises(unigpu.SizeMismatchError):
        s.download_pinned(a, ctx.pinned(11, "f32"))
    assert "PinnedBuffer" in repr(ctx.pinned(3, "u8"))
