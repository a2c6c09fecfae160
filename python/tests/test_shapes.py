"""Arrays with shapes and views from Python (issue 28): every result
checked element by element against numpy doing the same thing on a host
copy."""

import numpy as np
import pytest

import unigpu


@pytest.fixture
def rng():
    return np.random.default_rng()


def random_3d(ctx, rng):
    shape = tuple(int(x) for x in rng.integers(1, 7, size=3))
    host = rng.standard_normal(shape).astype(np.float32)
    return ctx.array(host), host


def test_an_array_keeps_its_numpy_shape(ctx, rng):
    a, host = random_3d(ctx, rng)
    assert a.shape == host.shape
    assert a.ndim == 3
    assert a.strides == host.strides
    assert a.size == host.size
    assert len(a) == host.shape[0]
    np.testing.assert_array_equal(a.numpy(), host)
    z = ctx.zeros((2, 3), "f64")
    assert z.shape == (2, 3)
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3)))


def test_views_index_like_numpy(ctx, rng):
    for _ in range(5):
        a, host = random_3d(ctx, rng)
        d0, d1, d2 = host.shape
        keys = [
            0,
            -1,
            (slice(None), 0),
            (Ellipsis, slice(None, None, -1)),
            (slice(1, None, 2), Ellipsis, slice(None, None, 3)),
            (slice(None, None, -2), -1),
            (d0 - 1, slice(d1 - 1, None, -1), slice(0, d2, 2)),
            (slice(5, 1, -1),),
        ]
        for key in keys:
            want = host[key]
            got = a[key]
            assert isinstance(got, unigpu.Array), key
            assert got.shape == want.shape, key
            np.testing.assert_array_equal(got.numpy(), want, err_msg=str(key))
        # Every axis indexed: the element itself.
        assert a[d0 - 1, 0, -1] == host[d0 - 1, 0, -1]
        with pytest.raises(IndexError):
            a[d0]
        with pytest.raises(IndexError):
            a[0, 0, 0, 0]


def test_ellipsis_reads_and_writes_like_numpy(ctx, rng):
    a, host = random_3d(ctx, rng)
    host = host.copy()
    d0, d1, d2 = host.shape
    for key in [Ellipsis, (Ellipsis,), (0, Ellipsis), (Ellipsis, d2 - 1), (-1, Ellipsis, 0),
                (slice(None, None, -1), Ellipsis, slice(1, None)), (0, Ellipsis, 0, 0)]:
        want = host[key]
        got = a[key]
        if np.ndim(want) == 0:
            assert got == want, key
        else:
            assert got.shape == want.shape, key
            np.testing.assert_array_equal(got.numpy(), want, err_msg=str(key))
    # Assignment through every form, each checked on the whole array.
    writes = [
        ((0, Ellipsis), 1.25),
        ((Ellipsis, d2 - 1), 2.5),
        ((slice(None, None, 2), Ellipsis, slice(None, None, -1)), -0.75),
        ((-1, Ellipsis, 0), rng.standard_normal(host[-1, ..., 0].shape).astype(np.float32)),
        (Ellipsis, rng.standard_normal(host.shape).astype(np.float32) if d0 % 2 else 4.0),
    ]
    for key, value in writes:
        a[key] = value
        host[key] = value
        np.testing.assert_array_equal(a.numpy(), host, err_msg=str(key))
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., 0, ...]
    with pytest.raises(IndexError):
        a[0, 0, 0, ...,  0]


def test_reshape_transpose_and_copies(ctx, rng):
    a, host = random_3d(ctx, rng)
    np.testing.assert_array_equal(a.T.numpy(), host.T)
    np.testing.assert_array_equal(a.transpose(1, 2, 0).numpy(), host.transpose(1, 2, 0))
    np.testing.assert_array_equal(a.reshape(-1).numpy(), host.reshape(-1))
    np.testing.assert_array_equal(a.reshape((host.shape[0], -1)).numpy(), host.reshape(host.shape[0], -1))
    # A transposed view flattened needs a copy, as in numpy.
    flat = a.T.reshape(-1)
    np.testing.assert_array_equal(flat.numpy(), host.T.reshape(-1))
    c = a.T.copy()
    assert c.is_contiguous
    np.testing.assert_array_equal(c.numpy(), host.T)
    # As numpy: a reshape to another count is a ValueError naming both.
    with pytest.raises(ValueError, match=str(host.size + 1)):
        a.reshape(host.size + 1)


def test_writes_through_views_reach_the_array(ctx, rng):
    a, host = random_3d(ctx, rng)
    host = host.copy()
    a[..., 0] = 3.5
    host[..., 0] = 3.5
    np.testing.assert_array_equal(a.numpy(), host)
    fresh = rng.standard_normal(host[:, ::-1].shape).astype(np.float32)
    a[:, ::-1] = fresh
    host[:, ::-1] = fresh
    np.testing.assert_array_equal(a.numpy(), host)
    view = a.T
    view.upload(host.T * 2)
    np.testing.assert_array_equal(a.numpy(), host * 2)


def test_ops_broadcast_and_take_views(ctx, rng):
    a, host = random_3d(ctx, rng)
    d0, d1, d2 = host.shape
    bias_h = rng.standard_normal((d1, d2)).astype(np.float32)
    col_h = rng.standard_normal((d1, 1)).astype(np.float32)
    bias, col = ctx.array(bias_h), ctx.array(col_h)
    np.testing.assert_array_equal((a + bias).numpy(), host + bias_h)
    np.testing.assert_array_equal((a * col).numpy(), host * col_h)
    np.testing.assert_array_equal((a.T - a.T).numpy(), np.zeros_like(host.T))
    # Into a view given as out=.
    out = ctx.zeros((d0, d1, 2 * d2), "f32")
    unigpu.add(a, bias, out=out[:, :, ::2])
    want = np.zeros((d0, d1, 2 * d2), np.float32)
    want[:, :, ::2] = host + bias_h
    np.testing.assert_array_equal(out.numpy(), want)
    r = unigpu.relu(a.T)
    np.testing.assert_array_equal(r.numpy(), np.maximum(host.T, 0))
    # Shapes that do not broadcast: extents 3 and 5, neither of them 1.
    with pytest.raises(unigpu.SizeMismatchError):
        ctx.zeros((2, 3, 4), "f32") + ctx.array(rng.standard_normal((5, 1)).astype(np.float32))
    s = unigpu.sum(a[:, 0])
    assert s == pytest.approx(float(host[:, 0].astype(np.float64).sum()), rel=1e-5, abs=1e-5)


def test_mm_and_the_matmul_operator(ctx, rng):
    m, k, n = (int(x) for x in rng.integers(1, 33, size=3))
    a_h = rng.standard_normal((m, k)).astype(np.float32)
    bt_h = rng.standard_normal((n, k)).astype(np.float32)
    a, bt = ctx.array(a_h), ctx.array(bt_h)
    want = a_h.astype(np.float64) @ bt_h.T.astype(np.float64)
    np.testing.assert_allclose((a @ bt.T).numpy(), want, rtol=1e-4, atol=1e-4)
    out = ctx.zeros((n, m), "f32")
    unigpu.mm(a, bt.T, out=out.T)
    np.testing.assert_allclose(out.numpy(), want.T, rtol=1e-4, atol=1e-4)
    if k != n:
        with pytest.raises(unigpu.SizeMismatchError):
            a @ bt


def test_batched_and_transposed_matmul_against_numpy(ctx, rng):
    """`@`, `unigpu.mm` and `unigpu.matmul` without sizes on 3-D arrays,
    transposed views (`x.transpose(0, 2, 1)`, `b.T`), batch slices and a
    2-D `b` broadcast over the batch; each element against numpy in f64
    within k roundings of f32."""
    for _ in range(4):
        g, m, k, n = (int(x) for x in rng.integers(1, 17, size=4))
        a_h = rng.standard_normal((g + 1, m, k)).astype(np.float32)
        bt_h = rng.standard_normal((g, n, k)).astype(np.float32)
        b2_h = rng.standard_normal((n, k)).astype(np.float32)
        a, bt, b2 = ctx.array(a_h), ctx.array(bt_h), ctx.array(b2_h)
        tol = dict(rtol=(k + 2) * 2.0**-23, atol=(k + 2) * 2.0**-23 * 4)
        # A batch slice (an offset) times transposed matrices.
        want = a_h[1:].astype(np.float64) @ bt_h.transpose(0, 2, 1).astype(np.float64)
        got = a[1:] @ bt.transpose(0, 2, 1)
        assert got.shape == (g, m, n)
        np.testing.assert_allclose(got.numpy(), want, **tol)
        np.testing.assert_allclose(unigpu.matmul(a[1:], bt.transpose(0, 2, 1)).numpy(), want, **tol)
        # A 2-D b, transposed, broadcast over the batch, into a given out.
        out = ctx.zeros((g, m, n), "f32")
        assert unigpu.mm(a[:g], b2.T, out=out) is out
        want2 = a_h[:g].astype(np.float64) @ b2_h.T.astype(np.float64)
        np.testing.assert_allclose(out.numpy(), want2, **tol)
    with pytest.raises(ValueError):
        unigpu.matmul(a, bt, 1, 2)
    with pytest.raises(unigpu.SizeMismatchError):
        a[:2] @ ctx.zeros((3, k + 1, n), "f32")


def test_dlpack_carries_shapes_and_strides(ctx, rng):
    a, host = random_3d(ctx, rng)
    if ctx.backend == "cpu":
        back = np.from_dlpack(a)
        assert back.shape == host.shape
        np.testing.assert_array_equal(back, host)
        t = np.from_dlpack(a.T)
        assert t.shape == host.T.shape
        np.testing.assert_array_equal(t, host.T)
    # A strided numpy array comes in with its strides, no copy.
    src = rng.standard_normal((5, 7)).astype(np.float32)
    imported = unigpu.from_dlpack(src.T)
    assert imported.shape == (7, 5)
    np.testing.assert_array_equal(imported.numpy(), src.T)
    if ctx.backend == "cpu":
        assert not imported.is_contiguous
        assert imported.strides == src.T.strides
