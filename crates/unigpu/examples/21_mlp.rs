//! A two-layer MLP trained end to end on generated data (issue 28, item
//! 8): matmul, a bias added by broadcasting, relu, softmax cross-entropy,
//! their gradients written with the same ops, SGD; host batches fed
//! through the pipeline helper (upload, one training step, download of the
//! batch's losses, overlapped across batches).
//!
//! The same program runs on `Context::default()`'s backend and on the CPU
//! backend from the same seed; the loss must fall, and after 100 steps the
//! two backends' losses must agree within the bound printed (their matmuls
//! add in different orders).
//!
//!     cargo run --release -p unigpu --example 21_mlp

use unigpu::random::Generator;
use unigpu::{Context, GpuArray, Result};

const D: usize = 32; // inputs
const H: usize = 64; // hidden units
const C: usize = 8; // classes
const B: usize = 128; // batch
const STEPS: usize = 100;
const LR: f32 = 0.5;

/// The weights and biases.
struct Mlp {
    w1: GpuArray<f32>,
    b1: GpuArray<f32>,
    w2: GpuArray<f32>,
    b2: GpuArray<f32>,
}

impl Mlp {
    /// He-initialised weights from `seed` (the generator gives the same
    /// bits on every backend), zero biases.
    fn new(ctx: &Context, seed: u64) -> Result<Mlp> {
        let mut g = Generator::new(seed);
        Ok(Mlp {
            w1: g.normal::<f32>(ctx, [D, H], 0.0, (2.0 / D as f64).sqrt())?,
            b1: ctx.zeros([H])?,
            w2: g.normal::<f32>(ctx, [H, C], 0.0, (2.0 / H as f64).sqrt())?,
            b2: ctx.zeros([C])?,
        })
    }

    /// One SGD step on a batch packed as `[x (B×D) | one-hot labels
    /// (B×C)]`; writes each sample's cross-entropy into `losses[..B]`.
    fn step(
        &mut self,
        ctx: &Context,
        stream: &unigpu::Stream,
        batch: &GpuArray<f32>,
        losses: &mut GpuArray<f32>,
    ) -> Result<()> {
        let ops = ctx.ops_on(stream);
        let x = batch.view().slice(0, 0..B * D)?.reshape([B, D])?;
        let y = batch.view().slice(0, B * D..B * (D + C))?.reshape([B, C])?;

        // Forward: z1 = x W1 + b1, h = relu(z1), logits = h W2 + b2.
        let mut xw = ctx.alloc::<f32>([B, H])?;
        ops.mm(&x, &self.w1, &mut xw)?;
        let mut z1 = ctx.alloc::<f32>([B, H])?;
        ops.add(&xw, &self.b1, &mut z1)?;
        let mut h = ctx.alloc::<f32>([B, H])?;
        ops.relu(&z1, &mut h)?;
        let mut hw = ctx.alloc::<f32>([B, C])?;
        ops.mm(&h, &self.w2, &mut hw)?;
        let mut logits = ctx.alloc::<f32>([B, C])?;
        ops.add(&hw, &self.b2, &mut logits)?;

        // Loss per sample: -sum(y * log_softmax(logits)).
        let mut logp = ctx.alloc::<f32>([B, C])?;
        ops.log_softmax(&logits, 1, &mut logp)?;
        let mut ylogp = ctx.alloc::<f32>([B, C])?;
        ops.mul(&y, &logp, &mut ylogp)?;
        let mut nll = ops.sum_axes(&ylogp, Some(&[1]), false)?;
        ops.scale(-1.0, &mut nll)?;
        ops.copy(&nll, &mut losses.view_mut().slice(0, 0..B)?)?;

        // Backward: dlogits = (softmax(logits) - y) / B.
        let mut p = ctx.alloc::<f32>([B, C])?;
        ops.softmax(&logits, 1, &mut p)?;
        let mut dlogits = ctx.alloc::<f32>([B, C])?;
        ops.sub(&p, &y, &mut dlogits)?;
        ops.scale(1.0 / B as f32, &mut dlogits)?;
        let mut dw2 = ctx.alloc::<f32>([H, C])?;
        ops.mm(&h.t(), &dlogits, &mut dw2)?;
        let db2 = ops.sum_axes(&dlogits, Some(&[0]), false)?;
        let mut dh = ctx.alloc::<f32>([B, H])?;
        ops.mm(&dlogits, &self.w2.t(), &mut dh)?;
        // relu': the gradient where z1 > 0, else 0.
        let zero = ctx.zeros::<f32>(Vec::<usize>::new())?;
        let mut positive = ctx.alloc::<u8>([B, H])?;
        ops.gt(&z1, &zero, &mut positive)?;
        let mut dz1 = ctx.alloc::<f32>([B, H])?;
        ops.where_(&positive, &dh, &zero, &mut dz1)?;
        let mut dw1 = ctx.alloc::<f32>([D, H])?;
        ops.mm(&x.t(), &dz1, &mut dw1)?;
        let db1 = ops.sum_axes(&dz1, Some(&[0]), false)?;

        // SGD.
        ops.axpy(-LR, &dw1, &mut self.w1)?;
        ops.axpy(-LR, &db1, &mut self.b1)?;
        ops.axpy(-LR, &dw2, &mut self.w2)?;
        ops.axpy(-LR, &db2, &mut self.b2)?;
        Ok(())
    }
}

/// `STEPS` host batches: inputs from a normal generator, labels from a
/// random teacher network (argmax of x·T), made once on the CPU backend.
fn batches(seed: u64) -> Result<Vec<Vec<f32>>> {
    let cpu = Context::host()?;
    let mut g = Generator::new(seed);
    let teacher = g.normal::<f32>(&cpu, [D, C], 0.0, 1.0)?;
    (0..STEPS)
        .map(|_| {
            let x = g.normal::<f32>(&cpu, [B, D], 0.0, 1.0)?;
            let mut scores = cpu.alloc::<f32>([B, C])?;
            cpu.ops().mm(&x, &teacher, &mut scores)?;
            let labels = cpu.ops().argmax(&scores, Some(1), false)?.download()?;
            let mut batch = x.download()?;
            batch.extend((0..B * C).map(|k| f32::from(labels[k / C] as usize == k % C)));
            Ok(batch)
        })
        .collect()
}

/// Trains from `seed` on `ctx`; the mean loss of each batch.
fn train(ctx: &Context, data: &[Vec<f32>], seed: u64) -> Result<Vec<f32>> {
    let mut mlp = Mlp::new(ctx, seed)?;
    let len = B * (D + C);
    let mut outputs = vec![vec![0.0f32; len]; data.len()];
    let mut pipeline = ctx.pipeline::<f32>(2, len)?;
    pipeline.run(data, &mut outputs, |s, batch, losses| {
        mlp.step(ctx, s, batch, losses)
    })?;
    Ok(outputs
        .iter()
        .map(|o| o[..B].iter().sum::<f32>() / B as f32)
        .collect())
}

fn main() -> Result<()> {
    let seed = 2026;
    let data = batches(seed)?;
    let ctx = Context::default()?;
    let losses = train(&ctx, &data, seed)?;
    let reference = train(&Context::host()?, &data, seed)?;
    let (first, last) = (losses[0], *losses.last().unwrap());
    println!(
        "{} backend: loss {first:.4} after step 1, {last:.4} after step {STEPS} (cpu: {:.4})",
        ctx.backend(),
        reference.last().unwrap()
    );
    assert!(
        last < 0.5 * first,
        "the loss did not fall: {first} -> {last}"
    );
    // Every step agrees with the CPU backend's within this bound: the
    // matmuls and reductions add in different orders on each backend, and
    // 100 steps of SGD carry the differences forward.
    let bound = 2e-3;
    for (k, (a, b)) in losses.iter().zip(&reference).enumerate() {
        assert!(
            (a - b).abs() <= bound * b.abs().max(1.0),
            "step {}: {a} on {} against {b} on cpu",
            k + 1,
            ctx.backend()
        );
    }
    println!("every step within {bound} (relative) of the cpu backend's loss");
    Ok(())
}
