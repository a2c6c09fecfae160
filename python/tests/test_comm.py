"""`unigpu.Communicator`: the clear errors on the CPU backend (no
collectives there; the same policy and words as the C API's `ug_comm_*`,
both from unigpu::binding), and on CUDA (UNIGPU_TEST_GPU=1) one rank (every
collective the identity, into fresh outputs so that a call that does
nothing fails), a collective ordered after a held-back write, and two ranks
where the machine has two GPUs; every element checked against numpy."""

import numpy as np
import pytest

import unigpu

OPS = ["sum", "max", "min", "avg"]

# Spins about a second of clock cycles, then writes `value` everywhere.
SPIN_WRITE = r"""
extern "C" __global__ void spin_then_write(float* x, float value, unsigned n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
"""


def test_the_cpu_backend_has_no_collectives(cpu):
    with pytest.raises(unigpu.UnsupportedError, match="collectives") as e:
        unigpu.Communicator.local([cpu])
    assert "cuda backend" in str(e.value)
    assert e.value.backend == "cpu"
    with pytest.raises(unigpu.UnsupportedError):
        unigpu.Communicator.library("cpu")
    with pytest.raises(ValueError, match="unknown backend"):
        unigpu.Communicator.library("gpu")


def test_malformed_communicators(cpu):
    with pytest.raises(unigpu.SizeMismatchError):
        unigpu.Communicator.local([])
    with pytest.raises(TypeError):
        unigpu.Communicator.local([1])


def ints(rng, n, dtype):
    return rng.integers(-1000, 1000, n).astype(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f32", "f64", "i32", "i64"])
def test_one_rank_is_the_identity(cuda, rng, dtype):
    comm = unigpu.Communicator.local([cuda])
    assert comm.world_size == 1
    np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[dtype]
    for op in OPS:
        n = int(rng.integers(1, 1 << 16))
        h = ints(rng, n, np_dtype)
        a = cuda.array(h)
        comm.all_reduce([a], op=op)
        comm.wait()
        np.testing.assert_array_equal(a.numpy(), h)
        for call in ["all_reduce_into", "all_gather", "reduce_scatter"]:
            out = cuda.zeros(n, dtype)
            if call == "all_gather":
                comm.all_gather([a], [out])
            else:
                getattr(comm, call)([a], [out], op=op)
            comm.wait(timeout=60)
            np.testing.assert_array_equal(out.numpy(), h, err_msg=f"{call} {op}")
        comm.broadcast([a], root=0)
        comm.wait()
        np.testing.assert_array_equal(a.numpy(), h)


@pytest.mark.gpu
def test_refused_collectives_run_nothing(cuda, cpu, rng):
    comm = unigpu.Communicator.local([cuda])
    n = 64
    h = ints(rng, n, np.float32)
    a = cuda.array(h)
    out = cuda.zeros(n, "f32")
    with pytest.raises(ValueError, match=r"`arrays\[0\]` is a view"):
        comm.all_reduce([a.reshape(8, 8).T])
    with pytest.raises(unigpu.ContextMismatchError):
        comm.all_reduce([cpu.zeros(n, "f32")])
    with pytest.raises(unigpu.DTypeMismatchError):
        comm.all_gather([a], [cuda.zeros(n, "i32")])
    with pytest.raises(ValueError, match="not one of"):
        comm.all_reduce([a], op="prod")
    with pytest.raises(unigpu.SizeMismatchError):
        comm.all_reduce([a, out])
    with pytest.raises(ValueError, match="are the same array, and both are written"):
        comm.all_gather([a, a], [out, out])
    with pytest.raises(TypeError):
        comm.all_reduce([h])
    with pytest.raises(ValueError, match="finite"):
        comm.wait(timeout=-1)
    comm.wait()
    np.testing.assert_array_equal(a.numpy(), h)
    np.testing.assert_array_equal(out.numpy(), np.zeros(n, np.float32))


@pytest.mark.gpu
def test_a_collective_waits_for_a_held_back_write(cuda, rng):
    comm = unigpu.Communicator.local([cuda])
    k = cuda.compile(SPIN_WRITE).kernel("spin_then_write")
    for trial in range(3):
        n = int(rng.integers(1, 1 << 16))
        a = cuda.array(ints(rng, n, np.float32))
        out = cuda.zeros(n, "f32")
        s1 = cuda.stream()
        cuda.sync()
        value = 42.0 + trial
        s1.launch(k, unigpu.blocks_for(n), 256, [a, value, n, 2_000_000_000])
        # On the default stream: must wait for s1's write to `a`.
        comm.all_reduce_into([a], [out])
        comm.wait()
        np.testing.assert_array_equal(out.numpy(), np.full(n, value, np.float32))
        s1.sync()


@pytest.mark.gpu
def test_an_aborted_communicator_fails_every_later_call(cuda):
    comm = unigpu.Communicator.local([cuda])
    comm.abort()
    with pytest.raises(unigpu.UnigpuError):
        comm.all_reduce([cuda.zeros(16, "f32")])


@pytest.mark.gpu
def test_two_ranks(cuda, rng):
    devices = unigpu.devices("cuda")
    if len(devices) < 2:
        pytest.skip(f"the 2-rank communicator needs 2 CUDA devices; this machine has {len(devices)}")
    c1 = unigpu.Context.new("cuda", 1)
    comm = unigpu.Communicator.local([cuda, c1])
    assert comm.world_size == 2
    n = int(rng.integers(1, 1 << 16))
    h0, h1 = ints(rng, 2 * n, np.float32), ints(rng, 2 * n, np.float32)
    reference = {"sum": h0 + h1, "max": np.maximum(h0, h1), "min": np.minimum(h0, h1)}
    for op, want in reference.items():
        a0, a1 = cuda.array(h0[:n]), c1.array(h1[:n])
        comm.all_reduce([a1, a0], op=op)  # any order: by context
        comm.wait()
        np.testing.assert_array_equal(a0.numpy(), want[:n], err_msg=op)
        np.testing.assert_array_equal(a1.numpy(), want[:n], err_msg=op)
    b0, b1 = cuda.array(h0[:n]), c1.array(h1[:n])
    comm.broadcast([b0, b1], root=1)
    comm.wait()
    np.testing.assert_array_equal(b0.numpy(), h1[:n])
    np.testing.assert_array_equal(b1.numpy(), h1[:n])
    s0, s1 = cuda.array(h0[:n]), c1.array(h1[:n])
    g0, g1 = cuda.zeros(2 * n, "f32"), c1.zeros(2 * n, "f32")
    comm.all_gather([s0, s1], [g0, g1])
    comm.wait()
    gathered = np.concatenate([h0[:n], h1[:n]])
    np.testing.assert_array_equal(g0.numpy(), gathered)
    np.testing.assert_array_equal(g1.numpy(), gathered)
    r0, r1 = cuda.zeros(n, "f32"), c1.zeros(n, "f32")
    comm.reduce_scatter([cuda.array(h0), c1.array(h1)], [r0, r1])
    comm.wait()
    np.testing.assert_array_equal(r0.numpy(), (h0 + h1)[:n])
    np.testing.assert_array_equal(r1.numpy(), (h0 + h1)[n:])
    comm.send_recv(sends=[(s0, 1), (s1, 0)], recvs=[(r1, 0), (r0, 1)])
    comm.wait()
    np.testing.assert_array_equal(r1.numpy(), h0[:n])
    np.testing.assert_array_equal(r0.numpy(), h1[:n])
