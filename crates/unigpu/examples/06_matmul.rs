//! matmul: cuBLAS on CUDA, faer on the CPU backend, one
//! call. Checked against a naive host product.
//!
//!     cargo run -p unigpu --example 06_matmul

use unigpu::Context;

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let (m, k, n) = (128, 64, 96);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 37) % 17) as f32 - 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 11) % 13) as f32 - 6.0).collect();

    let da = ctx.upload(&a)?;
    let db = ctx.upload(&b)?;
    let mut dc = ctx.zeros::<f32>(m * n)?;
    ctx.ops().matmul(&da, &db, &mut dc, (m, k, n))?;
    let c = dc.download()?;

    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            assert_eq!(c[i * n + j], want, "c[{i},{j}]");
        }
    }
    println!(
        "matmul {m}x{k} · {k}x{n} on {}: all {} entries match",
        ctx.backend(),
        m * n
    );
    Ok(())
}
