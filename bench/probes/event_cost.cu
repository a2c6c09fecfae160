// What an event costs on this GPU: record on a timing event vs a
// DisableTiming one, query, and create+destroy. Medians of 2000, in µs.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
__global__ void empty() {}
int main() {
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  empty<<<1, 1, 0, s>>>(); cudaStreamSynchronize(s);
  for (int flags : {cudaEventDefault, cudaEventDisableTiming}) {
    cudaEvent_t e; cudaEventCreateWithFlags(&e, flags);
    std::vector<double> rec, q, rec_busy;
    for (int i = 0; i < 2000; i++) {
      double a = now_us(); cudaEventRecord(e, s); rec.push_back(now_us() - a);
      a = now_us(); cudaEventQuery(e); q.push_back(now_us() - a);
    }
    cudaStreamSynchronize(s);
    for (int i = 0; i < 2000; i++) {
      empty<<<1, 1, 0, s>>>();
      double a = now_us(); cudaEventRecord(e, s); rec_busy.push_back(now_us() - a);
    }
    cudaStreamSynchronize(s);
    const char* n = flags == cudaEventDefault ? "timing" : "notiming";
    printf("event_%s_record_us %.3f\nevent_%s_record_after_launch_us %.3f\nevent_%s_query_us %.3f\n", n, med(rec), n, med(rec_busy), n, med(q));
    std::vector<double> cd;
    for (int i = 0; i < 2000; i++) {
      double a = now_us(); cudaEvent_t x; cudaEventCreateWithFlags(&x, flags); cudaEventDestroy(x); cd.push_back(now_us() - a);
    }
    printf("event_%s_create_destroy_us %.3f\n", n, med(cd));
    cudaEventDestroy(e);
  }
  return 0;
}
