//! The vulkan backend: an adapter by number, what it can do, a WGSL kernel,
//! the built-in ops and GPU-timed events. Exits 2 with "no Vulkan adapter
//! here: ..." where none opens (a run that checked nothing is no pass).
//!
//!     cargo run -p unigpu --example 11_vulkan

use unigpu::{Backend, Context, Grid, Kernel};

/// Each element squared, plus one: argument i is binding i.
const SQUARE_PLUS_ONE: &str = r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> n: u32;
@compute @workgroup_size(64)
fn square_plus_one(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[g.x] = x[g.x] * x[g.x] + 1.0; }
}
"#;

fn main() -> unigpu::Result<()> {
    // Adapter 0: hardware first, then software ones such as lavapipe.
    let ctx = match Context::new(Backend::Vulkan, 0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("no Vulkan adapter here: {e}");
            std::process::exit(2);
        }
    };
    let info = ctx.device_info()?;
    println!("vulkan:0 is {}", info.name);
    for (name, value) in &info.details {
        println!("  {name}: {value}");
    }

    // A kernel with only WGSL: its parameters come from the bindings.
    let kernel = Kernel::from_wgsl("square_plus_one", SQUARE_PLUS_ONE)?;
    println!("parameters read from the shader: {:?}", kernel.params());
    let n = 100_003;
    let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01).collect();
    let x = ctx.upload(&host)?;
    let mut y = ctx.zeros::<f32>(n)?;
    let s = ctx.create_stream()?;
    let start = s.record_timed()?;
    s.launch(
        &kernel,
        Grid::for_elems_with_block(n, 64),
        (&x, &mut y, n as u32),
    )?;
    // Built-in ops on the same stream: y = 2 * y, then its sum.
    ctx.ops_on(&s).scale(2.0, &mut y)?;
    let end = s.record_timed()?;
    let out = s.download(&y)?;
    for (i, (o, v)) in out.iter().zip(&host).enumerate() {
        let want = 2.0 * (v * v + 1.0);
        assert!(
            (o - want).abs() <= 1e-5 * want,
            "element {i}: {o} vs {want}"
        );
    }
    println!(
        "kernel + scale on {} elements: {:.3} ms of GPU time (timestamp queries)",
        n,
        start.elapsed_ms(&end)?
    );
    println!("sum: {}", ctx.ops().sum(&y)?);
    Ok(())
}
