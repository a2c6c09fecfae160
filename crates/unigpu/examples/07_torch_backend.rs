//! The torch backend: the same API over torch tensors, c10 streams and
//! torch ops, and arrays moving to a cuda context on the GPU.
//!
//!     LIBTORCH_USE_PYTORCH=1 cargo run -p unigpu --features torch --example 07_torch_backend
//!
//! Needs a GPU usable through torch; without one it says so ("no torch GPU
//! here: ...") and exits with status 2, so that a run that could not check
//! anything is never counted as a pass.

use unigpu::{Backend, Context, Grid};

const SCALE_ADD: &str = r#"
extern "C" __global__ void scale_add(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"#;

/// The exit status when torch sees no GPU: the example could not run.
const NO_TORCH_GPU: i32 = 2;

fn main() -> unigpu::Result<()> {
    let ctx = match Context::new(Backend::Torch, 0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("no torch GPU here: {e}");
            std::process::exit(NO_TORCH_GPU);
        }
    };
    println!("backend {} on {}", ctx.backend(), ctx.device_name()?);

    // Two c10 pool streams; each array's uses are ordered across them.
    let (s1, s2) = (ctx.create_stream()?, ctx.create_stream()?);
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut dx = ctx.alloc::<f32>(n)?;
    let mut relu = ctx.alloc::<f32>(n)?;
    let mut sig = ctx.alloc::<f32>(n)?;
    s1.upload(&x, &mut dx)?;
    ctx.ops_on(&s1).relu(&dx, &mut relu)?; // a torch op on s1
    ctx.ops_on(&s2).sigmoid(&dx, &mut sig)?; // on s2, after the upload on s1

    // A custom kernel on a c10 stream, over the same tensors.
    let k = ctx.compile(SCALE_ADD)?.kernel("scale_add")?;
    s2.launch(&k, Grid::for_elems(n), (2.0f32, &relu, &mut sig, n as u32))?;

    // To a cuda context on the same GPU, without going through the host.
    let cuda = Context::new(Backend::Cuda, ctx.device_id())?;
    let moved = sig.to_context(&cuda)?;
    let out = moved.download()?;
    for (i, (&v, &xi)) in out.iter().zip(&x).enumerate() {
        let want = 2.0 * xi.max(0.0) + 1.0 / (1.0 + (-xi).exp());
        assert!(
            (v - want).abs() <= 1e-5 * want.abs().max(1.0),
            "element {i}: {v} vs {want}"
        );
    }
    println!("relu, sigmoid and a custom kernel on two c10 streams: {n} elements match the host");
    Ok(())
}
