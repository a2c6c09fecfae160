//! The kernels the `kernels` and `compile` groups time: the
//! `#[unigpu::kernel]` ones (saxpy, a shared-memory tree sum, a 16×16 tiled
//! matmul: the algorithms of examples 18, 15 and 16), and the same tiled
//! matmul hand-written in CUDA C++ and in WGSL, line for line, so the ratio
//! measures what the macro's code costs and nothing else.

/// Grid-stride: a Vulkan grid has at most 65535 workgroups a dimension
/// (2^26 elements are 262144 of 256), so the launch caps the grid
/// ([`groups`]) and each invocation takes every `stride`-th element.
#[unigpu::kernel]
pub fn bench_saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < y.len() {
        y[i] = a * x[i] + y[i];
        i += stride;
    }
}

/// The hand-written `COMPILE_SRC` of compile.rs as a macro kernel, line
/// for line (one element an invocation): what the first-launch figures
/// compare, the same kernel written the two ways.
#[unigpu::kernel]
pub fn bench_saxpy_once(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id().x;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// Each invocation first adds its grid-stride share, then the workgroup
/// adds its 256 in a shared tree: one partial a workgroup.
#[unigpu::kernel(workgroup_size = 256)]
pub fn bench_tree_sum(x: &[f32], partial: &mut [f32]) {
    let tile = shared::<f32, 256>();
    let l = local_id().x;
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    let mut v = 0.0f32;
    while i < x.len() {
        v += x[i];
        i += stride;
    }
    tile[l] = v;
    barrier();
    let mut stride = tile.len() / 2;
    while stride > 0 {
        if l < stride {
            tile[l] += tile[l + stride];
        }
        barrier();
        stride /= 2;
    }
    if l == 0 {
        partial[workgroup_id().x] = tile[0];
    }
}

/// The workgroups a grid-stride kernel above is launched with for `n`
/// elements: one an element's 256, at most `cap`.
pub fn groups(n: usize, cap: usize) -> u32 {
    n.div_ceil(256).clamp(1, cap) as u32
}

/// The tile's side; the kernels below spell it out as 16.
pub const TILE: u32 = 16;

#[unigpu::kernel(workgroup_size = (16, 16))]
pub fn bench_tiled_matmul(a: &[f32], b: &[f32], c: &mut [f32], m: u32, n: u32, k: u32) {
    let ta = shared::<f32, 256>();
    let tb = shared::<f32, 256>();
    let col = global_id().x;
    let row = global_id().y;
    let lx = local_id().x;
    let ly = local_id().y;
    let rows = m as usize;
    let cols = n as usize;
    let inner = k as usize;
    let mut acc = 0.0f32;
    for t in 0..(inner + 15) / 16 {
        let ac = t * 16 + lx;
        let mut av = 0.0f32;
        if row < rows && ac < inner {
            av = a[row * inner + ac];
        }
        ta[ly * 16 + lx] = av;
        let br = t * 16 + ly;
        let mut bv = 0.0f32;
        if br < inner && col < cols {
            bv = b[br * cols + col];
        }
        tb[ly * 16 + lx] = bv;
        barrier();
        for j in 0..16usize {
            acc += ta[ly * 16 + j] * tb[j * 16 + lx];
        }
        barrier();
    }
    if row < rows && col < cols {
        c[row * cols + col] = acc;
    }
}

/// `bench_tiled_matmul` as a CUDA C++ user writes it for `ctx.compile`.
pub const HAND_MATMUL_CUDA: &str = r#"
extern "C" __global__ void hand_tiled_matmul(const float* a, const float* b, float* c,
                                             unsigned int m, unsigned int n, unsigned int k) {
    __shared__ float ta[256];
    __shared__ float tb[256];
    unsigned int lx = threadIdx.x, ly = threadIdx.y;
    unsigned int col = blockIdx.x * 16 + lx, row = blockIdx.y * 16 + ly;
    float acc = 0.0f;
    for (unsigned int t = 0; t < (k + 15) / 16; ++t) {
        unsigned int ac = t * 16 + lx;
        ta[ly * 16 + lx] = (row < m && ac < k) ? a[row * k + ac] : 0.0f;
        unsigned int br = t * 16 + ly;
        tb[ly * 16 + lx] = (br < k && col < n) ? b[br * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < 16; ++j) acc += ta[ly * 16 + j] * tb[j * 16 + lx];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
"#;

/// The same in WGSL: argument i is binding i (arrays as storage buffers,
/// scalars as uniforms), as `Kernel::with_wgsl` expects.
pub const HAND_MATMUL_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> m: u32;
@group(0) @binding(4) var<uniform> n: u32;
@group(0) @binding(5) var<uniform> k: u32;
var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn hand_tiled_matmul(@builtin(global_invocation_id) g: vec3<u32>,
                     @builtin(local_invocation_id) l: vec3<u32>) {
    let col = g.x;
    let row = g.y;
    var acc = 0.0;
    for (var t = 0u; t < (k + 15u) / 16u; t++) {
        let ac = t * 16u + l.x;
        var av = 0.0;
        if (row < m && ac < k) { av = a[row * k + ac]; }
        ta[l.y * 16u + l.x] = av;
        let br = t * 16u + l.y;
        var bv = 0.0;
        if (br < k && col < n) { bv = b[br * n + col]; }
        tb[l.y * 16u + l.x] = bv;
        workgroupBarrier();
        for (var j = 0u; j < 16u; j++) { acc += ta[l.y * 16u + j] * tb[j * 16u + l.x]; }
        workgroupBarrier();
    }
    if (row < m && col < n) { c[row * n + col] = acc; }
}
"#;
