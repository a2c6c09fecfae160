//! saxpy with a custom kernel: CUDA C++ compiled at run time by NVRTC, a
//! Rust implementation of the same kernel for the CPU backend, and WGSL for
//! the vulkan backend; one `launch` runs the one that fits the context.
//!
//!     cargo run -p unigpu --example 05_saxpy
//!     UNIGPU_BACKEND=vulkan cargo run -p unigpu --example 05_saxpy

use unigpu::{Context, CpuArgs, Grid};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// The same kernel in WGSL: argument i is binding i (arrays as storage
/// buffers, scalars as uniforms).
const SAXPY_WGSL: &str = r#"
@group(0) @binding(0) var<uniform> a: f32;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[g.x] = a * x[g.x] + y[g.x]; }
}
"#;

/// What the kernel does, over host slices, for the CPU backend.
fn saxpy_cpu(args: &CpuArgs) -> unigpu::Result<()> {
    let a: f32 = args.scalar(0)?;
    let x = args.input::<f32>(1)?;
    let mut y = args.output::<f32>(2)?;
    for (y, x) in y.iter_mut().zip(x.iter()) {
        *y = a.mul_add(*x, *y);
    }
    Ok(())
}

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let saxpy = ctx
        .compile(SAXPY)?
        .kernel("saxpy")?
        .with_cpu(saxpy_cpu)
        .with_wgsl(SAXPY_WGSL)?;

    let n = 1_000_003; // not a multiple of the block size
    let x: Vec<f32> = (0..n).map(|i| (i % 100) as f32).collect();
    let y: Vec<f32> = vec![1.0; n];
    let dx = ctx.upload(&x)?;
    let mut dy = ctx.upload(&y)?;

    // Argument types are checked against the kernel's declaration.
    ctx.launch(&saxpy, Grid::for_elems(n), (2.0f32, &dx, &mut dy, n as u32))?;
    let out = dy.download()?;
    assert!(
        out.iter()
            .zip(&x)
            .all(|(o, x)| *o == 2.0f32.mul_add(*x, 1.0))
    );
    println!("saxpy on {}: out[0..4] = {:?}", ctx.backend(), &out[..4]);

    // A mistake is an error, not a crash.
    if let Err(e) = ctx.launch(&saxpy, Grid::for_elems(n), (2.0f64, &dx, &mut dy, n as u32)) {
        println!("as expected: {e}");
    }
    Ok(())
}
