extern "C" __global__ void __launch_bounds__(256) bench_saxpy_once(float p_a, const float* p_x, float* p_y, unsigned int n_x, unsigned int n_y, unsigned int* ug_status, unsigned int ug_kernel) {
    unsigned int v_i_0 = (blockIdx.x * 256u + threadIdx.x);
    if ((v_i_0 < n_y)) {
        p_y[v_i_0] = ((p_a * (v_i_0 < n_x ? p_x[v_i_0] : 0.0f)) + p_y[v_i_0]);
    }
}
