//! `y = a·x + y` over f32: memory bandwidth through the ops layer.

use anyhow::ensure;

use super::side::On;
use super::{Better, Case, Out, any_backend};

pub const CASE: Case = Case {
    name: "axpy",
    group: "axpy",
    skip: any_backend,
    run: |env, out| axpy(&On::run(env), out),
};

/// The axpy figures of `on`'s context (vulkan.rs measures vulkan with it).
pub fn axpy(on: &On, out: &mut Out) -> anyhow::Result<()> {
    let ctx = on.ctx;
    let n: usize = if on.small { 1 << 22 } else { 1 << 26 };
    let hx: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 1e-3).collect();
    let x = ctx.upload(&hx)?;
    let mut y = ctx.zeros::<f32>(n)?;
    let ops = ctx.ops();
    ops.axpy(2.0, &x, &mut y)?;
    let check = y.download()?;
    ensure!(
        check.iter().zip(&hx).all(|(y, x)| *y == 2.0 * x),
        "{}",
        on.label("axpy gave a wrong result")
    );
    const REPS: usize = 20;
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..REPS {
        ops.axpy(2.0, &x, &mut y)?;
    }
    let end = s.record_timed()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    // Reads x and y, writes y.
    let gbps = 3.0 * 4.0 * n as f64 / (ms * 1e-3) / 1e9;
    let size = format!("2^{}", n.trailing_zeros());
    out.info(on.key("axpy_f32_n"), n);
    out.figure(
        on.key("axpy_f32_ms"),
        on.label(format!("axpy f32 {size}")),
        "ms",
        Better::Lower,
        ms,
    );
    out.figure(
        on.key("axpy_f32_GBps"),
        on.label(format!("axpy f32 {size}, read x, y + write y")),
        "GB/s",
        Better::Higher,
        gbps,
    );
    Ok(())
}
