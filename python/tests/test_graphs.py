"""Graphs: ops captured from a stream and replayed, on the CPU backend and
(with UNIGPU_TEST_GPU=1) on CUDA; every element checked against numpy."""

import numpy as np
import pytest

import unigpu


def test_a_graph_replays_its_ops_with_new_inputs(ctx, rng):
    n = int(rng.integers(1000, 50_000))
    x0 = rng.standard_normal(n).astype(np.float32)
    x = ctx.upload(x0)
    y = ctx.zeros(n)
    z = ctx.zeros(n)
    ctx.sync()
    s = ctx.stream()
    s.begin_capture()
    assert s.is_capturing
    s.ops.relu(x, y)
    s.ops.scale(2.0, y)
    s.ops.add(y, x, z)
    g = s.end_capture()
    assert not s.is_capturing
    assert len(g) >= 3
    assert not z.numpy().any(), "capturing runs nothing"
    for _ in range(3):
        g.launch(s)
        s.sync()
        np.testing.assert_array_equal(z.numpy(), np.maximum(x0, 0) * 2 + x0)
        x0 = rng.standard_normal(n).astype(np.float32)
        x.upload(x0)


def test_work_a_replay_cannot_repeat_is_refused_while_capturing(ctx, rng):
    x = ctx.upload(rng.standard_normal(100).astype(np.float32))
    ctx.sync()
    s = ctx.stream()
    with pytest.raises(unigpu.UnsupportedError, match="not capturing"):
        s.end_capture()
    s.begin_capture()
    with pytest.raises(unigpu.UnsupportedError):
        s.ops.sum(x)
    with pytest.raises(unigpu.UnsupportedError):
        s.record()
    with pytest.raises(unigpu.UnsupportedError, match="already"):
        s.begin_capture()
    g = s.end_capture()
    assert len(g) == 0
    g.launch(s)
    s.sync()
