// Which difference makes unigpu's graph replay slower per kernel than
// floor.cu's: the capture mode (floor: global; unigpu: relaxed), the kernel
// (floor: nvcc, runtime launch; unigpu: NVRTC cubin for the device's own
// architecture, cuLaunchKernel), or the kernel-params pointer. Each variant
// captures 100 empty kernels, replays the graph 200 times, five rounds;
// prints the median per-kernel time, final sync included (floor.cu's way).
//
//   nvcc -O2 -o /tmp/g bench/probes/graph_replay.cu -lcuda -lnvrtc && /tmp/g
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("err %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define DK(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { printf("driver err %d line %d\n", (int)e_, __LINE__); exit(1); } } while (0)
#define NK(x) do { nvrtcResult e_ = (x); if (e_ != NVRTC_SUCCESS) { printf("nvrtc err %s line %d\n", nvrtcGetErrorString(e_), __LINE__); exit(1); } } while (0)

__global__ void empty() {}

static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Captures 100 launches of `launch` on `s` in `mode`, replays, reports.
template <class L>
static void variant(const char* name, cudaStream_t s, cudaStreamCaptureMode mode, L launch) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, mode));
  for (int i = 0; i < 100; i++) launch();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  std::vector<double> rounds;
  for (int r = 0; r < 5; r++) {
    double t = now_us();
    for (int i = 0; i < 200; i++) cudaGraphLaunch(ge, s);
    CK(cudaStreamSynchronize(s));
    rounds.push_back((now_us() - t) / (200 * 100));
  }
  std::sort(rounds.begin(), rounds.end());
  printf("%-58s %.3f us/kernel\n", name, rounds[2]);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
}

int main() {
  CK(cudaFree(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUstream cs = (CUstream)s;

  // The NVRTC cubin unigpu builds: the device's own sm, C++17.
  int major = 0, minor = 0;
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  const char* src = "extern \"C\" __global__ void empty() {}\n";
  nvrtcProgram prog;
  NK(nvrtcCreateProgram(&prog, src, "empty.cu", 0, nullptr, nullptr));
  std::string arch = "--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor);
  const char* opts[] = {arch.c_str(), "--std=c++17"};
  NK(nvrtcCompileProgram(prog, 2, opts));
  size_t n = 0;
  NK(nvrtcGetCUBINSize(prog, &n));
  std::vector<char> cubin(n);
  NK(nvrtcGetCUBIN(prog, cubin.data()));
  CUmodule mod;
  CUfunction nv;
  DK(cuModuleLoadData(&mod, cubin.data()));
  DK(cuModuleGetFunction(&nv, mod, "empty"));
  CUfunction rt;
  CK(cudaGetFuncBySymbol(&rt, (const void*)empty));
  void* no_params[1] = {nullptr};

  for (int round = 0; round < 2; round++) {
    variant("nvcc kernel, <<<>>>, global capture (floor.cu)", s, cudaStreamCaptureModeGlobal,
            [&] { empty<<<1, 1, 0, s>>>(); });
    variant("nvcc kernel, <<<>>>, relaxed capture", s, cudaStreamCaptureModeRelaxed,
            [&] { empty<<<1, 1, 0, s>>>(); });
    variant("nvcc kernel, cuLaunchKernel, relaxed capture", s, cudaStreamCaptureModeRelaxed,
            [&] { cuLaunchKernel(rt, 1, 1, 1, 1, 1, 1, 0, cs, nullptr, nullptr); });
    variant("NVRTC cubin, cuLaunchKernel, global capture", s, cudaStreamCaptureModeGlobal,
            [&] { cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, cs, nullptr, nullptr); });
    variant("NVRTC cubin, cuLaunchKernel, relaxed capture (unigpu)", s, cudaStreamCaptureModeRelaxed,
            [&] { cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, cs, no_params, nullptr); });
  }
  // After many plain launches on other streams (what unigpu bench's
  // launch case does before its graph case): a graph on a new stream, and
  // on a stream that did the launches.
  cudaStream_t x, y, z;
  CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&y, cudaStreamNonBlocking));
  for (int i = 0; i < 100000; i++) cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, (CUstream)x, no_params, nullptr);
  for (int i = 0; i < 100000; i++) cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, (CUstream)y, no_params, nullptr);
  CK(cudaDeviceSynchronize());
  CK(cudaStreamCreateWithFlags(&z, cudaStreamNonBlocking));
  variant("after 2x100k launches on x, y: graph on a new stream z", z, cudaStreamCaptureModeRelaxed,
          [&] { cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, (CUstream)z, no_params, nullptr); });
  variant("after 2x100k launches on x, y: graph on x", x, cudaStreamCaptureModeRelaxed,
          [&] { cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, (CUstream)x, no_params, nullptr); });
  variant("after 2x100k launches on x, y: graph on s", s, cudaStreamCaptureModeRelaxed,
          [&] { cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, cs, no_params, nullptr); });
  CK(cudaStreamDestroy(x));
  CK(cudaStreamDestroy(y));
  variant("x, y destroyed: graph on z", z, cudaStreamCaptureModeRelaxed,
          [&] { cuLaunchKernel(nv, 1, 1, 1, 1, 1, 1, 0, (CUstream)z, no_params, nullptr); });
  return 0;
}
