//! A kernel from precompiled code: PTX as nvcc writes it (`nvcc -ptx`, in
//! a build script, say), loaded with `Context::load_module` and launched
//! like a compiled kernel, its arguments checked against the parameter
//! list read from the PTX. A CUBIN or a fatbin loads the same way
//! (`CudaImage::cubin`, `CudaImage::fatbin`).
//!
//! Precompiled CUDA code runs on CUDA devices only: on another backend the
//! example says so, and runs the same kernel's CPU implementation, checked
//! against the PTX's parameter list all the same.
//!
//!     cargo run -p unigpu --example 13_precompiled

use unigpu::kernel::{CudaImage, parse_ptx};
use unigpu::{Context, CpuArgs, Error, Grid, Kernel};

/// `saxpy(float a, const float* x, float* y, unsigned n)` for sm_52, which
/// the driver compiles for any newer GPU.
const SAXPY_PTX: &str = include_str!("../tests/data/saxpy.ptx");

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
    let saxpy = match ctx.load_module(&CudaImage::ptx(SAXPY_PTX)) {
        Ok(module) => {
            println!(
                "loaded PTX on {}: kernels {:?}",
                ctx.backend(),
                module.kernel_names()
            );
            module.kernel("saxpy")?
        }
        Err(e @ Error::Unsupported { .. }) => {
            println!("precompiled CUDA code needs a CUDA device: {e}");
            // The PTX still says what the kernel takes.
            let params = parse_ptx(SAXPY_PTX).remove(0).params;
            Kernel::cpu_only("saxpy", params, saxpy_cpu)
        }
        Err(e) => return Err(e),
    };
    println!("parameters read from the PTX: {:?}", saxpy.params());

    let n = 1_000_003;
    let x: Vec<f32> = (0..n).map(|i| (i % 100) as f32).collect();
    let y: Vec<f32> = vec![1.0; n];
    let dx = ctx.upload(&x)?;
    let mut dy = ctx.upload(&y)?;
    ctx.launch(&saxpy, Grid::for_elems(n), (2.0f32, &dx, &mut dy, n as u32))?;
    let out = dy.download()?;
    assert!(
        out.iter()
            .zip(&x)
            .all(|(o, x)| *o == 2.0f32.mul_add(*x, 1.0))
    );
    println!("saxpy on {}: out[0..4] = {:?}", ctx.backend(), &out[..4]);

    // PTX has `.u32` for n: a 64-bit value is refused before any launch.
    if let Err(e) = ctx.launch(&saxpy, Grid::for_elems(n), (2.0f32, &dx, &mut dy, n as u64)) {
        println!("as expected: {e}");
    }
    Ok(())
}
