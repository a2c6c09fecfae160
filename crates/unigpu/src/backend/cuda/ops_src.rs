//! CUDA C++ for the built-in ops, compiled once per device by NVRTC (and
//! then served from the kernel caches). f16/bf16 are handled as raw 16-bit
//! values with PTX conversions, so no CUDA headers are needed at run time.

pub(crate) const SOURCE: &str = r#"
typedef unsigned short ug_u16;
__device__ __forceinline__ float ug_h2f(ug_u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ ug_u16 ug_f2h(float f) { ug_u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float ug_b2f(ug_u16 b) { return __uint_as_float(((unsigned)b) << 16); }
__device__ __forceinline__ ug_u16 ug_f2b(float f) { ug_u16 b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b; }
__device__ __forceinline__ float ug_id_f(float x) { return x; }
__device__ __forceinline__ double ug_id_d(double x) { return x; }
/* The identity of max: fmax(NaN, x) is x, so NaNs are skipped and only an
   all-NaN array gives NaN, as Ops::max documents. */
__device__ __forceinline__ float ug_nan_f() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double ug_nan_d() { return __longlong_as_double(0x7ff8000000000000ULL); }

#define UG_LOOP \
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; \
       i += (unsigned long long)gridDim.x * blockDim.x)

#define UG_FILL(S, T) \
extern "C" __global__ void ug_fill_##S(T* y, T v, unsigned long long n) { UG_LOOP y[i] = v; }
UG_FILL(b1, unsigned char)
UG_FILL(b2, ug_u16)
UG_FILL(b4, unsigned int)
UG_FILL(b8, unsigned long long)

/* Block reduction over 256 threads; thread 0 gets the result. */
#define UG_BLOCK_REDUCE(A, acc, OP) \
  __shared__ A ug_s[256]; ug_s[threadIdx.x] = acc; __syncthreads(); \
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) { \
    if (threadIdx.x < s) { A o = ug_s[threadIdx.x + s]; A m = ug_s[threadIdx.x]; ug_s[threadIdx.x] = OP; } \
    __syncthreads(); }

#define UG_ADD(a, b) (m + o)
#define UG_MAXF(a, b) (FMAX(m, o))

/* Element-wise maps move 16 bytes per access (float4-wide) where the
   whole vector is in range, then finish the tail one element at a time.
   Arrays start at allocation boundaries, so vectors are aligned. */
template <typename T> struct alignas(16) ug_vec { T v[16 / sizeof(T)]; };
#define UG_TID (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x)
#define UG_STRIDE ((unsigned long long)gridDim.x * blockDim.x)

template <typename T, typename F>
__device__ __forceinline__ void ug_map2(const T* a, const T* b, T* out, unsigned long long n, F f) {
  constexpr int W = 16 / sizeof(T);
  const unsigned long long nv = n / W;
  const ug_vec<T>* av = reinterpret_cast<const ug_vec<T>*>(a);
  const ug_vec<T>* bv = reinterpret_cast<const ug_vec<T>*>(b);
  ug_vec<T>* ov = reinterpret_cast<ug_vec<T>*>(out);
  for (unsigned long long i = UG_TID; i < nv; i += UG_STRIDE) {
    ug_vec<T> x = av[i], y = bv[i], r;
#pragma unroll
    for (int k = 0; k < W; k++) r.v[k] = f(x.v[k], y.v[k]);
    ov[i] = r;
  }
  for (unsigned long long i = nv * W + UG_TID; i < n; i += UG_STRIDE) out[i] = f(a[i], b[i]);
}

template <typename T, typename F>
__device__ __forceinline__ void ug_map1(const T* a, T* out, unsigned long long n, F f) {
  constexpr int W = 16 / sizeof(T);
  const unsigned long long nv = n / W;
  const ug_vec<T>* av = reinterpret_cast<const ug_vec<T>*>(a);
  ug_vec<T>* ov = reinterpret_cast<ug_vec<T>*>(out);
  for (unsigned long long i = UG_TID; i < nv; i += UG_STRIDE) {
    ug_vec<T> x = av[i], r;
#pragma unroll
    for (int k = 0; k < W; k++) r.v[k] = f(x.v[k]);
    ov[i] = r;
  }
  for (unsigned long long i = nv * W + UG_TID; i < n; i += UG_STRIDE) out[i] = f(a[i]);
}

#define UG_FLOAT_OPS(S, T, A, LD, ST, EXP, TANH, FMAX, MAX_ID) \
extern "C" __global__ void ug_add_##S(const T* a, const T* b, T* out, unsigned long long n) { ug_map2(a, b, out, n, [](T x, T y) { return ST(LD(x) + LD(y)); }); } \
extern "C" __global__ void ug_sub_##S(const T* a, const T* b, T* out, unsigned long long n) { ug_map2(a, b, out, n, [](T x, T y) { return ST(LD(x) - LD(y)); }); } \
extern "C" __global__ void ug_mul_##S(const T* a, const T* b, T* out, unsigned long long n) { ug_map2(a, b, out, n, [](T x, T y) { return ST(LD(x) * LD(y)); }); } \
extern "C" __global__ void ug_axpy_##S(A alpha, const T* x, T* y, unsigned long long n) { ug_map2(x, (const T*)y, y, n, [alpha](T a, T b) { return ST(alpha * LD(a) + LD(b)); }); } \
extern "C" __global__ void ug_scale_##S(A alpha, T* x, unsigned long long n) { ug_map1((const T*)x, x, n, [alpha](T a) { return ST(alpha * LD(a)); }); } \
extern "C" __global__ void ug_relu_##S(const T* x, T* out, unsigned long long n) { ug_map1(x, out, n, [](T a) { A v = LD(a); return ST(v <= (A)0 ? (A)0 : v); }); } \
extern "C" __global__ void ug_sigmoid_##S(const T* x, T* out, unsigned long long n) { ug_map1(x, out, n, [](T a) { A v = LD(a); return ST((A)1 / ((A)1 + EXP(-v))); }); } \
extern "C" __global__ void ug_tanh_##S(const T* x, T* out, unsigned long long n) { ug_map1(x, out, n, [](T a) { return ST(TANH(LD(a))); }); } \
extern "C" __global__ void ug_sum_##S(const T* x, A* partial, unsigned long long n) { \
  A acc = 0; UG_LOOP acc += LD(x[i]); \
  UG_BLOCK_REDUCE(A, acc, m + o) if (threadIdx.x == 0) partial[blockIdx.x] = ug_s[0]; } \
extern "C" __global__ void ug_dot_##S(const T* x, const T* y, A* partial, unsigned long long n) { \
  A acc = 0; UG_LOOP acc += LD(x[i]) * LD(y[i]); \
  UG_BLOCK_REDUCE(A, acc, m + o) if (threadIdx.x == 0) partial[blockIdx.x] = ug_s[0]; } \
extern "C" __global__ void ug_max_##S(const T* x, A* partial, unsigned long long n) { \
  A acc = MAX_ID(); UG_LOOP acc = FMAX(acc, LD(x[i])); \
  UG_BLOCK_REDUCE(A, acc, FMAX(m, o)) if (threadIdx.x == 0) partial[blockIdx.x] = ug_s[0]; }

UG_FLOAT_OPS(f32, float, float, ug_id_f, ug_id_f, expf, tanhf, fmaxf, ug_nan_f)
UG_FLOAT_OPS(f64, double, double, ug_id_d, ug_id_d, exp, tanh, fmax, ug_nan_d)
UG_FLOAT_OPS(f16, ug_u16, float, ug_h2f, ug_f2h, expf, tanhf, fmaxf, ug_nan_f)
UG_FLOAT_OPS(bf16, ug_u16, float, ug_b2f, ug_f2b, expf, tanhf, fmaxf, ug_nan_f)

/* Second pass of a reduction: one block folds the per-block partials. */
#define UG_FINAL(S, A, FMAX, MAX_ID) \
extern "C" __global__ void ug_sum_final_##S(const A* partial, A* out, unsigned long long n) { \
  A acc = 0; UG_LOOP acc += partial[i]; \
  UG_BLOCK_REDUCE(A, acc, m + o) if (threadIdx.x == 0) out[0] = ug_s[0]; } \
extern "C" __global__ void ug_max_final_##S(const A* partial, A* out, unsigned long long n) { \
  A acc = MAX_ID(); UG_LOOP acc = FMAX(acc, partial[i]); \
  UG_BLOCK_REDUCE(A, acc, FMAX(m, o)) if (threadIdx.x == 0) out[0] = ug_s[0]; }
UG_FINAL(f32, float, fmaxf, ug_nan_f)
UG_FINAL(f64, double, fmax, ug_nan_d)
"#;
