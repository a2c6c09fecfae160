"""Creation (ones, full, arange, linspace, eye) and Array.astype against
numpy, on every backend the `ctx` fixture gives. Cast inputs are values
on which numpy and unigpu's rule (Rust's `as`: docs/guide.md, "Casts")
agree exactly; the rule's own cases (NaN → 0, saturation, wrapping) are
checked against the values the rule states."""

import ml_dtypes
import numpy as np
import pytest

import unigpu
from conftest import ALL, NP


def host(a, dtype):
    """A downloaded array as numpy values (bf16 bit patterns as floats)."""
    x = a.numpy()
    if dtype == "bf16":
        return x.view(ml_dtypes.bfloat16).astype(np.float64)
    return x


def np_type(dtype):
    return ml_dtypes.bfloat16 if dtype == "bf16" else NP[dtype]


def upload(ctx, values, dtype):
    """`values` (exact in every type) as an array of `dtype`."""
    if dtype == "bf16":
        bits = np.asarray(values, dtype=np.float64).astype(ml_dtypes.bfloat16).view(np.uint16)
        return ctx.array(bits, "bf16")
    return ctx.array(np.asarray(values).astype(NP[dtype]), dtype)


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_astype_matches_numpy_where_both_are_exact(ctx, src, dst, rng):
    # k / 2 for k < 256: exact in every float type (8 significant bits)
    # and in range of every integer type; truncation toward zero as numpy.
    k = rng.integers(0, 256, size=300)
    values = k / 2.0 if src not in ("i32", "u32", "i64", "u64", "u8") else k
    a = upload(ctx, values, src).reshape(3, 100)
    b = a.astype(dst)
    assert b.shape == (3, 100)
    assert b.dtype == dst
    want = np.asarray(values, dtype=np.float64).astype(np_type(src)).astype(np_type(dst))
    got = host(b, dst)
    np.testing.assert_array_equal(got.reshape(-1), np.asarray(want, dtype=got.dtype))


def test_astype_of_a_view_casts_the_views_elements(ctx, rng):
    x = rng.integers(-1000, 1000, size=(7, 9)).astype(np.int64)
    a = ctx.array(x)
    t = a.T.astype("f32")
    assert t.shape == (9, 7)
    np.testing.assert_array_equal(t.numpy(), x.T.astype(np.float32))
    s = a[1:, ::2].astype("f64")
    np.testing.assert_array_equal(s.numpy(), x[1:, ::2].astype(np.float64))


def test_astype_follows_the_rule_where_numpy_leaves_it_undefined(ctx):
    f = ctx.array(np.array([np.nan, 1e10, -1e10, -1.5, np.inf, -np.inf], dtype=np.float32))
    np.testing.assert_array_equal(
        f.astype("i32").numpy(), [0, 2**31 - 1, -(2**31), -1, 2**31 - 1, -(2**31)]
    )
    np.testing.assert_array_equal(f.astype("u8").numpy(), [0, 255, 0, 0, 255, 0])
    i = ctx.array(np.array([-1, 300, 2**40 + 7], dtype=np.int64))
    np.testing.assert_array_equal(i.astype("u8").numpy(), [255, 44, 7])
    np.testing.assert_array_equal(i.astype("u64").numpy(), np.array([2**64 - 1, 300, 2**40 + 7], dtype=np.uint64))
    big = ctx.array(np.array([2**24 + 1, 2**53 + 1], dtype=np.int64))
    np.testing.assert_array_equal(big.astype("f32").numpy(), np.array([2**24, 2**53], dtype=np.float32))


@pytest.mark.parametrize("dtype", ALL)
def test_ones_full_eye_match_numpy(ctx, dtype):
    np.testing.assert_array_equal(host(ctx.ones((2, 3), dtype), dtype), np.ones((2, 3)))
    np.testing.assert_array_equal(host(ctx.full((4, 2), 7, dtype), dtype), np.full((4, 2), 7))
    np.testing.assert_array_equal(host(ctx.eye(4, dtype=dtype), dtype), np.eye(4))
    np.testing.assert_array_equal(host(ctx.eye(3, 5, dtype=dtype), dtype), np.eye(3, 5))
    assert ctx.eye(3, 5, dtype=dtype).shape == (3, 5)


def test_full_refuses_a_value_that_does_not_fit(ctx):
    with pytest.raises((OverflowError, TypeError, ValueError)):
        ctx.full(3, 300, "u8")
    with pytest.raises((OverflowError, TypeError, ValueError)):
        ctx.full(3, 1.5, "i32")


@pytest.mark.parametrize(
    "args",
    [(10,), (2, 11), (0, 1, 0.1), (-3.0, 7.5, 0.5), (10, 0, -1), (5, 5), (1e3, -1e3, -3.7)],
)
def test_arange_matches_numpy(ctx, args):
    got = ctx.arange(*args)
    want = np.arange(*args)
    assert got.dtype == ("i64" if want.dtype == np.int64 else "f64")
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(ctx.arange(*args, dtype="i32").numpy(), want.astype(np.int32))


@pytest.mark.parametrize("args", [(0, 1, 5), (-2, 2, 7), (1, -1, 11), (3, 9, 1), (0, 1, 0), (0, 0.1, 1000), (-7.5, 3.25)])
def test_linspace_matches_numpy(ctx, args):
    np.testing.assert_array_equal(ctx.linspace(*args).numpy(), np.linspace(*args))
    np.testing.assert_array_equal(
        ctx.linspace(*args, dtype="i64").numpy(), np.linspace(*args, dtype=np.int64)
    )


def test_bad_ranges_are_errors(ctx):
    with pytest.raises(unigpu.UnigpuError):
        ctx.arange(0, 1, 0)
    with pytest.raises(unigpu.UnigpuError):
        ctx.arange(float("nan"), 1)
    with pytest.raises(unigpu.UnigpuError):
        ctx.linspace(0, float("inf"), 3)
    with pytest.raises(ValueError):
        ctx.linspace(0, 1, -1)
