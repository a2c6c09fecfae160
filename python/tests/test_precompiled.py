"""Precompiled kernels (`unigpu.Module.load`): PTX, CUBIN, fatbin and SPIR-V.
On the CPU backend, the errors (the same policy and words as the C API's
`ug_module_load`, both from unigpu::binding); on CUDA (UNIGPU_TEST_GPU=1),
a hand-written PTX saxpy and the fatbin fixture launched and checked
element by element against numpy."""

import pathlib

import numpy as np
import pytest

import unigpu

# saxpy(float a, const float* x, float* y, unsigned n), as nvcc writes it for
# sm_52 and PTX 7.0 (crates/unigpu/tests/data/saxpy.ptx): any driver compiles it.
SAXPY_PTX = (
    pathlib.Path(__file__).resolve().parents[2] / "crates/unigpu/tests/data/saxpy.ptx"
).read_text()
# axpy, the same signature: machine code for sm_90 and PTX for compute_90.
AXPY_FATBIN = pathlib.Path(__file__).resolve().parents[2] / "crates/unigpu/tests/data/axpy.fatbin"

SAXPY_PARAMS = ["f32", "const f32*", "f32*", "u32"]

# An ELF header for the CUDA machine (EM_CUDA), no sections: a well-formed CUBIN.
EMPTY_CUBIN = b"\x7fELF\x02\x01" + bytes(12) + (190).to_bytes(2, "little") + bytes(44)
# A fatbin header: magic 0xBA55ED50, version 1, header size 16, no payload.
EMPTY_FATBIN = (0xBA55ED50).to_bytes(4, "little") + bytes([1, 0, 16, 0]) + bytes(8)
# A SPIR-V header: magic, version 1.0, no instructions.
SPIRV_HEADER = b"".join(w.to_bytes(4, "little") for w in [0x07230203, 0x00010000, 0, 1, 0])


def test_cuda_code_on_the_cpu_backend_is_unsupported(cpu):
    for data, kind, name in [
        (SAXPY_PTX, "ptx", "PTX"),
        (SAXPY_PTX.encode(), "PTX", "PTX"),
        (EMPTY_CUBIN, "cubin", "CUBIN"),
        (bytearray(EMPTY_FATBIN), "fatbin", "fatbin"),
    ]:
        with pytest.raises(unigpu.UnsupportedError) as e:
            unigpu.Module.load(cpu, data, kind)
        assert "a CUDA image cannot run" in str(e.value)
        assert "give the kernel a CPU implementation" in str(e.value)
        assert name in str(e.value)
        assert e.value.backend == "cpu"


def test_spirv_runs_on_vulkan_only(cpu):
    with pytest.raises(unigpu.UnsupportedError, match="SPIR-V: a compute shader runs on the vulkan backend only"):
        unigpu.Module.load(cpu, SPIRV_HEADER, "spirv")


def test_code_that_is_not_what_its_kind_says_is_an_image_error(cpu):
    with pytest.raises(unigpu.ImageError, match="look like a PTX") as e:
        unigpu.Module.load(cpu, SAXPY_PTX, "cubin")
    assert e.value.format == "CUBIN"
    assert isinstance(e.value, unigpu.UnigpuError)
    with pytest.raises(unigpu.ImageError, match="look like a CUBIN"):
        unigpu.Module.load(cpu, EMPTY_CUBIN, "fatbin")
    with pytest.raises(unigpu.ImageError, match=r"\.version"):
        unigpu.Module.load(cpu, "// nothing\n", "ptx")


def test_declarations_are_checked_against_the_ptx_before_loading(cpu):
    # These agree with the PTX (`.f32`, `.u64`, `.u64`, `.u32`): past the
    # checks, the CPU backend then refuses the code itself.
    for params in [
        SAXPY_PARAMS,
        ["f32", "64-bit integer or pointer", "64-bit integer", "32-bit integer"],
        ["f32", "void*", "const void*", "i32"],
    ]:
        with pytest.raises(unigpu.UnsupportedError):
            unigpu.Module.load(cpu, SAXPY_PTX, "ptx", declare={"saxpy": params})
    # A width-only byte value says less than PTX's integer: not a refinement.
    with pytest.raises(unigpu.KernelArgsError, match="parameter 1 is declared `8-byte value or pointer`"):
        unigpu.Module.load(cpu, SAXPY_PTX, "ptx", declare={"saxpy": ["f32", "8-byte value", "f32*", "u32"]})
    with pytest.raises(unigpu.KernelArgsError, match="declared with 3 parameters") as e:
        unigpu.Module.load(cpu, SAXPY_PTX, "ptx", declare={"saxpy": SAXPY_PARAMS[:3]})
    assert e.value.kernel == "saxpy"
    with pytest.raises(unigpu.KernelArgsError, match="parameter 3 is declared `f64`"):
        unigpu.Module.load(cpu, SAXPY_PTX, "ptx", declare={"saxpy": ["f32", "f32*", "f32*", "f64"]})
    with pytest.raises(unigpu.KernelArgsError, match=r"the PTX has no such kernel \(it has: saxpy\)"):
        unigpu.Module.load(cpu, SAXPY_PTX, "ptx", declare={"nope": SAXPY_PARAMS})


def test_malformed_arguments(cpu):
    with pytest.raises(ValueError, match="not one of"):
        unigpu.Module.load(cpu, SAXPY_PTX, "elf")
    with pytest.raises(TypeError, match="bytes, bytearray or str"):
        unigpu.Module.load(cpu, 42, "ptx")
    for bad in ["float", "f32**", "12-bit integer", "0-byte value", "const f32"]:
        with pytest.raises(ValueError, match="bad kernel parameter"):
            unigpu.Module.load(cpu, SAXPY_PTX, "ptx", declare={"saxpy": [bad] * 4})


def run_saxpy(ctx, k, rng, n):
    a = float(np.float32(rng.uniform(-3, 3)))
    x = rng.uniform(-10, 10, n).astype(np.float32)
    y0 = rng.uniform(-10, 10, n).astype(np.float32)
    dx, dy = ctx.array(x), ctx.array(y0)
    ctx.launch(k, unigpu.blocks_for(n), 256, [a, dx, dy, n])
    want = (np.float64(a) * x.astype(np.float64) + y0).astype(np.float32)
    np.testing.assert_allclose(dy.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
def test_ptx_saxpy_on_cuda(cuda, rng):
    m = unigpu.Module.load(cuda, SAXPY_PTX, "ptx")
    assert m.kernel_names == ["saxpy"]
    assert m.origin == "precompiled"
    k = m.kernel("saxpy")
    # What PTX says: widths, a pointer being a 64-bit integer.
    assert k.params == ["f32", "64-bit integer or pointer", "64-bit integer or pointer", "32-bit integer"]
    for n in [1, 257, int(rng.integers(1, 1 << 16))]:
        run_saxpy(cuda, k, rng, n)
    x, y = cuda.zeros(8, "f32"), cuda.zeros(8, "f32")
    with pytest.raises(unigpu.KernelArgsError, match="parameter 3"):
        cuda.launch(k, 1, 256, [1.0, x, y, 2.5])
    with pytest.raises(unigpu.KernelArgsError):
        cuda.launch(k, 1, 256, [1.0, x, y])
    with pytest.raises(unigpu.KernelArgsError, match="no such kernel in this PTX code"):
        m.kernel("axpy")

    declared = unigpu.Module.load(cuda, SAXPY_PTX.encode(), "ptx", declare={"saxpy": SAXPY_PARAMS})
    k = declared.kernel("saxpy")
    assert k.params == SAXPY_PARAMS
    run_saxpy(cuda, k, rng, int(rng.integers(1, 1 << 16)))
    with pytest.raises(unigpu.KernelArgsError, match="parameter 1"):
        cuda.launch(k, 1, 256, [1.0, cuda.zeros(8, "i32"), y, 8])


@pytest.mark.gpu
def test_fatbin_fixture_on_cuda(cuda, rng):
    data = AXPY_FATBIN.read_bytes()
    k = unigpu.Module.load(cuda, data, "fatbin", declare={"axpy": SAXPY_PARAMS}).kernel("axpy")
    run_saxpy(cuda, k, rng, int(rng.integers(1, 1 << 16)))


@pytest.mark.gpu
def test_code_the_device_cannot_run_is_an_image_error(cuda):
    future = SAXPY_PTX.replace(".version 7.0", ".version 99.9")
    assert future != SAXPY_PTX
    with pytest.raises(unigpu.ImageError, match="99.9") as e:
        unigpu.Module.load(cuda, future, "ptx")
    assert "sm_" in str(e.value)
    with pytest.raises(unigpu.UnsupportedError, match="load PTX, a CUBIN or a fatbin"):
        unigpu.Module.load(cuda, SPIRV_HEADER, "spirv")
