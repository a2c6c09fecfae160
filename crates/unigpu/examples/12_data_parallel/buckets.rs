//! Training with bucketed gradient all-reduce, as torch's
//! DistributedDataParallel does it: an MLP (`LAYERS` square layers of
//! `WIDTH`, no biases, relu between, half the squared error as the loss)
//! replicated on every GPU, each replica on its own batch. The backward
//! pass writes each layer's weight gradient into its slot of a flat
//! bucket (buckets of at least 25 MiB, filled from the last layer back,
//! the first one closed after one layer as DDP's 1 MiB first bucket is),
//! and each bucket is averaged over the GPUs on a stream of its own as
//! soon as its last gradient is written, while the backward pass goes on
//! for the layers before it. SGD then reads the averaged buckets.
//!
//! One thread enqueues every GPU's work, a layer at a time; ordering
//! between the compute and communication streams comes from the arrays'
//! use records alone. `bench/anchors/torch_ddp.py` is the same model,
//! data sizes and buckets under `torch.nn.parallel.DistributedDataParallel`.

use std::time::Instant;

use unigpu::random::Generator;
use unigpu::{Communicator, Context, GpuArray, ReduceOp, Result};

pub const WIDTH: usize = 2048;
pub const LAYERS: usize = 8;
/// Rows of each GPU's batch (weak scaling: every GPU gets this many).
pub const BATCH: usize = 4096;
const BUCKET_BYTES: usize = 25 << 20;
/// DDP closes its first bucket at 1 MiB, so the last layer's gradient is
/// on the wire as early as possible.
const FIRST_BUCKET_BYTES: usize = 1 << 20;
const LR: f32 = 1e-3;

/// Which layers each bucket holds, from the last layer back, and where
/// each layer's gradient sits in its bucket: `(bucket, offset)`.
fn plan() -> (Vec<Vec<usize>>, Vec<(usize, usize)>) {
    let layer_bytes = WIDTH * WIDTH * 4;
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new()];
    let mut slot = vec![(0, 0); LAYERS];
    for layer in (0..LAYERS).rev() {
        let index = buckets.len() - 1;
        let cap = if index == 0 {
            FIRST_BUCKET_BYTES
        } else {
            BUCKET_BYTES
        };
        let open = &mut buckets[index];
        slot[layer] = (index, open.len() * WIDTH * WIDTH);
        open.push(layer);
        if open.len() * layer_bytes >= cap && layer > 0 {
            buckets.push(Vec::new());
        }
    }
    (buckets, slot)
}

/// One GPU's model, batch and scratch.
struct Replica {
    ctx: Context,
    weights: Vec<GpuArray<f32>>,
    /// The input, then each layer's output (after relu but the last).
    acts: Vec<GpuArray<f32>>,
    target: GpuArray<f32>,
    buckets: Vec<GpuArray<f32>>,
    z: GpuArray<f32>,
    dy: GpuArray<f32>,
    da: GpuArray<f32>,
    mask: GpuArray<u8>,
    zero: GpuArray<f32>,
}

impl Replica {
    /// The same initial weights on every GPU (one seed), its own batch.
    fn new(ctx: &Context, rank: usize, buckets: &[Vec<usize>]) -> Result<Replica> {
        let mut init = Generator::new(2026);
        let std = (2.0 / WIDTH as f64).sqrt();
        let weights = (0..LAYERS)
            .map(|_| init.normal::<f32>(ctx, [WIDTH, WIDTH], 0.0, std))
            .collect::<Result<Vec<_>>>()?;
        let mut data = Generator::new(1000 + rank as u64);
        let mut acts = vec![data.normal::<f32>(ctx, [BATCH, WIDTH], 0.0, 1.0)?];
        for _ in 0..LAYERS {
            acts.push(ctx.zeros([BATCH, WIDTH])?);
        }
        Ok(Replica {
            target: data.normal::<f32>(ctx, [BATCH, WIDTH], 0.0, 1.0)?,
            buckets: buckets
                .iter()
                .map(|b| ctx.zeros(b.len() * WIDTH * WIDTH))
                .collect::<Result<_>>()?,
            z: ctx.zeros([BATCH, WIDTH])?,
            dy: ctx.zeros([BATCH, WIDTH])?,
            da: ctx.zeros([BATCH, WIDTH])?,
            mask: ctx.zeros([BATCH, WIDTH])?,
            zero: ctx.zeros::<f32>(Vec::<usize>::new())?,
            ctx: ctx.clone(),
            weights,
            acts,
        })
    }

    fn forward(&mut self) -> Result<()> {
        let ops = self.ctx.ops();
        for l in 0..LAYERS {
            let (before, after) = self.acts.split_at_mut(l + 1);
            if l + 1 < LAYERS {
                ops.mm(&before[l], &self.weights[l], &mut self.z)?;
                ops.relu(&self.z, &mut after[0])?;
            } else {
                ops.mm(&before[l], &self.weights[l], &mut after[0])?;
            }
        }
        // d(loss)/d(output) for loss = ½‖y − t‖² / BATCH.
        ops.sub(&self.acts[LAYERS], &self.target, &mut self.dy)?;
        ops.scale(1.0 / BATCH as f32, &mut self.dy)
    }

    /// Layer `l`'s backward: its weight gradient into its bucket slot,
    /// then the gradient for the layer below (through relu).
    fn backward(&mut self, l: usize, (bucket, offset): (usize, usize)) -> Result<()> {
        let ops = self.ctx.ops();
        let mut grad = self.buckets[bucket]
            .view_mut()
            .slice(0, offset..offset + WIDTH * WIDTH)?
            .reshape([WIDTH, WIDTH])?;
        ops.mm(&self.acts[l].t(), &self.dy, &mut grad)?;
        if l > 0 {
            ops.mm(&self.dy, &self.weights[l].t(), &mut self.da)?;
            ops.gt(&self.acts[l], &self.zero, &mut self.mask)?;
            ops.where_(&self.mask, &self.da, &self.zero, &mut self.dy)?;
        }
        Ok(())
    }

    fn sgd(&mut self, slot: &[(usize, usize)]) -> Result<()> {
        let ops = self.ctx.ops();
        for (l, &(bucket, offset)) in slot.iter().enumerate() {
            let grad = self.buckets[bucket]
                .view()
                .slice(0, offset..offset + WIDTH * WIDTH)?
                .reshape([WIDTH, WIDTH])?;
            ops.axpy(-LR, &grad, &mut self.weights[l])?;
        }
        Ok(())
    }
}

/// One training step on every replica: forward, then the backward pass
/// layer by layer with each bucket's all-reduce enqueued the moment its
/// last gradient is, then SGD.
fn step(
    replicas: &mut [Replica],
    comm: &Communicator,
    buckets: &[Vec<usize>],
    slot: &[(usize, usize)],
) -> Result<()> {
    for r in replicas.iter_mut() {
        r.forward()?;
    }
    for l in (0..LAYERS).rev() {
        for r in replicas.iter_mut() {
            r.backward(l, slot[l])?;
        }
        let b = slot[l].0;
        if buckets[b].last() == Some(&l) {
            let mut grads: Vec<&mut GpuArray<f32>> =
                replicas.iter_mut().map(|r| &mut r.buckets[b]).collect();
            comm.all_reduce(&mut grads, ReduceOp::Avg)?;
        }
    }
    for r in replicas.iter_mut() {
        r.sgd(slot)?;
    }
    Ok(())
}

/// Trains `steps` steps (after `warmup` untimed ones) on `ctxs`; returns
/// the mean wall time of a timed step in ms. Every replica must end with
/// the same weights (their batches differ, so only the all-reduce keeps
/// them equal).
pub fn train(ctxs: &[Context], warmup: usize, steps: usize) -> Result<f64> {
    let (buckets, slot) = plan();
    let mut replicas = ctxs
        .iter()
        .enumerate()
        .map(|(rank, c)| Replica::new(c, rank, &buckets))
        .collect::<Result<Vec<_>>>()?;
    let streams = ctxs
        .iter()
        .map(Context::create_stream)
        .collect::<Result<Vec<_>>>()?;
    let comm = Communicator::local(ctxs)?.on_streams(&streams)?;
    let sync = || -> Result<()> {
        for c in ctxs {
            c.synchronize()?;
        }
        comm.wait()
    };
    for _ in 0..warmup {
        step(&mut replicas, &comm, &buckets, &slot)?;
    }
    sync()?;
    let start = Instant::now();
    for _ in 0..steps {
        step(&mut replicas, &comm, &buckets, &slot)?;
    }
    sync()?;
    let ms = start.elapsed().as_secs_f64() * 1e3 / steps as f64;
    for l in [0, LAYERS - 1] {
        let first = replicas[0].weights[l].download()?;
        if first.iter().any(|w| !w.is_finite()) {
            return Err(unigpu::Error::StreamWork {
                message: format!("layer {l}'s weights are not finite after training"),
            });
        }
        for (rank, r) in replicas.iter().enumerate().skip(1) {
            if r.weights[l].download()? != first {
                return Err(unigpu::Error::StreamWork {
                    message: format!("rank {rank}'s layer {l} differs from rank 0's"),
                });
            }
        }
    }
    Ok(ms)
}

/// The bucket plan, as a line for the output.
pub fn describe() -> String {
    let (buckets, _) = plan();
    let sizes: Vec<String> = buckets
        .iter()
        .map(|b| format!("{} MiB", (b.len() * WIDTH * WIDTH * 4) >> 20))
        .collect();
    format!(
        "MLP {LAYERS} × {WIDTH}² f32, batch {BATCH} a GPU; buckets (last layer first): {}",
        sizes.join(", ")
    )
}
