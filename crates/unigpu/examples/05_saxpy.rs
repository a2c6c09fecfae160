//! saxpy with a custom kernel: CUDA C++ compiled at run time by NVRTC, and
//! a Rust implementation of the same kernel for the CPU backend.
//!
//!     cargo run -p unigpu --example 05_saxpy

use unigpu::{Context, CpuArgs, Grid};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
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
    let saxpy = ctx.compile(SAXPY)?.kernel("saxpy")?.with_cpu(saxpy_cpu);

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
