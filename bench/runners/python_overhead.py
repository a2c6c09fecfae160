"""Per-call overhead of the unigpu Python package for a tiny op, against
CuPy's and torch's equivalent tiny ops on the GPU, in one run.

    python bench/runners/python_overhead.py                  # unigpu on its default backend
    python bench/runners/python_overhead.py --backend cpu    # or cuda
    python bench/runners/python_overhead.py --iters 20000 --repeat 7

Measured, for a 1-element float32 array:
  unigpu  unigpu.scale(2.0, x)      (module function; x *= 2 on the default stream)
          ops.scale(2.0, x)         (ops = ctx.ops, fetched once)
          len(x)
  cupy    x *= 2                    (when CuPy imports and has a GPU)
          len(x)
  torch   x.mul_(2)                 (when torch imports and has a GPU)
          len(x)
Each op is timed as `submit` (N calls, no wait) and `per_call` (N calls plus
the final sync: the rate a loop of them sustains). The best of --repeat
rounds is kept. Prints `name value` lines (µs) like bench/anchors/, then
the ratios unigpu / CuPy and unigpu / torch (below 1: unigpu is faster).
"""

import argparse
import platform
import sys
import time


def best_of(f, sync, iters, repeat):
    """(submit µs/call, per-call µs including the final sync), best rounds."""
    for _ in range(max(iters // 10, 100)):  # warm-up
        f()
    sync()
    submit, total = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(iters):
            f()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        submit.append((t1 - t0) / iters * 1e6)
        total.append((t2 - t0) / iters * 1e6)
    return min(submit), min(total)


def out(name, value):
    print(f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value}", flush=True)


def bench_unigpu(backend, iters, repeat):
    import unigpu

    ctx = unigpu.Context() if backend == "default" else unigpu.Context.new(backend)
    out("py_unigpu_backend", f"{ctx.backend}:{ctx.device_id}")
    x = ctx.zeros(1, "f32")
    ops = ctx.ops
    scale = unigpu.scale
    res = {}
    res["scale"] = best_of(lambda: scale(2.0, x), ctx.sync, iters, repeat)
    res["ops_scale"] = best_of(lambda: ops.scale(2.0, x), ctx.sync, iters, repeat)
    res["len"] = best_of(lambda: len(x), lambda: None, iters * 10, repeat)
    for k, (sub, tot) in res.items():
        out(f"py_unigpu_{k}_1elem_submit_us", sub)
        out(f"py_unigpu_{k}_1elem_per_call_us", tot)
    return res


def bench_cupy(iters, repeat):
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - any failure means "not here"
        print(f"# cupy: not measured ({type(e).__name__}: {str(e)[:80]})")
        return None
    x = cupy.zeros(1, dtype=cupy.float32)
    sync = cupy.cuda.Device().synchronize

    def mul():
        nonlocal x
        x *= 2

    res = {"scale": best_of(mul, sync, iters, repeat),
           "len": best_of(lambda: len(x), lambda: None, iters * 10, repeat)}
    out("py_cupy_version", cupy.__version__)
    for k, (sub, tot) in res.items():
        out(f"py_cupy_{k}_1elem_submit_us", sub)
        out(f"py_cupy_{k}_1elem_per_call_us", tot)
    return res


def bench_torch(iters, repeat):
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # noqa: BLE001
        print(f"# torch: not measured ({type(e).__name__}: {str(e)[:80]})")
        return None
    x = torch.zeros(1, dtype=torch.float32, device="cuda")
    res = {"scale": best_of(lambda: x.mul_(2), torch.cuda.synchronize, iters, repeat),
           "len": best_of(lambda: len(x), lambda: None, iters * 10, repeat)}
    out("py_torch_version", torch.__version__)
    for k, (sub, tot) in res.items():
        out(f"py_torch_{k}_1elem_submit_us", sub)
        out(f"py_torch_{k}_1elem_per_call_us", tot)
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="default", choices=["default", "cpu", "cuda", "torch"])
    p.add_argument("--iters", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-others", action="store_true", help="measure unigpu only")
    a = p.parse_args()
    out("py_version", platform.python_version())
    ours = bench_unigpu(a.backend, a.iters, a.repeat)
    others = {}
    if not a.no_others:
        others = {"cupy": bench_cupy(a.iters, a.repeat), "torch": bench_torch(a.iters, a.repeat)}
    print()
    print(f"{'tiny op (1 elem f32)':<34}{'submit µs':>11}{'per call µs':>13}")
    rows = [("unigpu.scale(2.0, x)", ours["scale"]), ("ctx.ops.scale(2.0, x)", ours["ops_scale"]),
            ("unigpu len(x)", ours["len"])]
    if others.get("cupy"):
        rows += [("cupy x *= 2", others["cupy"]["scale"]), ("cupy len(x)", others["cupy"]["len"])]
    if others.get("torch"):
        rows += [("torch x.mul_(2)", others["torch"]["scale"]), ("torch len(x)", others["torch"]["len"])]
    for name, (sub, tot) in rows:
        print(f"{name:<34}{sub:>11.3f}{tot:>13.3f}")
    for other, res in others.items():
        if not res:
            continue
        for k in ("scale", "len"):
            mine, theirs = ours[k][1], res[k][1]
            out(f"ratio_unigpu_over_{other}_{k}_per_call", mine / theirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
