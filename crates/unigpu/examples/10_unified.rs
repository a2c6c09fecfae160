//! Unified (managed) memory: one array that the host fills and reads in
//! place and a kernel updates on the device, with no explicit copy.
//! Managed memory on CUDA, plain host memory on the CPU backend.
//!
//!     cargo run -p unigpu --example 10_unified

use unigpu::{Backend, Context, CpuArgs, Error, Grid, Location};

const SCALE: &str = r#"
extern "C" __global__ void scale(float a, float* x, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i];
}
"#;

/// What the kernel does, over host slices, for the CPU backend.
fn scale_cpu(args: &CpuArgs) -> unigpu::Result<()> {
    let a: f32 = args.scalar(0)?;
    let mut x = args.output::<f32>(1)?;
    for v in x.iter_mut() {
        *v *= a;
    }
    Ok(())
}

fn main() -> unigpu::Result<()> {
    let mut ctx = Context::default()?;
    let n = 1_000_003;
    let mut x = match ctx.alloc_unified::<f32>(n) {
        Ok(x) => x,
        // torch's allocator has no managed memory: the cuda backend on the
        // same GPU has.
        Err(e @ Error::Unsupported { .. }) if ctx.backend() == Backend::Torch => {
            println!("{e}; using the cuda backend");
            ctx = Context::new(Backend::Cuda, ctx.device_id())?;
            ctx.alloc_unified::<f32>(n)?
        }
        // Nor has wgpu: no memory that host and shaders address at once.
        Err(e @ Error::Unsupported { .. }) if ctx.backend() == Backend::Vulkan => {
            println!("{e}; using the cpu backend");
            ctx = Context::host()?;
            ctx.alloc_unified::<f32>(n)?
        }
        Err(e) => return Err(e),
    };
    let kernel = ctx.compile(SCALE)?.kernel("scale")?.with_cpu(scale_cpu);

    // Fill in place from the host: no upload.
    for (i, v) in x.host_view_mut()?.iter_mut().enumerate() {
        *v = (i % 100) as f32;
    }
    let s = ctx.create_stream()?;
    s.prefetch(&x, Location::Device)?; // a hint: no page faults in the kernel
    s.launch(&kernel, Grid::for_elems(n), (3.0f32, &mut x, n as u32))?;
    s.prefetch(&x, Location::Host)?;

    // Read in place: the view waits for the launch. No download.
    let view = x.host_view()?;
    assert!(
        view.iter()
            .enumerate()
            .all(|(i, v)| *v == 3.0 * (i % 100) as f32)
    );
    println!(
        "unified memory on {}: x[0..4] = {:?}",
        ctx.backend(),
        &view[..4]
    );
    drop(view);

    // More than the device has free is refused, with the free bytes.
    let total = ctx.memory_info()?.total;
    if let Err(e) = ctx.alloc_unified::<u8>(total + 1) {
        println!("as expected: {e}");
    }
    Ok(())
}
