// Host time of one grouped ncclAllReduce over every GPU of the process,
// blocking against nonblocking communicators, 1..64 MiB. Finds what bounds
// small collectives in multi_gpu_bench (issue 14): NCCL's own nonblocking
// path, or unigpu's code around it.
//   nvcc -O2 -I$NCCL/include nccl_group.cu -L$NCCL/lib -l:libnccl.so.2 -o /tmp/nccl_group
//   NCCL_NVLS_ENABLE=0 /tmp/nccl_group
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <nccl.h>

#define CK(x) do { auto ck_ = (x); if (ck_ != 0) { printf("%s failed: %d at %d\n", #x, (int)ck_, __LINE__); exit(1); } } while (0)

static void settle(std::vector<ncclComm_t>& comms) {
  for (auto c : comms) {
    ncclResult_t s;
    do { CK(ncclCommGetAsyncError(c, &s)); } while (s == ncclInProgress);
    CK(s);
  }
}

static void run(int blocking) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  ncclUniqueId id;
  CK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> comms(n);
  std::vector<cudaStream_t> streams(n);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = blocking;
  CK(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    CK(cudaSetDevice(i));
    CK(cudaStreamCreate(&streams[i]));
    ncclResult_t r = ncclCommInitRankConfig(&comms[i], n, id, i, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) CK(r);
  }
  ncclResult_t r = ncclGroupEnd();
  if (r != ncclSuccess && r != ncclInProgress) CK(r);
  settle(comms);
  for (size_t mib = 1; mib <= 64; mib *= 2) {
    size_t count = (mib << 20) / 4;
    std::vector<float*> bufs(n);
    for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaMalloc(&bufs[i], count * 4)); }
    std::vector<double> host;
    cudaEvent_t e0, e1;
    CK(cudaSetDevice(0)); CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    int iters = 30;
    for (int it = 0; it < 5 + iters; it++) {
      if (it == 5) { CK(cudaSetDevice(0)); CK(cudaEventRecord(e0, streams[0])); }
      auto t = std::chrono::steady_clock::now();
      CK(ncclGroupStart());
      for (int i = 0; i < n; i++) {
        ncclResult_t r = ncclAllReduce(bufs[i], bufs[i], count, ncclFloat, ncclSum, comms[i], streams[i]);
        if (r != ncclSuccess && r != ncclInProgress) CK(r);
      }
      ncclResult_t g = ncclGroupEnd();
      if (g != ncclSuccess && g != ncclInProgress) CK(g);
      int in_progress = g == ncclInProgress;
      settle(comms);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
      if (it >= 5) host.push_back(us);
      if (it == 5 + iters - 1) printf("  (last group end: %s)\n", in_progress ? "in progress" : "success");
    }
    CK(cudaSetDevice(0)); CK(cudaEventRecord(e1, streams[0])); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    std::sort(host.begin(), host.end());
    double gpu_us = ms * 1e3 / iters;
    printf("blocking=%d %2zu MiB: host %.1f us/call (median), gpu %.1f us/call, busbw %.1f GB/s\n",
           blocking, mib, host[host.size() / 2], gpu_us, (mib << 20) / (gpu_us * 1e-6) / 1e9 * 2.0 * (n - 1) / n);
    for (int i = 0; i < n; i++) CK(cudaFree(bufs[i]));
  }
  for (int i = 0; i < n; i++) CK(ncclCommDestroy(comms[i]));
}

int main() {
  run(1);
  run(0);
  return 0;
}
