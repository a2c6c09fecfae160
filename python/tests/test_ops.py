"""Every built-in op against a numpy reference, on random inputs, every
element compared. f16/bf16 are compared in float32/float64."""

import math

import numpy as np
import pytest

import unigpu
from conftest import ALL, EPS, FLOATS, NP, TOL, as_float, random_values, upload

N = 1037  # not a multiple of any vector width


def check(arr, expected, dtype):
    """Within TOL: for ops whose result the backends may compute in other
    ways (transcendentals, fma or not)."""
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(as_float(arr, dtype), expected, rtol=rtol, atol=atol)


def rounded(values, dtype):
    """values rounded to dtype (what a correctly rounded op returns)."""
    if dtype == "bf16":
        return unigpu.bf16_to_float32(unigpu.float32_to_bf16(values.astype(np.float32))).astype(np.float64)
    return values.astype(NP[dtype]).astype(np.float64)


# The three ways to call an op: module function, ctx.ops, a stream's ops.
def via_module(ctx):
    return unigpu, None


def via_ctx_ops(ctx):
    return ctx.ops, None


def via_stream(ctx):
    s = ctx.stream()
    return s.ops, s


CALLERS = [via_module, via_ctx_ops, via_stream]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op,ref", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply)])
@pytest.mark.parametrize("caller", CALLERS)
def test_binary(ctx, rng, dtype, op, ref, caller):
    ops, stream = caller(ctx)
    a, av = upload(ctx, rng, dtype, N)
    b, bv = upload(ctx, rng, dtype, N)
    out = getattr(ops, op)(a, b)
    assert out.dtype == dtype and len(out) == N
    # Exactly the correctly rounded result: computing in f32 (f64 for
    # f64) and rounding once to dtype gives it, as 24 >= 2*11 + 2 bits
    # (Figueroa) make the double rounding of f16/bf16 innocuous.
    np.testing.assert_array_equal(as_float(out, dtype), rounded(ref(av, bv), dtype))
    given = ctx.zeros(N, dtype)
    assert getattr(ops, op)(a, b, given) is given
    np.testing.assert_array_equal(as_float(given, dtype), rounded(ref(av, bv), dtype))
    if stream is not None:
        stream.sync()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "op,ref",
    [("relu", lambda x: np.maximum(x, 0)), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("tanh", np.tanh)],
)
def test_unary(ctx, rng, dtype, op, ref):
    x, xv = upload(ctx, rng, dtype, N, -6, 6)
    out = getattr(unigpu, op)(x)
    check(out, rounded(ref(xv), dtype), dtype)
    out2 = ctx.empty(N, dtype)
    assert getattr(ctx.ops, op)(x, out=out2) is out2
    check(out2, rounded(ref(xv), dtype), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_axpy_and_scale(ctx, rng, dtype):
    x, xv = upload(ctx, rng, dtype, N)
    y, yv = upload(ctx, rng, dtype, N)
    alpha = 1.75  # exact in every float dtype
    assert unigpu.axpy(alpha, x, y) is y
    check(y, rounded(alpha * xv + yv, dtype), dtype)
    assert ctx.ops.scale(-0.5, x) is x
    check(x, rounded(-0.5 * xv, dtype), dtype)


def test_axpy_is_one_fma_on_f32(ctx, rng):
    x, xv = upload(ctx, rng, "f32", N)
    y, yv = upload(ctx, rng, "f32", N)
    alpha = np.float32(0.3)
    unigpu.axpy(alpha, x, y)
    # float64 holds alpha*x exactly, so one rounding of that plus y is the fma
    expected = (np.float64(alpha) * xv + yv).astype(np.float32)
    got = y.numpy()
    assert np.count_nonzero(got != expected) <= N // 100  # double rounding may differ in rare ties


# Machine epsilon of each float dtype, and of the type it accumulates in
# (f32 for f16/bf16): the values crates/unigpu/tests/ops.rs's Tol uses.
MACHINE_EPS = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}
ACC_EPS = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-23, "bf16": 2.0**-23}


def reduction_bound(backend, dtype, terms, exact):
    """|result - exact| for a sum of `terms`, by the rule of ops.rs's
    reduction_tol: c(n) roundings in the accumulation type, each at most
    ACC_EPS of the terms' magnitudes, then one rounding to dtype. Not
    dtype's own epsilon for the accumulation: for bf16 that bound is so
    wide that a sum of 0 passes about one time in three."""
    n = len(terms)
    threads = min(max(-(-n // 256), 1), 1024) * 256
    depth = -(-n // threads) + 2 * n.bit_length() + 32
    acc = depth * ACC_EPS[dtype]
    if backend == "cpu":
        acc += n * 2.0**-52  # its block sums, added serially in f64
    abs_sum = math.fsum(np.abs(terms))
    return acc * abs_sum * (1 + MACHINE_EPS[dtype]) + MACHINE_EPS[dtype] * abs(exact) + 1e-300


@pytest.mark.parametrize("dtype", FLOATS)
def test_reductions(ctx, rng, dtype):
    x, xv = upload(ctx, rng, dtype, N)
    y, yv = upload(ctx, rng, dtype, N)
    backend = ctx.backend
    s = unigpu.sum(x)
    assert isinstance(s, float)
    want = math.fsum(xv)
    assert abs(s - want) <= reduction_bound(backend, dtype, xv, want)
    assert not abs(want) <= reduction_bound(backend, dtype, xv, want), "a sum of 0 would pass"
    d = ctx.ops.dot(x, y)
    # The products of f16/bf16/f32 values are exact in f64; those of f64
    # err by 2^-53 each, far inside the bound's 32 spare roundings.
    want = math.fsum(xv * yv)
    assert abs(d - want) <= reduction_bound(backend, dtype, xv * yv, want)
    assert unigpu.max(x) == np.max(xv)
    # +0.0, sign bit clear (issue 25: the empty sum was -0.0).
    empty_sum = unigpu.sum(ctx.zeros(0, dtype))
    assert empty_sum == 0.0 and np.signbit(empty_sum) == False  # noqa: E712
    empty_dot = unigpu.dot(ctx.zeros(0, dtype), ctx.zeros(0, dtype))
    assert empty_dot == 0.0 and np.signbit(empty_dot) == False  # noqa: E712


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 33, 5), (64, 48, 80)])
def test_matmul(ctx, rng, dtype, mkn):
    m, k, n = mkn
    a, av = upload(ctx, rng, dtype, m * k)
    b, bv = upload(ctx, rng, dtype, k * n)
    c = unigpu.matmul(a, b, m, k, n)
    assert len(c) == m * n and c.dtype == dtype
    expected = (av.reshape(m, k) @ bv.reshape(k, n)).ravel()
    atol = 4 * EPS[dtype] * k + 2 * EPS[dtype]
    np.testing.assert_allclose(as_float(c, dtype), expected, rtol=2 * EPS[dtype], atol=atol)
    out = ctx.zeros(m * n, dtype)
    assert ctx.ops.matmul(a, b, m, k, n, out=out) is out
    np.testing.assert_allclose(as_float(out, dtype), expected, rtol=2 * EPS[dtype], atol=atol)


@pytest.mark.parametrize("dtype", ALL)
def test_fill_and_copy_every_dtype(ctx, rng, dtype):
    x = ctx.empty(N, dtype)
    value = {"i32": -7, "u32": 2**32 - 1, "i64": -(2**62) - 1, "u64": 2**64 - 1, "u8": 255}.get(dtype, 0.375)
    assert unigpu.fill(x, value) is x
    host = x.numpy()
    if dtype == "bf16":
        np.testing.assert_array_equal(unigpu.bf16_to_float32(host), np.full(N, value, np.float32))
    else:
        np.testing.assert_array_equal(host, np.full(N, value, NP[dtype]))
    data, _ = random_values(rng, dtype, N)
    src = ctx.array(data, dtype=dtype)
    assert ctx.ops.copy(src, x) is x
    np.testing.assert_array_equal(x.numpy(), data)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_outputs_may_alias_inputs(ctx, rng, dtype):
    x, xv = upload(ctx, rng, dtype, N)
    y, yv = upload(ctx, rng, dtype, N)
    assert unigpu.add(x, y, out=x) is x  # x += y
    check(x, rounded(xv + yv, dtype), dtype)
    xv = as_float(x, dtype)
    assert unigpu.mul(x, x, out=x) is x  # x *= x
    check(x, rounded(xv * xv, dtype), dtype)
    unigpu.relu(y, out=y)
    check(y, rounded(np.maximum(yv, 0), dtype), dtype)
    yv = as_float(y, dtype)
    unigpu.axpy(2.0, y, y)  # y = 2y + y
    check(y, rounded(3 * yv, dtype), dtype)
    yv = as_float(y, dtype)
    assert unigpu.copy(y, y) is y  # left as it is
    y.copy_to(y)
    check(y, yv, dtype)
    sq = ctx.array(random_values(rng, dtype, 16)[0], dtype=dtype)
    sv = as_float(sq, dtype)
    unigpu.matmul(sq, sq, 4, 4, 4, out=sq)
    np.testing.assert_allclose(as_float(sq, dtype), (sv.reshape(4, 4) @ sv.reshape(4, 4)).ravel(),
                               rtol=4 * EPS[dtype], atol=32 * EPS[dtype])


def test_ops_on_streams_are_ordered(ctx, rng):
    # A chain of ops on two streams, ordered by an event; the final value is
    # only right if every step saw the previous one.
    s1, s2 = ctx.stream(), ctx.stream()
    xv = rng.standard_normal(N).astype(np.float32)
    x = ctx.array(xv)
    for _ in range(20):
        s1.ops.scale(2.0, x)
    ev = s1.record()
    s2.wait(ev)
    s2.ops.scale(0.5, x)
    unigpu.axpy(1.0, x, x, stream=s2)
    s2.sync()
    np.testing.assert_array_equal(x.numpy(), xv * 2.0**20)


def test_stream_kwarg_overrides(ctx):
    s = ctx.stream()
    x = ctx.array(np.ones(8, np.float32))
    ctx.ops.scale(3.0, x, stream=s)
    s.sync()
    np.testing.assert_array_equal(x.numpy(), np.full(8, 3.0))
    assert "stream=yes" in repr(s.ops) and "stream=default" in repr(ctx.ops)
