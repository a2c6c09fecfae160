"""Errors: each facade error raises its own class with the Rust message;
bad arguments raise TypeError/ValueError; nothing crashes."""

import os
import re

import numpy as np
import pytest

import unigpu
from conftest import GPU

CLASSES = [
    "OutOfMemoryError", "InvalidDeviceError", "BackendUnavailableError", "CompileError",
    "KernelArgsError", "UnsupportedError", "SizeMismatchError", "DTypeMismatchError",
    "ContextMismatchError", "ConfigError", "StreamWorkError", "TorchError", "DriverError",
    "DlpackError", "ImageError", "CollectiveError",
]


@pytest.mark.parametrize("name", CLASSES)
def test_hierarchy(name):
    cls = getattr(unigpu, name)
    assert issubclass(cls, unigpu.UnigpuError) and cls is not unigpu.UnigpuError
    assert issubclass(unigpu.UnigpuError, Exception)
    assert cls.__module__ == "unigpu" and cls.__doc__


def test_invalid_device():
    with pytest.raises(unigpu.InvalidDeviceError) as e:
        unigpu.Context.new("cpu", 1)
    assert str(e.value) == "cpu device 1 does not exist (1 available)"
    assert (e.value.backend, e.value.asked, e.value.available) == ("cpu", 1, 1)


def test_invalid_cuda_device():
    # Without CUDA: the backend is unavailable; with it, device 1000 does not exist.
    with pytest.raises((unigpu.InvalidDeviceError, unigpu.BackendUnavailableError)) as e:
        unigpu.Context.new("cuda", 1000)
    if isinstance(e.value, unigpu.InvalidDeviceError):
        assert re.fullmatch(r"cuda device 1000 does not exist \(\d+ available\)", str(e.value))


@pytest.mark.skipif(GPU, reason="this machine has CUDA")
def test_backend_unavailable_without_cuda():
    with pytest.raises(unigpu.BackendUnavailableError) as e:
        unigpu.Context.new("cuda")
    assert str(e.value).startswith("the cuda backend is unavailable: ")
    assert e.value.backend == "cuda" and e.value.reason in str(e.value)
    with pytest.raises(unigpu.BackendUnavailableError):
        unigpu.devices("cuda")


def test_torch_backend_not_built():
    with pytest.raises(unigpu.BackendUnavailableError, match="without the `torch` feature"):
        unigpu.Context.new("torch")


def test_unknown_backend_name():
    with pytest.raises(ValueError, match='unknown backend "gpu"; expected one of: torch, cuda, vulkan, cpu'):
        unigpu.Context.new("gpu")
    with pytest.raises(ValueError):
        unigpu.devices("metal")


@pytest.mark.parametrize("bad", ["f7", "float8", "int8", np.int16, np.bool_, np.complex64, "float128x", 3, None])
def test_bad_dtypes(cpu, bad):
    if bad is None:
        assert cpu.zeros(2, None).dtype == "f32"  # None = the default
        return
    with pytest.raises(TypeError, match="unsupported dtype .*: unigpu arrays hold f32, f64, f16, bf16, i32, u32, i64, u64 and u8"):
        cpu.zeros(2, bad)


@pytest.mark.parametrize("data", [np.zeros(3, np.int8), np.zeros(3, bool), np.zeros(3, np.complex128), ["a", "b"]])
def test_bad_host_dtypes(cpu, data):
    with pytest.raises(TypeError, match="unsupported dtype"):
        cpu.array(data)


def test_bad_sizes(cpu):
    with pytest.raises(ValueError, match="array length must be >= 0, got -1"):
        cpu.zeros(-1)
    with pytest.raises(ValueError):
        cpu.empty(-5, "f64")
    with pytest.raises((OverflowError, TypeError)):
        cpu.zeros(2**70)
    with pytest.raises(TypeError):
        cpu.zeros("3")


def test_out_of_memory(cpu):
    n = 2**61  # elements of f32: 2^63 bytes
    with pytest.raises(unigpu.OutOfMemoryError) as e:
        cpu.zeros(n, "f32")
    assert re.fullmatch(r"out of memory: asked for \d+ bytes, \d+ bytes free", str(e.value))
    assert e.value.requested == 4 * n and e.value.free < e.value.requested
    # the context stays usable
    assert len(cpu.zeros(10)) == 10


def test_out_of_memory_cuda(cuda):
    with pytest.raises(unigpu.OutOfMemoryError):
        cuda.zeros(2**50, "f64")
    assert len(cuda.zeros(10)) == 10


def test_config_files(tmp_path, monkeypatch):
    monkeypatch.delenv("UNIGPU_BACKEND", raising=False)
    monkeypatch.delenv("UNIGPU_DEVICE", raising=False)
    good = tmp_path / "unigpu.toml"
    good.write_text('backend = "cpu"\ndtype = "f64"\n')
    ctx = unigpu.Context.from_config(good)
    assert ctx.backend == "cpu" and ctx.dtype == "f64"
    assert ctx.zeros(2).dtype == "f64"
    assert ctx.fallback_chain[-1] == ("cpu", "chosen", None)
    ctx = unigpu.Context.from_config(str(good))  # str or PathLike

    bad = tmp_path / "bad.toml"
    bad.write_text('backend = "gpu"\n')
    with pytest.raises(unigpu.ConfigError) as e:
        unigpu.Context.from_config(bad)
    assert str(e.value) == (
        f'{bad}:1:11: key `backend`: "gpu" is not allowed; allowed values: "auto", "torch", "cuda", "vulkan", "cpu"'
    )
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('backend = "cpu"\ncolour = "red"\n')
    with pytest.raises(unigpu.ConfigError, match="colour"):
        unigpu.Context.from_config(unknown)
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("backend = \n")
    with pytest.raises(unigpu.ConfigError, match=re.escape(str(syntax))):
        unigpu.Context.from_config(syntax)
    conflict = tmp_path / "conflict.toml"
    conflict.write_text('backend = "cpu"\ndevice = "cuda:1"\n')
    with pytest.raises(unigpu.ConfigError):
        unigpu.Context.from_config(conflict)
    with pytest.raises(unigpu.ConfigError):
        unigpu.Context.from_config(tmp_path / "missing.toml")


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv("UNIGPU_BACKEND", "gpu")
    with pytest.raises(unigpu.ConfigError) as e:
        unigpu.Context()
    assert str(e.value).startswith("environment variable UNIGPU_BACKEND: key `backend`:")
    monkeypatch.setenv("UNIGPU_BACKEND", "cpu")
    monkeypatch.setenv("UNIGPU_DEVICE", "cuda:one")
    with pytest.raises(unigpu.ConfigError, match="UNIGPU_DEVICE"):
        unigpu.Context()
    monkeypatch.delenv("UNIGPU_DEVICE")
    assert unigpu.Context().backend == "cpu"


def test_size_and_dtype_mismatch_in_ops(cpu):
    a, b = cpu.zeros(3, "f32"), cpu.zeros(4, "f32")
    with pytest.raises(unigpu.SizeMismatchError) as e:
        unigpu.add(a, b)
    assert re.fullmatch(r"size mismatch in \S.*: expected 3 elements, got 4", str(e.value))
    with pytest.raises(unigpu.DTypeMismatchError) as e:
        unigpu.add(a, cpu.zeros(3, "f64"))
    assert str(e.value) == "dtype mismatch in add (b): expected f32, got f64"
    assert (e.value.expected, e.value.actual) == ("f32", "f64")
    with pytest.raises(unigpu.SizeMismatchError):
        unigpu.matmul(a, a, 2, 2, 2)
    with pytest.raises(unigpu.SizeMismatchError, match="max of an empty array"):
        unigpu.max(cpu.zeros(0))


def test_math_ops_refuse_integers(cpu):
    x = cpu.zeros(3, "i32")
    with pytest.raises(unigpu.UnsupportedError) as e:
        unigpu.add(x, x)
    assert str(e.value) == (
        "not supported on the cpu backend: add on i32 arrays "
        "(the built-in math ops take f32, f64, f16 and bf16)"
    )
    assert e.value.backend == "cpu"


def test_bad_scalars(cpu):
    x = cpu.zeros(3, "u8")
    with pytest.raises(OverflowError, match="fill value: 256 does not fit in u8"):
        unigpu.fill(x, 256)
    with pytest.raises(OverflowError):
        unigpu.fill(x, -1)
    with pytest.raises(TypeError, match="fill value: expected an integer for u8, got float"):
        unigpu.fill(x, 1.5)
    with pytest.raises(TypeError, match="expected a real number for f32, got str"):
        unigpu.scale("2", cpu.zeros(3))
    with pytest.raises(TypeError):
        unigpu.add(cpu.zeros(3), np.zeros(3, np.float32))  # numpy arrays are not Arrays


def test_context_mismatch(cpu, cuda):
    a, b = cpu.zeros(3), cuda.zeros(3)
    with pytest.raises(unigpu.ContextMismatchError):
        unigpu.add(a, b)
    with pytest.raises(unigpu.ContextMismatchError):
        a.copy_to(b)


def test_errors_are_catchable_as_base(cpu):
    with pytest.raises(unigpu.UnigpuError):
        cpu.zeros(3).copy_to(cpu.zeros(4))


def test_no_gpu_means_cpu_fallback(monkeypatch):
    monkeypatch.delenv("UNIGPU_BACKEND", raising=False)
    monkeypatch.delenv("UNIGPU_DEVICE", raising=False)
    monkeypatch.delenv("UNIGPU_CONFIG", raising=False)
    ctx = unigpu.Context()
    chain = ctx.fallback_chain
    assert [b for b, _, _ in chain] == ["torch", "cuda", "vulkan", "cpu"]
    assert [o for _, o, _ in chain].count("chosen") == 1
    assert chain[0][1] == "skipped" and "torch" in chain[0][2]
    if not GPU and ctx.backend == "cpu":
        assert chain[1][1] == "skipped" and chain[1][2]
        # No Vulkan loader, no adapter, or only a software one: said so.
        assert chain[2][1] == "skipped" and chain[2][2]
    if GPU:
        assert ctx.backend == "cuda"


def test_devices():
    cpu_devices = unigpu.devices("cpu")
    assert len(cpu_devices) == 1
    d = cpu_devices[0]
    assert d.backend == "cpu" and d.ordinal == 0 and d.name
    assert d.compute_capability is None and 0 < d.memory_free <= d.memory_total
    assert unigpu.backends() == ["torch", "cuda", "vulkan", "cpu"]
    assert unigpu.dtypes() == ["f32", "f64", "f16", "bf16", "i32", "u32", "i64", "u64", "u8"]
    info = unigpu.Context.new("cpu").device_info()
    assert info.name == d.name
    free, total = unigpu.Context.new("cpu").memory_info()
    assert 0 < free <= total


def test_cuda_devices(cuda):
    ds = unigpu.devices("cuda")
    assert ds and ds[0].backend == "cuda" and ds[0].compute_capability >= (7, 0)
    assert cuda.device_info().name == ds[0].name
