"""``unigpu.random``: random numbers on the device, numpy-like.

    import unigpu
    ctx = unigpu.Context()
    rng = unigpu.random.default_rng(42)              # a unigpu.random.Generator
    u = rng.uniform(ctx, (3, 4))                     # [0, 1), float32
    z = rng.normal(ctx, 1000, mean=0.0, std=2.0)     # the stream goes on
    k = unigpu.random.randint(ctx, 10, 0, 6, seed=7) # one call, its own seed

``Generator`` is ``unigpu.Generator`` (Philox 4x32-10, docs/random.md):
the same seed, offset, shape and dtype give the same bits as Rust's
``unigpu::random::Generator`` and C's ``ug_generator`` on every backend.
The functions ``uniform``, ``normal`` and ``randint`` take the
generator's arguments plus ``seed=``: each is
``default_rng(seed).<function>(...)``, so the same seed gives the same
numbers. ``seed=None`` (here and in ``default_rng``) draws a fresh 64-bit
seed from the operating system, as numpy's ``default_rng()`` does.
"""

from __future__ import annotations

import operator as _operator
import secrets as _secrets

from ._unigpu import Generator

__all__ = ["Generator", "default_rng", "normal", "randint", "uniform"]


def _seed(seed):
    """A seed argument as the generator's u64, or a fresh one for None."""
    if seed is None:
        return _secrets.randbits(64)
    if isinstance(seed, bool):
        raise TypeError("seed must be an int (or None), not bool")
    seed = _operator.index(seed)  # TypeError for floats, strings, ...
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def default_rng(seed=None):
    """A new ``Generator`` of ``seed`` (an int in [0, 2**64); None: a
    fresh one from the OS) at offset 0."""
    return Generator(_seed(seed))


def uniform(ctx, shape, dtype=None, *, seed=None):
    """An array of ``shape`` of numbers uniform in [0, 1), of ``dtype``
    (f32, f64, f16, bf16; f32 when None) in ``ctx``:
    ``default_rng(seed).uniform(ctx, shape, dtype)``."""
    return default_rng(seed).uniform(ctx, shape, dtype=dtype)


def normal(ctx, shape, mean=0.0, std=1.0, dtype=None, *, seed=None):
    """An array of ``shape`` of normal numbers of mean ``mean`` and
    standard deviation ``std`` (f32 when ``dtype`` is None):
    ``default_rng(seed).normal(ctx, shape, mean, std, dtype)``."""
    return default_rng(seed).normal(ctx, shape, mean=mean, std=std, dtype=dtype)


def randint(ctx, shape, low, high, dtype=None, *, seed=None):
    """An array of ``shape`` of integers uniform in [low, high), of
    ``dtype`` (i32 or i64; i32 when None):
    ``default_rng(seed).randint(ctx, shape, low, high, dtype)``."""
    return default_rng(seed).randint(ctx, shape, low, high, dtype=dtype)
