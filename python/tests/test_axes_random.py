"""Reductions over axes, softmax and the random generator from Python
(issue 28): results against numpy on a host copy; the generator's streams
replayed from their offsets and, with a GPU, equal to the CPU backend's bit
for bit."""

import numpy as np
import pytest

import unigpu


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_reductions_over_axes_match_numpy(ctx, rng):
    host = (rng.standard_normal((3, 5, 70)) * 4).astype(np.float32)
    a = ctx.array(host)
    for axis in [0, 1, 2, -1, (0, 2), (1, 2), None]:
        for keepdims in [False, True]:
            want = host.astype(np.float64).sum(axis=axis, keepdims=keepdims)
            got = unigpu.sum(a, axis=axis, keepdims=keepdims)
            if axis is None and not keepdims:
                assert got == pytest.approx(float(want), rel=1e-5, abs=1e-4)
                continue
            assert got.shape == np.shape(want), (axis, keepdims)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(
                unigpu.mean(a, axis=axis, keepdims=keepdims).numpy(),
                host.astype(np.float64).mean(axis=axis, keepdims=keepdims),
                rtol=1e-5,
                atol=1e-5,
            )
            np.testing.assert_array_equal(
                unigpu.max(a, axis=axis, keepdims=keepdims).numpy(), host.max(axis=axis, keepdims=keepdims)
            )
            np.testing.assert_array_equal(
                unigpu.min(a, axis=axis, keepdims=keepdims).numpy(), host.min(axis=axis, keepdims=keepdims)
            )
    for axis in [0, 1, 2]:
        np.testing.assert_array_equal(unigpu.argmax(a, axis=axis).numpy(), host.argmax(axis=axis))
        np.testing.assert_array_equal(unigpu.argmin(a, axis=axis).numpy(), host.argmin(axis=axis))
    assert unigpu.argmax(a).numpy() == host.argmax()
    # A view: the transpose's sums over its first axis.
    np.testing.assert_allclose(unigpu.sum(a.T, axis=0).numpy(), host.T.sum(axis=0), rtol=1e-5, atol=1e-4)
    with pytest.raises(IndexError):
        unigpu.sum(a, axis=3)
    with pytest.raises(ValueError):
        unigpu.argmax(a, axis=(0, 1))


def test_softmax_matches_numpy(ctx, rng):
    host = (rng.standard_normal((4, 300)) * 3).astype(np.float32)
    a = ctx.array(host)
    for axis in [0, 1, -1]:
        x = host.astype(np.float64)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        want = e / e.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(unigpu.softmax(a, axis=axis).numpy(), want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(unigpu.log_softmax(a, axis=axis).numpy(), np.log(want), rtol=1e-5, atol=2e-6)
    out = ctx.zeros((300, 4), "f32")
    unigpu.softmax(a, axis=1, out=out.T)
    np.testing.assert_allclose(out.numpy().T, unigpu.softmax(a).numpy(), rtol=0, atol=0)
    # out=x: x is read from a copy taken first (the bindings' rule).
    want = unigpu.softmax(a).numpy()
    unigpu.softmax(a, out=a)
    np.testing.assert_array_equal(a.numpy(), want)


def test_the_generator_replays_and_never_overlaps(ctx):
    g = unigpu.Generator(1234)
    assert g.seed == 1234 and g.offset == 0
    u = g.uniform(ctx, (64, 33))
    assert u.shape == (64, 33) and u.dtype == "f32"
    after = g.offset
    assert after > 0
    v = g.uniform(ctx, (64, 33)).numpy()
    g.offset = 0
    np.testing.assert_array_equal(g.uniform(ctx, (64, 33)).numpy(), u.numpy())
    assert g.offset == after
    assert not np.array_equal(u.numpy(), v)
    x = u.numpy()
    assert (x >= 0).all() and (x < 1).all() and abs(x.mean() - 0.5) < 0.05
    n = unigpu.Generator(7).normal(ctx, 20000, mean=2.0, std=3.0, dtype="f64").numpy()
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 3.0) < 0.1
    r = unigpu.Generator(7).randint(ctx, (100, 10), -5, 5).numpy()
    assert r.dtype == np.int32 and r.min() >= -5 and r.max() < 5 and len(np.unique(r)) == 10
    with pytest.raises(unigpu.KernelArgsError):
        g.randint(ctx, 3, 5, 5)
    with pytest.raises(unigpu.KernelArgsError):
        g.uniform(ctx, 3, dtype="i32")


@pytest.mark.gpu
def test_the_generator_gives_the_cpu_bits_on_the_gpu(cuda, cpu):
    for dtype in ["f32", "f64", "f16", "bf16"]:
        a = unigpu.Generator(99).normal(cuda, (17, 31), dtype=dtype).numpy()
        b = unigpu.Generator(99).normal(cpu, (17, 31), dtype=dtype).numpy()
        assert a.tobytes() == b.tobytes(), dtype
