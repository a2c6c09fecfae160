//! Where an empty launch's and an alloc + free's cost goes, layer by layer,
//! on one CUDA GPU: the bare driver call, the same with cudarc's context
//! check, unigpu-cuda-safe's `launch`, and the facade's `Stream::launch`;
//! the caching allocator under `DeviceBuffer`, and the facade's
//! `Context::alloc`; an untimed event record as a bare `cuEventRecord` and
//! as the facade's `Stream::record`. Rounds of every layer alternate in one process, and
//! the median of seven is printed (issue 29 item 4; docs/benchmarks.md).
//!
//! ```text
//! cargo run --release -p unigpu-cli --example small_paths
//! ```

use std::time::Instant;

use unigpu::{Backend, Context, Grid};
use unigpu_cuda_safe::floor::RawLaunch;

const LAUNCHES: usize = 20_000;
const ALLOCS: usize = 100_000;
const RECORDS: usize = 100_000;
const ROUNDS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let ctx = Context::new(Backend::Cuda, 0)?;
    let device = unigpu_cuda_safe::CudaDevice::open(ctx.device_id())?;
    let raw = RawLaunch::new(&device)?;
    let kernel = ctx
        .compile("extern \"C\" __global__ void empty() {}\n")?
        .kernel("empty")?;
    // An empty kernel with the arguments of a typical one (two arrays,
    // two scalars): what the argument lists cost.
    let with_args = ctx
        .compile(
            "extern \"C\" __global__ void axpy(float* y, const float* x, float a, int n) {}\n",
        )?
        .kernel("axpy")?;
    let stream = ctx.create_stream()?;
    let g = Grid::new((1, 1, 1), (1, 1, 1));
    let x = ctx.upload(&[1.0f32])?;
    let mut y = ctx.upload(&[2.0f32])?;
    let mut args_launch = || -> anyhow::Result<f64> {
        let t = Instant::now();
        for _ in 0..LAUNCHES {
            stream.launch(&with_args, g, (&mut y, &x, 2.0f32, 1i32))?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64;
        stream.sync()?;
        Ok(us)
    };
    let facade_launch = || -> anyhow::Result<f64> {
        let t = Instant::now();
        for _ in 0..LAUNCHES {
            stream.launch(&kernel, g, ())?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64;
        stream.sync()?;
        Ok(us)
    };
    let event_stream = ctx.create_stream()?;
    let facade_record = || -> anyhow::Result<f64> {
        let t = Instant::now();
        for _ in 0..RECORDS {
            drop(event_stream.record()?);
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / RECORDS as f64;
        event_stream.sync()?;
        Ok(us)
    };
    let kept_event = event_stream.record()?;
    let facade_rerecord = || -> anyhow::Result<f64> {
        let t = Instant::now();
        for _ in 0..RECORDS {
            kept_event.record(&event_stream)?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / RECORDS as f64;
        event_stream.sync()?;
        Ok(us)
    };
    let facade_alloc = || -> anyhow::Result<f64> {
        let t = Instant::now();
        for _ in 0..ALLOCS {
            drop(ctx.alloc::<u8>(1 << 20)?);
        }
        Ok(t.elapsed().as_secs_f64() * 1e6 / ALLOCS as f64)
    };
    // Warm every path first (module loads, the allocator's first segment).
    raw.submit_us(1000)?;
    raw.submit_safe_us(1000)?;
    facade_launch()?;
    args_launch()?;
    raw.alloc_free_safe_us(1 << 20, 1000)?;
    facade_alloc()?;
    raw.event_record_us(1000)?;
    facade_record()?;
    // `small_paths PHASE`: one layer for a few seconds, for a profiler.
    if let Some(phase) = std::env::args().nth(1) {
        for _ in 0..40 {
            match phase.as_str() {
                "safe-launch" => drop(raw.submit_safe_us(LAUNCHES)?),
                "facade-launch" => drop(facade_launch()?),
                "safe-alloc" => drop(raw.alloc_free_safe_us(1 << 20, ALLOCS)?),
                "facade-alloc" => drop(facade_alloc()?),
                "args-launch" => drop(args_launch()?),
                "facade-record" => drop(facade_record()?),
                _ => anyhow::bail!(
                    "phases: safe-launch, facade-launch, args-launch, safe-alloc, facade-alloc, facade-record"
                ),
            }
        }
        return Ok(());
    }
    let mut rows: [(&str, Vec<f64>); 12] = [
        ("launch: bare cuLaunchKernel", Vec::new()),
        ("launch: + cuCtxGetCurrent", Vec::new()),
        ("launch: unigpu-cuda-safe", Vec::new()),
        ("launch: facade Stream::launch", Vec::new()),
        ("launch: facade, 2 arrays + 2 scalars", Vec::new()),
        ("alloc+free 1 MiB: DeviceBuffer", Vec::new()),
        ("alloc+free 1 MiB: Context::alloc", Vec::new()),
        ("event record: bare cuEventRecord", Vec::new()),
        ("event record: unigpu-cuda-safe, kept", Vec::new()),
        ("event record: unigpu-cuda-safe, pooled", Vec::new()),
        ("event record: facade Event::record", Vec::new()),
        ("event record: facade Stream::record", Vec::new()),
    ];
    for _ in 0..ROUNDS {
        rows[0].1.push(raw.submit_us(LAUNCHES)?);
        rows[1].1.push(raw.submit_checking_context_us(LAUNCHES)?);
        rows[2].1.push(raw.submit_safe_us(LAUNCHES)?);
        rows[3].1.push(facade_launch()?);
        rows[4].1.push(args_launch()?);
        rows[5].1.push(raw.alloc_free_safe_us(1 << 20, ALLOCS)?);
        rows[6].1.push(facade_alloc()?);
        rows[7].1.push(raw.event_record_us(RECORDS)?);
        rows[8].1.push(raw.event_record_safe_us(RECORDS, false)?);
        rows[9].1.push(raw.event_record_safe_us(RECORDS, true)?);
        rows[10].1.push(facade_rerecord()?);
        rows[11].1.push(facade_record()?);
    }
    let bare = median(rows[0].1.clone());
    let bare_record = median(rows[7].1.clone());
    println!("{:<38} {:>9} {:>8}", "layer", "us", "x bare");
    for (name, v) in rows {
        let us = median(v);
        let ratio = if name.starts_with("launch") {
            format!("{:.3}", us / bare)
        } else if name.starts_with("event") {
            format!("{:.3}", us / bare_record)
        } else {
            String::new()
        };
        println!("{name:<38} {us:>9.4} {ratio:>8}");
    }
    Ok(())
}
