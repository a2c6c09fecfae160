// The C++ floor of a tiny ATen op's submit (issue 29, item 2): what the
// torch backend's `scale` and `axpy` cost when ATen is called from C++
// on the current stream, with no Python and no unigpu, to set beside
// unigpu's torch-backend submit and torch's own `x.add_(y)` from Python
// in the same call. Prints `key value` lines (µs, medians of 15 rounds).
//
// On the GPU machine (torch's wheel brings the headers and libraries):
//   T=/opt/torch/.venv/lib/python3.12/site-packages/torch
//   g++ -O2 -std=c++17 bench/probes/aten_submit.cpp -I$T/include \
//     -I/usr/local/cuda/include -L$T/lib -Wl,-rpath,$T/lib \
//     -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda -o aten_submit
#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

// Median over `rounds` of the mean host time of `iters` calls of `op`
// (the submit: the GPU is synchronized only between rounds).
static double submit_us(const std::function<void()>& op, int rounds, int iters) {
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) op();
    auto t1 = std::chrono::steady_clock::now();
    c10::cuda::device_synchronize();
    per_call.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

int main() {
  auto opts = at::TensorOptions().device(at::kCUDA, 0).dtype(at::kFloat);
  at::Tensor one = at::randn({1}, opts);
  at::Tensor x = at::randn({1024}, opts);
  at::Tensor y = at::randn({1024}, opts);
  auto scale = [&] { one.mul_(1.0); };
  auto add = [&] { x.add_(y); };
  for (int i = 0; i < 1000; ++i) {
    scale();
    add();
  }
  c10::cuda::device_synchronize();
  std::printf("aten_cpp_scale_1_submit_us %.3f\n", submit_us(scale, 15, 2000));
  std::printf("aten_cpp_add_1024_submit_us %.3f\n", submit_us(add, 15, 2000));
  return 0;
}
