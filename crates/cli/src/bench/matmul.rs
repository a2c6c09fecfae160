//! Square matmul through the ops layer (cuBLAS on the GPU; 256³ on the
//! CPU backend, whose matmul is set beside numpy's in ops_cpu.rs).

use anyhow::ensure;

use super::side::{On, Side};
use super::{Better, Case, Out, any_backend};

pub const F32_CASE: Case = Case {
    name: "matmul_f32",
    group: "matmul",
    skip: any_backend,
    run: |env, out| matmul::<f32>(&On::run(env), out, "f32"),
};

pub const BF16_CASE: Case = Case {
    name: "matmul_bf16",
    group: "matmul",
    skip: any_backend,
    run: |env, out| matmul::<unigpu::bf16>(&On::run(env), out, "bf16"),
};

/// The matmul figures of `on`'s context in `T` (vulkan.rs measures f32 on
/// vulkan with it).
pub fn matmul<T: unigpu::Float>(on: &On, out: &mut Out, name: &str) -> anyhow::Result<()> {
    let ctx = on.ctx;
    let n: usize = if on.small { 256 } else { 4096 };
    let host: Vec<T> = (0..n * n)
        .map(|i| {
            T::from_acc(
                num_traits::cast(((i * 7919) % 1000) as f64 * 1e-3 - 0.5).unwrap_or_default(),
            )
        })
        .collect();
    let a = ctx.upload(&host)?;
    let b = ctx.upload(&host)?;
    let mut c = ctx.zeros::<T>(n * n)?;
    let ops = ctx.ops();
    for _ in 0..3 {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    if on.side == Side::Vulkan {
        check_first_row(on, &host, &c.download()?, n)?;
    }
    const REPS: usize = 10;
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..REPS {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    let end = s.record_timed()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out.info(on.key(&format!("matmul_{name}_n")), n);
    out.figure(
        on.key(&format!("matmul_{name}_ms")),
        on.label(format!("matmul {name} {n}³")),
        "ms",
        Better::Lower,
        ms,
    );
    out.figure(
        on.key(&format!("matmul_{name}_TFLOPs")),
        on.label(format!("matmul {name} {n}³")),
        "TFLOP/s",
        Better::Higher,
        tflops,
    );
    Ok(())
}

/// Row 0 of `c = host · host` against the host, so that a fast wrong
/// kernel fails. Beside the run only, as the vulkan case always did: it
/// measures f32 there, and the bound is f32's (bf16 would need its own).
fn check_first_row<T: unigpu::Float>(
    on: &On,
    host: &[T],
    got: &[T],
    n: usize,
) -> anyhow::Result<()> {
    let at = |i: usize| -> f64 { host[i].to_acc().into() };
    for (j, g) in got.iter().enumerate().take(n) {
        let want: f64 = (0..n).map(|p| at(p) * at(p * n + j)).sum();
        let got_j: f64 = g.to_acc().into();
        let bound = 1e-5 * n as f64;
        ensure!(
            (got_j - want).abs() <= bound,
            "{}",
            on.label(format!("matmul: c[0][{j}] = {got_j}, the host says {want}"))
        );
    }
    Ok(())
}
