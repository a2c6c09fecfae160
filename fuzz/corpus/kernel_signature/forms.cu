// a comment with __global__ void fake(int)
#define X 1
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float *y, unsigned int n) {}
extern "C" {
  __global__ void __launch_bounds__(256) twice(double* d, long long n) {}
  __global__ void halves(__half* h, const __nv_bfloat16* b, size_t n) {}
}
template <typename T> __global__ void generic(T* p) {}
__global__ void weird(MyStruct s) {}
/* block comment */ __global__ void none(void) {}
__global__ void ints(int32_t a, uint64_t b, unsigned char* c, const void* v) {}
