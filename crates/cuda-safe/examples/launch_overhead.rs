//! Where launch time goes: the same empty kernel launched through cudarc's
//! safe API, cudarc's raw `launch_kernel`, and this crate's `launch`, in one
//! process. Run on a GPU machine; prints `key value` lines.

use std::time::Instant;

use cudarc::driver::{CudaContext, LaunchConfig};
use unigpu_cuda_safe::{CudaDevice, CudaModuleHandle, CudaStreamHandle, LaunchDims, launch, nvrtc};

const N: usize = 20_000;

fn time(label: &str, mut f: impl FnMut()) {
    for _ in 0..1000 {
        f();
    }
    let t = Instant::now();
    for _ in 0..N {
        f();
    }
    println!("{label} {:.3}", t.elapsed().as_secs_f64() * 1e6 / N as f64);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = CudaDevice::open(0)?;
    let (major, minor) = device.properties()?.compute_capability;
    let arch = format!("--gpu-architecture=sm_{major}{minor}");
    let compiled = nvrtc::compile(
        "extern \"C\" __global__ void empty() {}",
        "empty.cu",
        &[arch],
        &[],
    )?;

    // cudarc alone, on its own stream.
    let ctx = CudaContext::new(0)?;
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))?;
    let func = module.load_function("empty")?;
    let stream = ctx.new_stream()?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    time("cudarc_launch_builder_us", || {
        let mut b = stream.launch_builder(&func);
        // SAFETY: an empty kernel with no parameters.
        unsafe { b.launch(cfg) }.unwrap();
    });
    stream.synchronize()?;
    time("cudarc_result_launch_kernel_us", || {
        // SAFETY: an empty kernel with no parameters, on a live stream.
        unsafe {
            cudarc::driver::result::launch_kernel(
                func.cu_function(),
                (1, 1, 1),
                (1, 1, 1),
                0,
                stream.cu_stream(),
                &mut [],
            )
        }
        .unwrap();
    });
    stream.synchronize()?;

    // This crate.
    let ours = CudaStreamHandle::new(&device)?;
    let m = CudaModuleHandle::load(&device, &compiled.cubin)?;
    let f = m.function("empty")?;
    let dims: LaunchDims = cfg;
    time("unigpu_cuda_safe_launch_us", || {
        launch(&ours, &f, dims, &mut []).unwrap()
    });
    ours.synchronize()?;
    Ok(())
}
