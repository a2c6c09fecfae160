// The kernel of tests/data/axpy.fatbin (tests/precompiled.rs); make the
// fatbin with crates/unigpu/tests/data/make_fatbin.sh (nvcc, on a machine with the CUDA
// toolkit): machine code for sm_90 and PTX for compute_90.
extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
