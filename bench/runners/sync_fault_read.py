# A sync's cost with and without a 4-byte device-to-pinned read after the
# kernel (what a sync after a #[unigpu::kernel] launch adds: the stream's
# fault word), timed in one process, rounds alternating.
# On the GPU machine, after bench/runners/module_load_alone.py (its cubin):
#   python3 bench/runners/sync_fault_read.py
import ctypes, time, statistics
cu = ctypes.CDLL("libcuda.so.1"); cu.cuInit(0); dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); cu.cuCtxSetCurrent(ctx)
data = open("/tmp/hand.cubin", "rb").read()  # module_load_alone.py writes it; mod = ctypes.c_void_p(); cu.cuModuleLoadData(ctypes.byref(mod), data)
fn = ctypes.c_void_p(); cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"bench_saxpy")
buf = ctypes.c_uint64(); cu.cuMemAlloc_v2(ctypes.byref(buf), 1 << 20)
word = ctypes.c_uint64(); cu.cuMemAlloc_v2(ctypes.byref(word), 4)
host = ctypes.c_void_p(); cu.cuMemHostAlloc(ctypes.byref(host), 4, 0)
stream = ctypes.c_void_p(); cu.cuStreamCreate(ctypes.byref(stream), 1)
a = ctypes.c_float(2.0); p = ctypes.c_uint64(buf.value); n = ctypes.c_uint(1024)
args = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in (a, p, p, n)])
def launch(): cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, stream, args, None)
def plain():
    t = time.perf_counter(); launch(); cu.cuStreamSynchronize(stream); return time.perf_counter() - t
def read_after():
    t = time.perf_counter(); launch(); cu.cuStreamSynchronize(stream)
    cu.cuMemcpyDtoHAsync_v2(host, word, 4, stream); cu.cuStreamSynchronize(stream); return time.perf_counter() - t
def read_before():
    t = time.perf_counter(); launch(); cu.cuMemcpyDtoHAsync_v2(host, word, 4, stream)
    cu.cuStreamSynchronize(stream); return time.perf_counter() - t
for f in (plain, read_after, read_before): f()
res = {f.__name__: [] for f in (plain, read_after, read_before)}
for _ in range(2000):
    for f in (plain, read_after, read_before): res[f.__name__].append(f() * 1e6)
for k, v in res.items(): print(f"{k:12s} launch + sync {statistics.median(v):.2f} us (median of {len(v)})")
