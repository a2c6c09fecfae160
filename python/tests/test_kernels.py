"""Kernels: compile, launch, Python CPU implementations, argument checks."""

import numpy as np
import pytest

import unigpu

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

BROKEN = r"""
extern "C" __global__ void broken(float* y) { y[0] = undefined_name; }
"""


def saxpy_on_cpu(a, x, y, n):
    y[:n] = np.float32(a) * x[:n] + y[:n]


def test_compile_on_cpu_lists_kernels(cpu):
    m = cpu.compile(SAXPY)
    assert m.origin == "not_compiled"
    assert m.kernel_names == ["saxpy"]
    k = m.kernel("saxpy")
    assert k.name == "saxpy" and not k.has_cpu_impl
    assert k.params == ["f32", "const f32*", "f32*", "u32"]
    assert repr(k) == "unigpu.Kernel(name='saxpy', params=[\"f32\", \"const f32*\", \"f32*\", \"u32\"], has_cpu_impl=False)"
    # options are accepted (nothing to compile on the CPU)
    cpu.compile(SAXPY, include=["/tmp"], define={"TILE": "32", "FAST": None}, arch=(9, 0), options=["-lineinfo"])


def test_cpu_launch_without_cpu_impl(cpu):
    k = cpu.compile(SAXPY).kernel("saxpy")
    x, y = cpu.zeros(4), cpu.zeros(4)
    with pytest.raises(unigpu.UnsupportedError) as e:
        cpu.launch(k, 1, 256, [2.0, x, y, 4])
    assert str(e.value) == (
        "not supported on the cpu backend: kernel `saxpy` has no CPU implementation; "
        "attach one with Kernel::with_cpu"
    )


def test_no_such_kernel(cpu):
    with pytest.raises(unigpu.KernelArgsError) as e:
        cpu.compile(SAXPY).kernel("nope")
    assert str(e.value).startswith("kernel `nope`: no such kernel in this module (found: saxpy)")
    assert e.value.kernel == "nope"


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_saxpy_with_python_cpu_impl(ctx, rng, n):
    k = ctx.compile(SAXPY).kernel("saxpy").with_cpu(saxpy_on_cpu)
    assert k.has_cpu_impl
    xv = rng.standard_normal(n).astype(np.float32)
    yv = rng.standard_normal(n).astype(np.float32)
    a = np.float32(rng.uniform(-3, 3))
    x, y = ctx.array(xv), ctx.array(yv)
    ctx.launch(k, unigpu.blocks_for(n), 256, [a, x, y, n])
    expected = a * xv + yv
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x.numpy(), xv)  # read-only input untouched
    # on a stream, twice, with plain Python numbers (converted by the declaration)
    s = ctx.stream()
    s.launch(k, (unigpu.blocks_for(n), 1, 1), (256, 1, 1), (1.0, x, y, n))
    s.launch(k, unigpu.blocks_for(n), 256, [1.0, x, y, n])
    s.sync()
    np.testing.assert_allclose(y.numpy(), expected + 2 * xv, rtol=1e-5, atol=1e-5)


def test_python_impl_sees_typed_arguments(cpu):
    seen = {}

    def impl(*args):
        seen["args"] = args
        args[1][:] = args[0] % 256  # writable
        with pytest.raises(ValueError):
            args[2][0] = 1  # read-only (const)

    k = unigpu.Kernel.cpu_only("typed", impl, params=["u64", "u8*", "const bf16*", "f64", "i32"])
    assert k.params == ["u64", "u8*", "const bf16*", "f64", "i32"]
    out, bf = cpu.zeros(5, "u8"), cpu.array(np.array([1.0, -2.0], np.float32), dtype="bf16")
    cpu.launch(k, 1, 1, [2**64 - 2, out, bf, 2.5, -3])
    cpu.sync()
    a = seen["args"]
    assert a[0] == 2**64 - 2 and isinstance(a[0], int)  # exact
    assert a[1].dtype == np.uint8
    assert a[2].dtype == np.uint16 and not a[2].flags.writeable
    np.testing.assert_array_equal(unigpu.bf16_to_float32(a[2]), [1.0, -2.0])
    assert a[3] == 2.5 and isinstance(a[3], float)
    assert a[4] == -3
    np.testing.assert_array_equal(out.numpy(), np.full(5, 254, np.uint8))


def test_cpu_only_without_params_uses_numpy_rules(cpu):
    seen = []
    k = unigpu.Kernel.cpu_only("untyped", lambda *a: seen.append(a))
    assert k.params is None
    x = cpu.zeros(3, "i64")
    cpu.launch(k, 1, 1, [1, 2.5, True, np.float32(1.5), np.uint32(9), x])
    cpu.sync()
    (a,) = seen
    assert a[:5] == (1, 2.5, 1, 1.5, 9)
    assert a[5].flags.writeable  # undeclared arrays count as written


def test_cpu_only_kernel_has_no_cuda_code(cuda):
    k = unigpu.Kernel.cpu_only("host_only", lambda: None)
    with pytest.raises(unigpu.UnsupportedError, match="has no CUDA code"):
        cuda.launch(k, 1, 1, [])


def test_python_exception_comes_back_at_sync(cpu):
    def bad(a, x, y, n):
        raise ZeroDivisionError("nope")

    k = cpu.compile(SAXPY).kernel("saxpy").with_cpu(bad)
    x, y = cpu.zeros(2), cpu.zeros(2)
    s = cpu.stream()
    s.launch(k, 1, 1, [1.0, x, y, 2])  # the launch itself succeeds
    with pytest.raises(unigpu.StreamWorkError) as e:
        s.sync()
    msg = str(e.value)
    assert msg.startswith(
        "kernel `saxpy`: work on a stream failed: the Python CPU implementation raised ZeroDivisionError: nope"
    )
    assert "Traceback" in msg and "in bad" in msg
    assert e.value.kernel == "saxpy"  # the kernel is an attribute, not only text
    s.sync()  # reported once; the stream stays usable


def test_an_array_read_and_written_by_a_launch_is_read_from_a_copy(cpu):
    # The bindings' one rule (as in C): `const float* x` and `float* y` on
    # the same array read it as it was before the launch: y = 2y + y.
    k = cpu.compile(SAXPY).kernel("saxpy").with_cpu(saxpy_on_cpu)
    v = np.arange(8, dtype=np.float32)
    x = cpu.array(v)
    cpu.launch(k, 1, 1, [2.0, x, x, 8])
    cpu.sync()
    np.testing.assert_array_equal(x.numpy(), 3 * v)


def test_launch_argument_errors(cpu):
    k = cpu.compile(SAXPY).kernel("saxpy").with_cpu(saxpy_on_cpu)
    x, y = cpu.zeros(4), cpu.zeros(4)
    with pytest.raises(unigpu.KernelArgsError) as e:
        cpu.launch(k, 1, 1, [2.0, x, y])
    assert str(e.value) == (
        "kernel `saxpy`: declared with 4 parameters (f32, const f32*, f32*, u32), launched with 3 arguments"
    )
    with pytest.raises(unigpu.KernelArgsError) as e:
        cpu.launch(k, 1, 1, [2.0, x, cpu.zeros(4, "f64"), 4])
    assert str(e.value) == "kernel `saxpy`: parameter 2 is declared `f32*` but &mut GpuArray<f64> was passed"
    # One array written twice: refused as in C (UG_INVALID_ARGUMENT), same words.
    with pytest.raises(ValueError) as e:
        cpu.launch(unigpu.Kernel.cpu_only("two_outs", lambda a, b: None), 1, 1, [x, x])
    assert str(e.value) == (
        "`args[0]` and `args[1]` are the same array, and both are written; pass separate arrays"
    )
    with pytest.raises(unigpu.KernelArgsError, match="parameter 1 is declared `const f32\\*` but a f64 value"):
        cpu.launch(k, 1, 1, [2.0, 1.0, y, 4])
    with pytest.raises(OverflowError, match="kernel `saxpy` argument 3: -1 does not fit in u32"):
        cpu.launch(k, 1, 1, [2.0, x, y, -1])
    with pytest.raises(TypeError, match="expected an integer for u32, got float"):
        cpu.launch(k, 1, 1, [2.0, x, y, 4.0])
    with pytest.raises(TypeError, match="expected a unigpu.Array or a number, got str"):
        cpu.launch(unigpu.Kernel.cpu_only("k", print), 1, 1, ["s"])
    for grid in [0, (1, 0), (1, 1, 1, 1), ()]:
        with pytest.raises(ValueError, match="grid must be 1 to 3 dimensions"):
            cpu.launch(k, grid, 1, [2.0, x, y, 4])
    with pytest.raises(TypeError, match="block must be an int"):
        cpu.launch(k, 1, "x", [2.0, x, y, 4])
    with pytest.raises(TypeError, match="args must be a list"):
        cpu.launch(k, 1, 1, 5)
    with pytest.raises(TypeError, match="must be callable"):
        k.with_cpu(3)
    with pytest.raises(ValueError, match="bad kernel parameter"):
        unigpu.Kernel.cpu_only("k", print, params=["float*x"])
    with pytest.raises(ValueError, match="bad kernel parameter"):
        unigpu.Kernel.cpu_only("k", print, params=["const f32"])
    cpu.sync()


def test_read_only_duplicates_are_fine(cpu):
    k = unigpu.Kernel.cpu_only("dup", lambda a, b, out: out.__setitem__(slice(None), a + b),
                               params=["const f32*", "const f32*", "f32*"])
    x = cpu.array(np.arange(4, dtype=np.float32))
    out = cpu.zeros(4)
    cpu.launch(k, 1, 1, [x, x, out])
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(4))


def test_blocks_for():
    assert unigpu.blocks_for(0) == 1
    assert unigpu.blocks_for(256) == 1
    assert unigpu.blocks_for(257) == 2
    assert unigpu.blocks_for(1000, block=128) == 8
    # Issue 25: block=0 returned n instead of raising.
    with pytest.raises(ValueError, match="block must be at least 1"):
        unigpu.blocks_for(10, block=0)
    with pytest.raises(ValueError, match="more than a launch takes"):
        unigpu.blocks_for(2**31 * 256, block=256)
    assert unigpu.blocks_for(2**31 - 1, block=1) == 2**31 - 1


def test_cuda_compile_and_launch(cuda, rng):
    m = cuda.compile(SAXPY)
    assert m.origin in ("compiled", "memory_cache", "disk_cache")
    k = m.kernel("saxpy")
    n = 100_000
    xv = rng.standard_normal(n).astype(np.float32)
    yv = rng.standard_normal(n).astype(np.float32)
    x, y = cuda.array(xv), cuda.array(yv)
    cuda.launch(k, unigpu.blocks_for(n), 256, [2.0, x, y, n])
    np.testing.assert_allclose(y.numpy(), np.float32(2.0) * xv + yv, rtol=1e-6, atol=1e-6)
    assert cuda.compile(SAXPY).origin == "memory_cache"


def test_cuda_compile_error(cuda):
    with pytest.raises(unigpu.CompileError) as e:
        cuda.compile(BROKEN)
    assert str(e.value).startswith("compilation failed:\n")
    assert "undefined_name" in e.value.log
