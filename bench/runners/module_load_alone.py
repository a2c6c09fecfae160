# A CUDA module's load timed alone, outside unigpu (issue 26's first launch):
# NVRTC compiles each source of bench/runners/module_load/ once (the flags
# unigpu uses), then new processes each load one cubin and time
# cuModuleLoadData, cuModuleGetFunction and one launch + sync, the variants
# alternating. On the GPU machine: ROUNDS=21 python3 bench/runners/module_load_alone.py
import ctypes, os, subprocess, sys, time, statistics, glob
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_load")
def lib(names):
    for n in names:
        try: return ctypes.CDLL(n)
        except OSError: pass
    raise SystemExit("no " + names[0])
if len(sys.argv) > 1 and sys.argv[1] == "child":
    cu = lib(["libcuda.so.1", "libcuda.so"])
    path, kname, nparams = sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
    data = open(path, "rb").read()
    cu.cuInit(0); dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
    ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); cu.cuCtxSetCurrent(ctx)
    buf = ctypes.c_uint64(); cu.cuMemAlloc_v2(ctypes.byref(buf), 1 << 20)
    t0 = time.perf_counter(); mod = ctypes.c_void_p()
    r = cu.cuModuleLoadData(ctypes.byref(mod), data); t1 = time.perf_counter()
    fn = ctypes.c_void_p(); r2 = cu.cuModuleGetFunction(ctypes.byref(fn), mod, kname); t2 = time.perf_counter()
    a = ctypes.c_float(2.0); p = ctypes.c_uint64(buf.value); n = ctypes.c_uint(1024); k = ctypes.c_uint(0)
    if nparams == 4: args = [ctypes.byref(a), ctypes.byref(p), ctypes.byref(p), ctypes.byref(n)]
    else: args = [ctypes.byref(a), ctypes.byref(p), ctypes.byref(p), ctypes.byref(n), ctypes.byref(n), ctypes.byref(p), ctypes.byref(k)]
    arr = (ctypes.c_void_p * len(args))(*[ctypes.cast(x, ctypes.c_void_p) for x in args])
    r3 = cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, None, arr, None); cu.cuCtxSynchronize(); t3 = time.perf_counter()
    print(f"{(t1-t0)*1e3:.4f} {(t2-t1)*1e3:.4f} {(t3-t2)*1e3:.4f} {r} {r2} {r3} {len(data)}")
    sys.exit(0)
nv = lib(glob.glob("/opt/torch/.venv/lib/python3.12/site-packages/nvidia/*/lib/libnvrtc.so*") + glob.glob("/usr/local/cuda/lib64/libnvrtc.so*") + ["libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13"])
cu = lib(["libcuda.so.1"]); cu.cuInit(0); dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
ma, mi = ctypes.c_int(), ctypes.c_int()
cu.cuDeviceGetAttribute(ctypes.byref(ma), 75, dev); cu.cuDeviceGetAttribute(ctypes.byref(mi), 76, dev)
arch = f"--gpu-architecture=sm_{ma.value}{mi.value}"
variants = [("hand", "hand.cu", "bench_saxpy", 4, []), ("macro", "macro.cu", "bench_saxpy_once", 7, ["--fmad=false"]),
            ("macro-inline", "macro_inline.cu", "bench_saxpy_once", 7, ["--fmad=false"]),
            ("macro-nolb", "macro_nolb.cu", "bench_saxpy_once", 7, ["--fmad=false"]),
            ("macro-fmad", "macro.cu", "bench_saxpy_once", 7, []),
            ("nofault", "nofault.cu", "bench_saxpy_once", 7, ["--fmad=false"])]
# The two macro variants are macro.cu with one edit each (not kept as files).
edits = {"macro_inline.cu": ("__noinline__ void ug_fault", "__forceinline__ void ug_fault"),
         "macro_nolb.cu": ("__launch_bounds__(256) ", "")}
def source(src):
    if src in edits:
        old, new = edits[src]
        return open(os.path.join(here, "macro.cu")).read().replace(old, new)
    return open(os.path.join(here, src)).read()
for name, src, kname, np_, extra in variants:
    prog = ctypes.c_void_p(); code = source(src).encode()
    nv.nvrtcCreateProgram(ctypes.byref(prog), code, b"k.cu", 0, None, None)
    opts = [arch.encode(), b"--std=c++17"] + [e.encode() for e in extra]
    r = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t(); nv.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    b = ctypes.create_string_buffer(size.value); nv.nvrtcGetCUBIN(prog, b)
    open(f"/tmp/{name}.cubin", "wb").write(b.raw)
    print(name, "compile", r, "cubin bytes", size.value)
res = {v[0]: [] for v in variants}
for rnd in range(int(os.environ.get("ROUNDS", "15"))):
    for name, src, kname, np_, extra in variants:
        out = subprocess.run([sys.executable, __file__, "child", f"/tmp/{name}.cubin", kname, str(np_)], capture_output=True, text=True).stdout.split()
        res[name].append([float(x) for x in out[:3]])
for name in res:
    cols = list(zip(*res[name]))
    print(f"{name:14s} load {statistics.median(cols[0]):.4f} getfn {statistics.median(cols[1]):.4f} launch+sync {statistics.median(cols[2]):.4f} total {statistics.median([sum(r) for r in res[name]]):.4f} ms (medians of {len(cols[0])})")
