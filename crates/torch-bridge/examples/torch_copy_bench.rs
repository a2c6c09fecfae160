//! H2D and D2H through the bridge, as `key value` lines that `bench/runners/ratios.py`
//! compares with torch's own copies measured in the same run
//! (`torch_cupy_baseline.py`: `d.copy_(pinned, non_blocking=True)` and back,
//! timed the same way: median wall time of copy + synchronize).

#[cfg(feature = "torch")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::time::Instant;
    use unigpu_torch_bridge as c10;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    let status = c10::cuda_status()?;
    if !status.is_empty() {
        return Err(format!("this benchmark needs CUDA through torch: {status}").into());
    }
    let s = c10::stream_from_pool(0, false)?;
    for mib in [64i64, 256] {
        let n = mib << 18; // f32 elements in `mib` MiB
        let bytes = (mib << 20) as f64;
        let host = c10::tensor_randn(&[n], -1)?.pin_memory()?;
        let mut pinned_out = c10::tensor_randn(&[n], -1)?.pin_memory()?;
        let mut device = c10::tensor_randn(&[n], 0)?;
        let time = |f: &mut dyn FnMut() -> Result<(), c10::Error>| -> Result<f64, c10::Error> {
            f()?;
            let mut ts = Vec::new();
            for _ in 0..10 {
                let t = Instant::now();
                f()?;
                s.synchronize()?;
                ts.push(t.elapsed().as_secs_f64());
            }
            Ok(median(ts))
        };
        let to_stream_h2d = time(&mut || host.to_stream(0, true, &s).map(drop))?;
        let copy_h2d = time(&mut || {
            let _g = c10::guard_stream(&s)?;
            device.copy_from(&host, true)
        })?;
        let copy_d2h = time(&mut || {
            let _g = c10::guard_stream(&s)?;
            pinned_out.copy_from(&device, true)
        })?;
        let to_stream_d2h = time(&mut || device.to_stream(-1, true, &s).map(drop))?;
        println!(
            "unigpu_torch_to_stream_h2d_pinned_{mib}MiB_GBps {:.3}",
            bytes / to_stream_h2d / 1e9
        );
        println!(
            "unigpu_torch_copy_h2d_pinned_{mib}MiB_GBps {:.3}",
            bytes / copy_h2d / 1e9
        );
        println!(
            "unigpu_torch_copy_d2h_pinned_{mib}MiB_GBps {:.3}",
            bytes / copy_d2h / 1e9
        );
        println!(
            "unigpu_torch_to_stream_d2h_{mib}MiB_GBps {:.3}",
            bytes / to_stream_d2h / 1e9
        );
    }
    Ok(())
}

#[cfg(not(feature = "torch"))]
fn main() {
    eprintln!("build with --features unigpu-torch-bridge/torch (see docs/torch.md)");
    std::process::exit(2);
}
