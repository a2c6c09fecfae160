"""`unigpu.random` (issue 28): numpy-like `default_rng` and the one-call
`uniform` / `normal` / `randint` with `seed=`. Uniform floats are checked
bit for bit against Philox 4x32-10 computed here in numpy (itself checked
against Random123's known-answer vector); the rest against the generator
they are defined by, `Generator(seed)`."""

import numpy as np
import pytest

import unigpu
import unigpu.random

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters, key):
    """Philox 4x32-10 of each row of `counters` (n x 4, uint64 holding
    u32s) under `key` (k0, k1): n x 4 words."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0, p1 = M0 * c[0], M1 * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & MASK
        hi1, lo1 = p1 >> np.uint64(32), p1 & MASK
        c = [hi1 ^ c[1] ^ np.uint64(k0), lo1, hi0 ^ c[3] ^ np.uint64(k1), lo0]
    return np.stack(c, axis=1)


def test_the_reference_is_philox():
    # Random123's kat_vectors: philox4x32 10, counter 0, key 0.
    got = philox4x32_10(np.zeros((1, 4), np.uint64), (0, 0))[0]
    assert [int(w) for w in got] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def uniform_f32_reference(seed, n):
    """docs/random.md: block b is Philox of counter (b, 0, 0, 0) (b < 2^32
    here) under key (seed & 0xffffffff, seed >> 32); word w gives
    (w >> 8) * 2^-24, four per block, in order, from offset 0."""
    blocks = (n + 3) // 4
    counters = np.zeros((blocks, 4), np.uint64)
    counters[:, 0] = np.arange(blocks, dtype=np.uint64)
    words = philox4x32_10(counters, (seed & 0xFFFFFFFF, seed >> 32)).reshape(-1)[:n]
    return ((words >> np.uint64(8)).astype(np.float64) * 2.0**-24).astype(np.float32)


def test_uniform_with_a_seed_is_philox_bit_for_bit(ctx):
    rng = np.random.default_rng()
    for _ in range(4):
        seed = int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2))
        shape = (int(rng.integers(1, 9)), int(rng.integers(1, 40)))
        got = unigpu.random.uniform(ctx, shape, seed=seed).numpy()
        assert got.shape == shape and got.dtype == np.float32
        want = uniform_f32_reference(seed, shape[0] * shape[1]).reshape(shape)
        assert got.tobytes() == want.tobytes(), seed
        # default_rng is the same stream, and goes on from where it stopped.
        g = unigpu.random.default_rng(seed)
        assert isinstance(g, unigpu.random.Generator) and g.seed == seed and g.offset == 0
        assert g.uniform(ctx, shape).numpy().tobytes() == want.tobytes()
        more = g.uniform(ctx, 8).numpy()
        start = 4 * ((shape[0] * shape[1] + 3) // 4)
        want_more = uniform_f32_reference(seed, start + 8)[start:]
        assert more.tobytes() == want_more.tobytes()


def test_the_functions_are_the_generator_of_their_seed(ctx):
    rng = np.random.default_rng()
    seed = int(rng.integers(0, 2**63))
    for dtype in ["f32", "f64", "f16", "bf16"]:
        a = unigpu.random.normal(ctx, (5, 7), 1.5, 0.5, dtype=dtype, seed=seed).numpy()
        b = unigpu.Generator(seed).normal(ctx, (5, 7), mean=1.5, std=0.5, dtype=dtype).numpy()
        assert a.tobytes() == b.tobytes(), dtype
        u = unigpu.random.uniform(ctx, 33, dtype, seed=seed).numpy()
        assert u.tobytes() == unigpu.Generator(seed).uniform(ctx, 33, dtype=dtype).numpy().tobytes()
    for dtype in [None, "i32", "i64"]:
        k = unigpu.random.randint(ctx, (4, 9), -3, 11, dtype, seed=seed).numpy()
        want = unigpu.Generator(seed).randint(ctx, (4, 9), -3, 11, dtype=dtype).numpy()
        assert k.dtype == want.dtype and np.array_equal(k, want)
        assert k.min() >= -3 and k.max() < 11
    # The module is the package's attribute, and Generator the same class.
    assert unigpu.random.Generator is unigpu.Generator
    assert "random" in unigpu.__all__


def test_no_seed_draws_a_fresh_one(ctx):
    a = unigpu.random.uniform(ctx, 64).numpy()
    b = unigpu.random.uniform(ctx, 64).numpy()
    assert not np.array_equal(a, b)
    assert (a >= 0).all() and (a < 1).all()
    g1, g2 = unigpu.random.default_rng(), unigpu.random.default_rng()
    assert g1.seed != g2.seed and 0 <= g1.seed < 2**64


def test_bad_seeds_are_refused_as_numpy_refuses_them(ctx):
    for bad in [-1, 2**64]:
        with pytest.raises(ValueError, match="seed"):
            unigpu.random.default_rng(bad)
        with pytest.raises(ValueError, match="seed"):
            unigpu.random.uniform(ctx, 3, seed=bad)
    for bad in [1.5, "7", True]:
        with pytest.raises(TypeError):
            unigpu.random.default_rng(bad)
    assert unigpu.random.default_rng(np.uint64(2**64 - 1)).seed == 2**64 - 1
    # The generator's own errors come through.
    with pytest.raises(unigpu.KernelArgsError):
        unigpu.random.randint(ctx, 3, 5, 5, seed=1)
