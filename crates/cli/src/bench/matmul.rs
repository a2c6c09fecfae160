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

pub const BMM_F32_CASE: Case = Case {
    name: "bmm_f32",
    group: "matmul",
    skip: any_backend,
    run: |env, out| bmm::<f32>(&On::run(env), out, "f32"),
};

pub const BMM_BF16_CASE: Case = Case {
    name: "bmm_bf16",
    group: "matmul",
    skip: any_backend,
    run: |env, out| bmm::<unigpu::bf16>(&On::run(env), out, "bf16"),
};

pub const TRANSPOSED_CASE: Case = Case {
    name: "mm_transposed_f32",
    group: "matmul",
    skip: any_backend,
    run: |env, out| transposed::<f32>(&On::run(env), out, "f32"),
};

/// `n` values in [-0.5, 0.5), the same pattern as [`matmul`]'s.
fn pattern<T: unigpu::Float>(n: usize) -> Vec<T> {
    (0..n)
        .map(|i| {
            T::from_acc(
                num_traits::cast(((i * 7919) % 1000) as f64 * 1e-3 - 0.5).unwrap_or_default(),
            )
        })
        .collect()
}

/// Milliseconds per call of `f`, over `reps` calls between two timed
/// events on the default stream (after three untimed ones).
fn time_ms(
    ctx: &unigpu::Context,
    reps: usize,
    mut f: impl FnMut() -> unigpu::Result<()>,
) -> anyhow::Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..reps {
        f()?;
    }
    let end = s.record_timed()?;
    Ok(start.elapsed_ms(&end)? as f64 / reps as f64)
}

/// A batched matmul, `B` products of n×n×n (32 of 512³ on a GPU; 8 of
/// 128³ on the CPU backend), beside torch.bmm of the same sizes
/// (bench/anchors/torch_ops.py).
pub fn bmm<T: unigpu::Float>(on: &On, out: &mut Out, name: &str) -> anyhow::Result<()> {
    let ctx = on.ctx;
    let (g, n): (usize, usize) = if on.small { (8, 128) } else { (32, 512) };
    let host = pattern::<T>(g * n * n);
    let a = ctx.upload(&host)?.reshape([g, n, n])?;
    let b = ctx.upload(&host)?.reshape([g, n, n])?;
    let mut c = ctx.zeros::<T>([g, n, n])?;
    let ops = ctx.ops();
    let ms = time_ms(ctx, 10, || ops.bmm(&a, &b, &mut c))?;
    let tflops = 2.0 * g as f64 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out.info(
        on.key(&format!("bmm_{name}_shape")),
        format!("{g}x{n}x{n}x{n}"),
    );
    out.figure(
        on.key(&format!("bmm_{name}_ms")),
        on.label(format!("bmm {name} {g}×{n}³")),
        "ms",
        Better::Lower,
        ms,
    );
    out.figure(
        on.key(&format!("bmm_{name}_TFLOPs")),
        on.label(format!("bmm {name} {g}×{n}³")),
        "TFLOP/s",
        Better::Higher,
        tflops,
    );
    Ok(())
}

/// `a.t() · b` (a transposed view, read in place) beside the plain
/// `a · b` of the same sizes, in alternating rounds in one process: with
/// no hidden copy the two run at one speed.
pub fn transposed<T: unigpu::Float>(on: &On, out: &mut Out, name: &str) -> anyhow::Result<()> {
    let ctx = on.ctx;
    let n: usize = if on.small { 256 } else { 4096 };
    let host = pattern::<T>(n * n);
    let a = ctx.upload(&host)?.reshape([n, n])?;
    let b = ctx.upload(&host)?.reshape([n, n])?;
    let mut c = ctx.zeros::<T>([n, n])?;
    let ops = ctx.ops();
    let (mut plain, mut at) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        plain = plain.min(time_ms(ctx, 5, || ops.mm(&a, &b, &mut c))?);
        at = at.min(time_ms(ctx, 5, || ops.mm(&a.t(), &b, &mut c))?);
    }
    let tflops = |ms: f64| 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out.info(on.key(&format!("mm_transposed_{name}_n")), n);
    for (key, label, ms) in [
        ("mm_plain", "mm a·b", plain),
        ("mm_at_b", "mm aᵀ·b (a view)", at),
    ] {
        out.figure(
            on.key(&format!("{key}_{name}_TFLOPs")),
            on.label(format!("{label} {name} {n}³, alternating rounds")),
            "TFLOP/s",
            Better::Higher,
            tflops(ms),
        );
    }
    Ok(())
}
