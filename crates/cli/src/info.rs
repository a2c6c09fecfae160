//! `unigpu info`.

use anyhow::Context as _;
use unigpu::{Backend, Context, DeviceInfo};

const GIB: f64 = (1u64 << 30) as f64;

pub fn run() -> anyhow::Result<()> {
    println!("unigpu {}", env!("CARGO_PKG_VERSION"));
    let probe = unigpu::cuda_probe();
    println!("CUDA probe:");
    println!("  {}", probe.driver);
    println!("  {}", probe.nvrtc);
    if let Some(v) = probe.driver_version {
        println!("  driver supports CUDA {}.{}", v / 1000, (v % 1000) / 10);
    }
    match &probe.device_count {
        Ok(n) => println!("  devices: {n}"),
        Err(reason) => println!("  devices: none ({reason})"),
    }

    let ctx = Context::default().context("no context could be created")?;
    match &ctx.config().source {
        Some(path) => println!("config: {}", path.display()),
        None => println!("config: none found (defaults, with UNIGPU_* overrides if set)"),
    }
    println!("fallback chain:");
    for attempt in ctx.fallback_chain() {
        println!("  {attempt}");
    }
    println!(
        "chosen backend: {} (device {})",
        ctx.backend(),
        ctx.device_id()
    );

    println!("devices:");
    for backend in Backend::ALL {
        match unigpu::list_devices(backend) {
            Ok(devices) => devices.iter().for_each(print_device),
            Err(e) => println!("  {backend}: none ({e})"),
        }
    }
    Ok(())
}

fn print_device(d: &DeviceInfo) {
    // A CUDA capability where there is one; Vulkan adapters list their
    // type, driver, features and limits below instead.
    let cc = d
        .compute_capability
        .map(|(major, minor)| format!("  compute capability {major}.{minor}"))
        .unwrap_or_default();
    println!(
        "  {}:{}  {}{cc}  memory {:.1} GiB total, {:.1} GiB free",
        d.backend,
        d.ordinal,
        d.name,
        d.memory.total as f64 / GIB,
        d.memory.free as f64 / GIB
    );
    for (name, value) in &d.details {
        println!("      {name}: {value}");
    }
}
