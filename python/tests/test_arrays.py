"""Arrays: numpy round trips of every dtype, constructors, copies."""

import numpy as np
import pytest

import unigpu
from conftest import ALL, FLOATS, INTS, NP, random_values


def bits(a):
    """Bitwise view, so NaN payloads and -0.0 compare exactly."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


@pytest.mark.parametrize("dtype", ALL)
def test_round_trip_every_dtype(ctx, rng, dtype):
    data, _ = random_values(rng, dtype, 1013, -1e3, 1e3)
    if dtype in ("f32", "f64", "f16"):
        data[:4] = [np.inf, -np.inf, np.nan, -0.0]
    a = ctx.array(data, dtype=dtype)
    assert len(a) == a.size == 1013
    assert a.shape == (1013,) and a.ndim == 1
    assert a.dtype == dtype
    assert a.nbytes == 1013 * np.dtype(NP[dtype]).itemsize
    back = a.numpy()
    assert back.dtype == NP[dtype]
    assert back.flags.writeable and back.flags.c_contiguous
    np.testing.assert_array_equal(bits(back), bits(data))


@pytest.mark.parametrize("dtype", [d for d in ALL if d != "bf16"])  # numpy has no bf16
def test_dtype_inferred_from_numpy(cpu, rng, dtype):
    data, _ = random_values(rng, dtype, 64)
    a = cpu.array(data)
    assert a.dtype == dtype
    np.testing.assert_array_equal(a.numpy(), data)


@pytest.mark.parametrize(
    "name,expected",
    [("f32", "f32"), ("float32", "f32"), (np.float32, "f32"), (np.dtype("float64"), "f64"),
     ("float16", "f16"), ("bfloat16", "bf16"), ("bf16", "bf16"), (np.int32, "i32"),
     ("uint32", "u32"), (np.int64, "i64"), ("u64", "u64"), (np.uint8, "u8"), ("double", "f64"),
     (float, "f64")],
)
def test_dtype_spellings(cpu, name, expected):
    assert cpu.zeros(3, name).dtype == expected


@pytest.mark.parametrize("dtype", ALL)
def test_zeros_and_empty(ctx, dtype):
    z = ctx.zeros(257, dtype)
    assert z.dtype == dtype and len(z) == 257
    assert not z.numpy().any()
    e = ctx.empty(33, dtype)
    assert e.dtype == dtype and len(e) == 33 and e.numpy().shape == (33,)
    assert len(ctx.zeros(0, dtype)) == 0
    assert ctx.zeros(0, dtype).numpy().shape == (0,)


def test_default_dtype_is_the_configs(cpu):
    assert cpu.dtype == "f32"
    assert cpu.zeros(4).dtype == "f32"


def test_conversion_on_upload(cpu, rng):
    v = rng.uniform(-100, 100, 100)
    a = cpu.array(v, dtype="f32")  # f64 data rounded to f32
    np.testing.assert_array_equal(a.numpy(), v.astype(np.float32))
    i = cpu.array(np.arange(10), dtype="u8")
    np.testing.assert_array_equal(i.numpy(), np.arange(10, dtype=np.uint8))
    assert cpu.array([1.5, 2.5]).dtype == "f64"  # numpy's choice for Python floats
    assert cpu.array([1, 2]).dtype == "i64"


INT_RANGES = {
    "u8": (0, 2**8 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "u32": (0, 2**32 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u64": (0, 2**64 - 1),
}


@pytest.mark.parametrize("dtype", sorted(INT_RANGES))
def test_integer_conversion_refuses_values_that_do_not_fit(cpu, rng, dtype):
    """Issue 25: numpy's astype wrapped 300 into 44 in a u8 array."""
    lo, hi = INT_RANGES[dtype]
    # The extremes fit, exactly, from Python ints and from numpy arrays.
    fits = [lo, hi, 0, int(rng.integers(0, 100))]
    assert cpu.array(fits, dtype=dtype).numpy().tolist() == fits
    bad_values = [hi + 1, lo - 1, 300 if dtype == "u8" else hi * 2]
    for bad in bad_values:
        # From Python ints (numpy converts them, exactly, and refuses).
        data = [int(rng.integers(0, 100)), bad]
        with pytest.raises(OverflowError, match=f"does not fit in {dtype}"):
            cpu.array(data, dtype=dtype)
        a = cpu.zeros(2, dtype)
        with pytest.raises(OverflowError, match=f"does not fit in {dtype}"):
            a.upload(data)
        np.testing.assert_array_equal(a.numpy(), [0, 0])  # nothing written
        # From a numpy array of another integer dtype, where numpy holds it.
        if -(2**63) <= bad < 2**63 or 0 <= bad < 2**64:
            src = np.array([1, bad], np.int64 if bad < 2**63 else np.uint64)
            if src.dtype.name != {"u8": "uint8", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64"}[dtype]:
                with pytest.raises(OverflowError, match=f"{bad} does not fit in {dtype}"):
                    cpu.array(src, dtype=dtype)
    for bad in [float("nan"), float("inf"), -float("inf"), float(hi) * 2]:
        with pytest.raises(OverflowError, match=f"does not fit in {dtype}"):
            cpu.array(np.array([1.0, bad]), dtype=dtype)
        with pytest.raises(OverflowError, match=f"does not fit in {dtype}"):
            cpu.array([1.0, bad], dtype=dtype)
    with pytest.raises(OverflowError, match="300 does not fit in u8"):
        cpu.array(np.array([1, 300], np.int16), dtype="u8")


def test_bf16_from_floats_rounds_to_nearest_even(cpu, rng):
    v = rng.standard_normal(1000).astype(np.float32)
    v[:3] = [np.inf, -np.inf, 0.0]
    a = cpu.array(v, dtype="bf16")
    assert a.dtype == "bf16"
    np.testing.assert_array_equal(a.numpy(), unigpu.float32_to_bf16(v))
    # and the helper matches unigpu's own rounding on f64 input too
    np.testing.assert_array_equal(cpu.array(v.astype(np.float64), dtype="bf16").numpy(),
                                  unigpu.float32_to_bf16(v))


def test_bf16_from_ml_dtypes(cpu, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    v = rng.standard_normal(100).astype(ml_dtypes.bfloat16)
    a = cpu.array(v)
    assert a.dtype == "bf16"
    np.testing.assert_array_equal(a.numpy(), v.view(np.uint16))
    np.testing.assert_array_equal(a.numpy().view(ml_dtypes.bfloat16), v)


def test_uint16_data_is_not_a_dtype_of_its_own(cpu):
    # uint16 is taken as bf16 bits only when asked for
    with pytest.raises(TypeError, match="unsupported dtype"):
        cpu.array(np.zeros(3, np.uint16))
    assert cpu.array(np.zeros(3, np.uint16), dtype="bf16").dtype == "bf16"


def test_uploads_keep_the_shape_in_c_order(cpu, rng):
    m = rng.standard_normal((6, 7)).astype(np.float32)
    np.testing.assert_array_equal(cpu.array(m).numpy(), m)
    t = cpu.array(m.T)  # Fortran order in, a C-order copy with the shape
    assert t.shape == (7, 6) and t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), m.T)
    np.testing.assert_array_equal(cpu.array(m[::2, 1::3]).numpy(), m[::2, 1::3])
    big_endian = np.arange(5, dtype=">f4")
    np.testing.assert_array_equal(cpu.array(big_endian, dtype="f32").numpy(), np.arange(5))
    scalar = cpu.array(np.float32(3.0))
    assert scalar.shape == () and scalar.size == 1


def test_upload_into_existing(ctx, rng):
    a = ctx.zeros(100, "f32")
    v = rng.standard_normal(100).astype(np.float32)
    assert a.upload(v) is None
    np.testing.assert_array_equal(a.numpy(), v)
    a.upload(v.astype(np.float64))  # converted to the array's dtype
    np.testing.assert_array_equal(a.numpy(), v)
    with pytest.raises(unigpu.SizeMismatchError) as e:
        a.upload(v[:99])
    assert str(e.value) == "size mismatch in Array.upload: expected 100 elements, got 99"
    assert (e.value.expected, e.value.actual) == (100, 99)


@pytest.mark.parametrize("dtype", ALL)
def test_copy_to(ctx, rng, dtype):
    data, _ = random_values(rng, dtype, 300)
    a = ctx.array(data, dtype=dtype)
    b = ctx.zeros(300, dtype)
    assert a.copy_to(b) is None
    np.testing.assert_array_equal(b.numpy(), data)
    a.copy_to(a)  # a no-op


def test_copy_to_mismatches(cpu):
    a = cpu.zeros(3, "f32")
    with pytest.raises(unigpu.SizeMismatchError):
        a.copy_to(cpu.zeros(4, "f32"))
    with pytest.raises(unigpu.DTypeMismatchError) as e:
        a.copy_to(cpu.zeros(3, "f64"))
    assert str(e.value) == "dtype mismatch in AnyArray::copy_to (dst): expected f32, got f64"


@pytest.mark.parametrize("dtype", ["f32", "bf16", "u64"])
def test_to_context(ctx, rng, dtype):
    data, _ = random_values(rng, dtype, 500)
    a = ctx.array(data, dtype=dtype)
    other = unigpu.Context.new("cpu")
    b = a.to_context(other)
    assert b.context.backend == "cpu" and b.dtype == dtype
    np.testing.assert_array_equal(b.numpy(), data)
    c = b.to_context(ctx)
    assert c.context.backend == ctx.backend
    np.testing.assert_array_equal(c.numpy(), data)


def test_numpy_protocol(cpu):
    a = cpu.array(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(a), [0, 1, 2, 3])
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    if int(np.__version__.split(".")[0]) >= 2:
        with pytest.raises(ValueError, match="without a copy"):
            np.asarray(a, copy=False)


def test_numpy_result_is_independent(cpu):
    a = cpu.array(np.ones(4, np.float32))
    h = a.numpy()
    h[:] = 7
    np.testing.assert_array_equal(a.numpy(), np.ones(4))


def test_repr_and_context(cpu):
    a = cpu.zeros(3, "i32")
    assert repr(a) == "unigpu.Array(dtype='i32', shape=[3], device='cpu:0')"
    assert repr(a[1:]) == "unigpu.Array(dtype='i32', shape=[2], device='cpu:0', view)"
    assert a.context.backend == "cpu" and a.context.device_id == 0
    assert a.itemsize == 4


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_many_arrays_live_and_die(cpu, dtype):
    # Arrays are freed when the last reference goes; nothing leaks or crashes.
    for _ in range(200):
        a = cpu.zeros(1000, dtype)
        del a
