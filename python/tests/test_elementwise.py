"""The element-wise math ops, comparisons and `where` from Python (numpy's
names) and the Array operators, every element against numpy: random
inputs salted with NaN, ±inf, ±0 and negatives; exact ops bit for bit,
transcendental ones within a few f32 ulps; broadcasting, views and out=
views. On the CPU backend, and on CUDA with UNIGPU_TEST_GPU=1 (conftest's
`ctx`)."""

import math
import operator

import numpy as np
import pytest

import unigpu

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, -0.5, 3.0])


def salted(rng, shape, dtype=np.float32, scale=4.0):
    """Random values with the special ones scattered in."""
    v = rng.uniform(-scale, scale, size=shape)
    flat = v.reshape(-1)
    k = min(len(SPECIAL), flat.size // 3)
    idx = rng.choice(flat.size, size=k, replace=False)
    flat[idx] = SPECIAL[:k]
    return v.astype(dtype)


def same_bits(got, want):
    """Equal element for element, NaN where NaN, and -0 where -0."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)


def gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def silu(x):
    x = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return x / (1.0 + np.exp(-x))


EXACT = {
    "negative": np.negative,
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
}
# Computed in f64 and rounded once, within a few f32 ulps (numpy's f32 libm
# is itself not correctly rounded).
MATH = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "gelu": gelu_tanh,
    "silu": silu,
}


@pytest.mark.parametrize("name", sorted(EXACT))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_exact_unary_bit_for_bit(ctx, rng, name, dtype):
    h = salted(rng, (7, 33), dtype)
    got = getattr(unigpu, name)(ctx.array(h)).numpy()
    same_bits(got, EXACT[name](h))


@pytest.mark.parametrize("name", sorted(MATH))
def test_transcendental_unary_f32(ctx, rng, name):
    h = salted(rng, (5, 41), np.float32)
    got = getattr(unigpu, name)(ctx.array(h)).numpy()
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        want = MATH[name](h.astype(np.float64)).astype(np.float32)
    # gelu's tanh form cancels in `1 + tanh(...)` for x below -3: an
    # absolute bound there (one f32 ulp of tanh, times |x|/2).
    close(got, want, rtol=2e-6, atol=1e-6 if name == "gelu" else 2e-7)


def test_transcendental_unary_f64(ctx, rng):
    h = salted(rng, (64,), np.float64)
    for name in ("exp", "log", "sqrt", "sin", "cos"):
        with np.errstate(all="ignore"):
            want = MATH[name](h)
        close(getattr(unigpu, name)(ctx.array(h)).numpy(), want, rtol=1e-13, atol=1e-300)


def test_clip_and_clamp(ctx, rng):
    h = salted(rng, (50,))
    got = unigpu.clip(ctx.array(h), -1.5, 2.0).numpy()
    same_bits(got, np.clip(h, np.float32(-1.5), np.float32(2.0)))
    same_bits(unigpu.clamp(ctx.array(h), -1.5, 2.0).numpy(), got)


def test_power_scalar_and_array(ctx, rng):
    h = salted(rng, (6, 20))
    for p in (2.0, 3.0, 0.5, -1.0, 0.0):
        with np.errstate(all="ignore"):
            # An array exponent: numpy's scalar one takes sqrt for 0.5,
            # which differs from C's pow (the kernel's) at -inf and -0.
            h64 = h.astype(np.float64)
            want = np.power(h64, np.full_like(h64, p)).astype(np.float32)
        close(unigpu.power(ctx.array(h), p).numpy(), want, rtol=2e-6, atol=1e-30)
        close((ctx.array(h) ** p).numpy(), want, rtol=2e-6, atol=1e-30)
    e = salted(rng, (1, 20), scale=3.0)
    with np.errstate(all="ignore"):
        want = np.power(h.astype(np.float64), e.astype(np.float64)).astype(np.float32)
    close(unigpu.power(ctx.array(h), ctx.array(e)).numpy(), want, rtol=4e-6, atol=1e-30)
    close((ctx.array(h) ** ctx.array(e)).numpy(), want, rtol=4e-6, atol=1e-30)
    # A number base: 2 ** e.
    with np.errstate(all="ignore"):
        want = np.power(2.0, e.astype(np.float64)).astype(np.float32)
    close((2.0 ** ctx.array(e)).numpy(), want, rtol=4e-6)


def signed_zeros(ref, neg_if):
    """numpy's minimum/maximum, with the zero of two zeros as unigpu
    documents it (`minimum(-0, +0) = -0`, `maximum(-0, +0) = +0` in either
    order; numpy's depends on the order)."""

    def f(a, b):
        a, b = np.broadcast_arrays(a, b)
        r = np.array(ref(a, b))
        z = (a == 0) & (b == 0)
        neg = neg_if(np.signbit(a), np.signbit(b))
        r[z] = np.where(neg, -0.0, 0.0).astype(r.dtype)[z]
        return r

    return f


@pytest.mark.parametrize(
    "name,ref",
    [
        ("divide", np.divide),
        ("minimum", signed_zeros(np.minimum, np.logical_or)),
        ("maximum", signed_zeros(np.maximum, np.logical_and)),
    ],
)
def test_binary_broadcast_bit_for_bit(ctx, rng, name, ref):
    a = salted(rng, (4, 1, 9))
    b = salted(rng, (3, 9))
    with np.errstate(all="ignore"):
        want = ref(a, b)
    got = getattr(unigpu, name)(ctx.array(a), ctx.array(b))
    assert got.shape == (4, 3, 9)
    same_bits(got.numpy(), want)
    # A number operand broadcasts as numpy's scalar.
    with np.errstate(all="ignore"):
        same_bits(getattr(unigpu, name)(ctx.array(a), 0.5).numpy(), ref(a, np.float32(0.5)))


COMPARE = [
    ("less", np.less, operator.lt),
    ("less_equal", np.less_equal, operator.le),
    ("greater", np.greater, operator.gt),
    ("greater_equal", np.greater_equal, operator.ge),
    ("equal", np.equal, operator.eq),
    ("not_equal", np.not_equal, operator.ne),
]


@pytest.mark.parametrize("name,ref,op", COMPARE)
def test_comparisons_give_u8_masks(ctx, rng, name, ref, op):
    a = salted(rng, (5, 12))
    b = salted(rng, (1, 12))
    # Some equal pairs (and -0 against +0) so == and != are tested.
    a[0] = b[0]
    a[1, :2] = [0.0, -0.0]
    b[0, :2] = [-0.0, 0.0]
    a[0, :2] = [0.0, -0.0]
    want = ref(a, b).astype(np.uint8)
    got = getattr(unigpu, name)(ctx.array(a), ctx.array(b))
    assert got.dtype == "u8"
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(op(ctx.array(a), ctx.array(b)).numpy(), want)
    np.testing.assert_array_equal(op(ctx.array(a), 0.25).numpy(), ref(a, np.float32(0.25)).astype(np.uint8))


def test_where(ctx, rng):
    a = salted(rng, (6, 10))
    b = salted(rng, (10,))
    mask = (rng.uniform(size=(6, 1)) < 0.5).astype(np.uint8) * rng.integers(1, 255, size=(6, 1), dtype=np.uint8)
    got = unigpu.where(ctx.array(mask), ctx.array(a), ctx.array(b))
    same_bits(got.numpy(), np.where(mask != 0, a, b))
    # A number for either side, and a comparison's mask.
    x = ctx.array(a)
    relu = unigpu.where(x > 0.0, x, 0.0)
    same_bits(relu.numpy(), np.where(a > 0, a, np.float32(0.0)))


def test_views_in_and_out(ctx, rng):
    h = salted(rng, (8, 6))
    x = ctx.array(h)
    # A transposed and a strided view in.
    same_bits(unigpu.negative(x.T).numpy(), -h.T)
    same_bits(unigpu.floor(x[::2]).numpy(), np.floor(h[::2]))
    with np.errstate(all="ignore"):
        same_bits(unigpu.divide(x.T, x.T[:, :1]).numpy(), h.T / h.T[:, :1])
    np.testing.assert_array_equal(unigpu.less(x[::2], x[1::2]).numpy(), (h[::2] < h[1::2]).astype(np.uint8))
    # out= a view: only its elements are written.
    out = ctx.array(np.full((6, 8), 7.0, np.float32))
    r = unigpu.abs(x.T[:, ::2], out=out[:, ::2])
    want = np.full((6, 8), 7.0, np.float32)
    want[:, ::2] = np.abs(h.T[:, ::2])
    same_bits(out.numpy(), want)
    assert r.shape == (6, 4)
    mask = ctx.array(np.full((8, 6), 9, np.uint8))
    unigpu.greater(x[::2], 0.0, out=mask[1::2])
    wm = np.full((8, 6), 9, np.uint8)
    wm[1::2] = (h[::2] > 0).astype(np.uint8)
    np.testing.assert_array_equal(mask.numpy(), wm)


def test_out_may_be_an_input(ctx, rng):
    h = salted(rng, (30,))
    x = ctx.array(h)
    r = unigpu.sqrt(x, out=x)
    assert r is x
    with np.errstate(invalid="ignore"):
        close(x.numpy(), np.sqrt(h.astype(np.float64)).astype(np.float32), rtol=2e-6)
    y = ctx.array(h)
    with np.errstate(all="ignore"):
        want = signed_zeros(np.maximum, np.logical_and)(h, h[::-1])
    unigpu.maximum(y, y[::-1], out=y)
    same_bits(y.numpy(), want)


def test_operators(ctx, rng):
    a = salted(rng, (3, 7))
    b = salted(rng, (7,))
    x, y = ctx.array(a), ctx.array(b)
    with np.errstate(all="ignore"):
        same_bits((x / y).numpy(), a / b)
        same_bits((2.0 / x).numpy(), np.float32(2.0) / a)
        same_bits((x / 4.0).numpy(), a / np.float32(4.0))
        same_bits((-x).numpy(), -a)
        same_bits(abs(x).numpy(), np.abs(a))
        same_bits((x + 1.5).numpy(), a + np.float32(1.5))
        same_bits((1.5 + x).numpy(), np.float32(1.5) + a)
        same_bits((1.5 - x).numpy(), np.float32(1.5) - a)
        same_bits((x - 1.5).numpy(), a - np.float32(1.5))
        same_bits((3.0 * x).numpy(), np.float32(3.0) * a)
        same_bits((x + y).numpy(), a + b)


def test_eq_keeps_identity_hash(ctx):
    x = ctx.array(np.arange(4, dtype=np.float32))
    y = ctx.array(np.arange(4, dtype=np.float32))
    # Hashable by identity: dict keys and sets still work.
    d = {x: 1, y: 2}
    assert d[x] == 1 and d[y] == 2
    assert hash(x) == hash(x) and len({x, y, x}) == 2
    # == with a non-number falls back to identity (no error).
    assert (x == None) is False  # noqa: E711
    assert (x != "a") is True
    with pytest.raises(TypeError):
        x < "a"  # noqa: B015


def test_errors(ctx):
    i = ctx.array(np.arange(4, dtype=np.int32))
    with pytest.raises(unigpu.UnigpuError):
        unigpu.exp(i)
    f = ctx.array(np.zeros(4, np.float32))
    with pytest.raises(unigpu.UnigpuError):
        unigpu.divide(f, ctx.array(np.zeros(3, np.float32)))
    with pytest.raises(TypeError):
        unigpu.clip(f, "a", 1.0)
    with pytest.raises(TypeError):
        unigpu.maximum(1.0, 2.0)
    with pytest.raises(TypeError):
        pow(f, 2.0, 3)
    # A mask must be u8.
    with pytest.raises(unigpu.UnigpuError):
        unigpu.where(f, f, f)


def test_stream_kwarg_and_a_chain_on_two_streams(ctx, rng):
    # `stream=` is taken by every kind (unary, clip, comparison, where),
    # each step reading the previous one's output on the other stream
    # (ordered by the arrays' last-writer tracking). Not a gated ordering
    # test: test_streams.py holds those for the shared machinery.
    h = salted(rng, (257,))
    s1, s2 = ctx.stream(), ctx.stream()
    x = ctx.array(h)
    a = unigpu.abs(x, stream=s1)
    b = unigpu.clip(a, 0.0, 3.0, stream=s2)
    m = unigpu.greater(b, 1.0, stream=s1)
    r = unigpu.where(m, b, unigpu.negative(b, stream=s2), stream=s1)
    s1.sync()
    s2.sync()
    hb = np.clip(np.abs(h), np.float32(0.0), np.float32(3.0))
    same_bits(r.numpy(), np.where(hb > 1.0, hb, -hb))
