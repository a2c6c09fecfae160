//! Square matmul through the ops layer (cuBLAS on the GPU; 256³ on the
//! CPU backend, whose matmul is set beside numpy's in ops_cpu.rs).

use super::{Better, Case, Env, Out, any_backend};

pub const F32_CASE: Case = Case {
    name: "matmul_f32",
    group: "matmul",
    skip: any_backend,
    run: |env, out| matmul::<f32>(env, out, "f32"),
};

pub const BF16_CASE: Case = Case {
    name: "matmul_bf16",
    group: "matmul",
    skip: any_backend,
    run: |env, out| matmul::<unigpu::bf16>(env, out, "bf16"),
};

fn matmul<T: unigpu::Float>(env: &Env, out: &mut Out, name: &str) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let n = if ctx.backend() == unigpu::Backend::Cpu {
        256
    } else {
        4096
    };
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
    const REPS: usize = 10;
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..REPS {
        ops.matmul(&a, &b, &mut c, (n, n, n))?;
    }
    let end = s.record_timed()?;
    let ms = start.elapsed_ms(&end)? as f64 / REPS as f64;
    let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
    out.info(format!("unigpu_matmul_{name}_n"), n);
    out.figure(
        format!("unigpu_matmul_{name}_ms"),
        format!("matmul {name} {n}³"),
        "ms",
        Better::Lower,
        ms,
    );
    out.figure(
        format!("unigpu_matmul_{name}_TFLOPs"),
        format!("matmul {name} {n}³"),
        "TFLOP/s",
        Better::Higher,
        tflops,
    );
    Ok(())
}
