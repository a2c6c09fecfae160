"""unigpu from Python in one page: context, arrays, ops, a kernel with a
Python CPU implementation, streams and events, errors.

    python python/examples/quickstart.py          # GPU if there is one, else CPU
    UNIGPU_BACKEND=cpu python python/examples/quickstart.py
"""

import numpy as np

import unigpu

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def saxpy_on_cpu(a, x, y, n):
    """The same kernel for the CPU backend: numpy arrays in, writes kept."""
    y[:n] = np.float32(a) * x[:n] + y[:n]


def main():
    # 1. A context: unigpu.toml / UNIGPU_BACKEND first, then torch -> cuda -> vulkan -> cpu.
    ctx = unigpu.Context()
    print(f"backend: {ctx.backend}:{ctx.device_id}")
    for backend, outcome, reason in ctx.fallback_chain:
        print(f"  {backend:<6} {outcome}{': ' + reason if reason else ''}")

    # 2. Arrays: upload from numpy, compute, download to numpy.
    n = 1_000_000
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(n).astype(np.float32)
    y_host = rng.standard_normal(n).astype(np.float32)
    x, y = ctx.array(x_host), ctx.array(y_host)
    print(f"x: {x!r}")

    # 3. Built-in ops (any backend): module functions or ctx.ops / stream.ops.
    z = unigpu.add(x, y)                     # a new array
    unigpu.scale(0.5, z)                     # in place
    print("sum(z) =", round(unigpu.sum(z), 3), " numpy:", round(float(((x_host + y_host) * 0.5).sum()), 3))

    # 4. A kernel: CUDA C++ on a GPU, its Python implementation on the CPU backend.
    saxpy = ctx.compile(SAXPY).kernel("saxpy").with_cpu(saxpy_on_cpu)
    ctx.launch(saxpy, unigpu.blocks_for(n), 256, [2.0, x, y, n])
    ok = np.allclose(y.numpy(), 2.0 * x_host + y_host, atol=1e-5)
    print("saxpy matches numpy:", ok)

    # 5. Streams and events: work on s1, then s2 after an event.
    s1, s2 = ctx.stream(), ctx.stream()
    start = s1.record(timing=True)         # timed: elapsed_ms measures it
    s1.ops.relu(x, out=z)
    done = s1.record(timing=True)
    s2.wait(done)                            # s2 waits, the host does not
    s2.ops.scale(3.0, z)
    s2.sync()
    print(f"relu + scale on two streams: {start.elapsed_ms(done):.3f} ms for relu")

    # 6. Errors are exceptions with the library's message.
    try:
        unigpu.add(x, ctx.zeros(3, "f32"))
    except unigpu.SizeMismatchError as e:
        print("SizeMismatchError:", e)
    try:
        unigpu.Context.new("cuda", 99)
    except (unigpu.InvalidDeviceError, unigpu.BackendUnavailableError) as e:
        print(f"{type(e).__name__}: {str(e)[:80]}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
