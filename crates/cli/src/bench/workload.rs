//! The reference workload of bench/anchors/torch_cupy_baseline.py on a
//! pipeline: batches of f32 uploaded, put through scale + relu, downloaded;
//! run sequentially and pipelined, and compared. The `pipeline` case
//! (pipeline.rs) and `unigpu pipeline` (src/pipeline.rs) run it; it was
//! `unigpu::pipeline::bench_workload` before benchmark code left the
//! facade's API.

use std::time::Instant;

use anyhow::{Result, bail, ensure};
use unigpu::pipeline::{Pipeline, PipelineReport, Timeline};
use unigpu::{Context, GpuArray, PinnedBuffer, Stream};

/// The scale of the workload's scale + relu.
const ALPHA: f32 = 0.5;
/// The most relu passes calibration may ask for, so that a very fast
/// device does not turn one batch into thousands of launches.
const MAX_REPEATS: usize = 1024;

/// The knobs of [`run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadOptions {
    pub batches: usize,
    /// Bytes per batch (f32 elements: `batch_bytes / 4`).
    pub batch_bytes: usize,
    pub depth: usize,
    /// Relu passes per batch before the scale; `None` calibrates it so
    /// that compute takes about as long as one upload, as the baseline's
    /// 40 sines do for its 64 MiB batches.
    pub compute_repeats: Option<usize>,
    /// Runs of each kind; the median wall time is reported.
    pub repetitions: usize,
    /// The pipelined run moves each batch in this many equal pieces (the
    /// same data and compute, finer grained, so that the first upload and
    /// the last download, which nothing overlaps, are shorter); 1 moves
    /// whole batches. The sequential run always moves whole batches.
    /// `batch_bytes / 4` must divide by it.
    pub pieces: usize,
    /// Where the host batches live: [`HostMemory::Pinned`] as in the
    /// baseline (torch pins its host batches), or ordinary memory.
    pub host: HostMemory,
}

/// The host memory a workload's batches live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostMemory {
    /// `Vec`s: every transfer goes through the staging ring, so the host's
    /// memory-copy bandwidth is shared by the upload and download stages.
    Pageable,
    /// [`PinnedBuffer`]s from [`Context::pinned`]:
    /// the DMA engines read and write them directly.
    Pinned,
}

impl WorkloadOptions {
    /// The baseline's shape: 16 batches of 64 MiB, triple buffered.
    pub const BASELINE: WorkloadOptions = WorkloadOptions {
        batches: 16,
        batch_bytes: 64 << 20,
        depth: 3,
        compute_repeats: None,
        repetitions: 3,
        pieces: 1,
        host: HostMemory::Pinned,
    };
}

/// What [`run`] measured.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The relu passes per batch that were run (calibrated or given).
    pub compute_repeats: usize,
    pub report: PipelineReport,
    /// A traced pipelined run, for `to_chrome_trace_json`.
    pub trace: Timeline,
}

/// Runs the workload sequentially and pipelined (after one untimed warm-up
/// run), checks every output element, and reports the overlap.
pub fn run(ctx: &Context, options: WorkloadOptions) -> Result<Workload> {
    let len = options.batch_bytes / std::mem::size_of::<f32>();
    let pieces = options.pieces.max(1);
    ensure!(
        len.is_multiple_of(pieces),
        "pipeline workload: {len} elements per batch do not split into {pieces} pieces"
    );
    let mut host = HostBatches::new(ctx, options.host, options.batches, len)?;
    let mut p = ctx.pipeline::<f32>(options.depth, len)?;
    let mut q = ctx.pipeline::<f32>(options.depth, len / pieces)?;
    let repeats = match options.compute_repeats {
        Some(r) => r.max(1),
        None => {
            let (inputs, mut outputs) = host.slices()?;
            calibrate(&mut p, ctx, &inputs, &mut outputs)?
        }
    };
    let mut work =
        |s: &Stream, x: &GpuArray<f32>, y: &mut GpuArray<f32>| scale_relu(ctx, s, repeats, x, y);
    {
        let (ins, mut outs) = host.pieces(q.batch_len())?;
        q.run(&ins, &mut outs, &mut work)?;
    }
    // Sequential and pipelined runs alternate, so that a change in the
    // machine's load (another process, a clock that ramps) falls on both.
    let reps = options.repetitions.max(1);
    let mut sequential = Vec::with_capacity(reps);
    let mut walls = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (inputs, mut outputs) = host.slices()?;
        sequential.push(p.run_sequential(&inputs, &mut outputs, &mut work)?);
        let (ins, mut outs) = host.pieces(q.batch_len())?;
        let t = Instant::now();
        q.run(&ins, &mut outs, &mut work)?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    sequential.sort_by(|a, b| a.wall_ms().total_cmp(&b.wall_ms()));
    walls.sort_by(f64::total_cmp);
    let report = PipelineReport::with_pieces(&sequential[reps / 2], walls[reps / 2], pieces);
    let trace = {
        let (_, mut outputs) = host.slices()?;
        outputs.iter_mut().for_each(|o| o.fill(f32::NAN));
        let (ins, mut outs) = host.pieces(q.batch_len())?;
        q.run_traced(&ins, &mut outs, &mut work)?
    };
    let (inputs, outputs) = host.slices()?;
    check(&inputs, &outputs)?;
    Ok(Workload {
        compute_repeats: repeats,
        report,
        trace,
    })
}

/// Input batches and output batches, borrowed.
type Sides<'a> = (Vec<&'a [f32]>, Vec<&'a mut [f32]>);

/// A workload's input and output batches, in the host memory it asked for.
enum HostBatches {
    Pageable {
        inputs: Vec<Vec<f32>>,
        outputs: Vec<Vec<f32>>,
    },
    Pinned {
        inputs: Vec<PinnedBuffer<f32>>,
        outputs: Vec<PinnedBuffer<f32>>,
    },
}

impl HostBatches {
    /// `batches` random input batches of `len` elements and as many
    /// output batches.
    fn new(ctx: &Context, memory: HostMemory, batches: usize, len: usize) -> Result<HostBatches> {
        let random = (0..batches).map(|k| random_batch(k as u64, len));
        Ok(match memory {
            HostMemory::Pageable => HostBatches::Pageable {
                inputs: random.collect(),
                outputs: vec![vec![0.0; len]; batches],
            },
            HostMemory::Pinned => {
                let mut inputs = Vec::with_capacity(batches);
                for batch in random {
                    let mut pinned = ctx.pinned::<f32>(len)?;
                    pinned.as_mut_slice()?.copy_from_slice(&batch);
                    inputs.push(pinned);
                }
                let outputs = (0..batches)
                    .map(|_| ctx.pinned::<f32>(len))
                    .collect::<unigpu::Result<_>>()?;
                HostBatches::Pinned { inputs, outputs }
            }
        })
    }

    /// The whole batches.
    fn slices(&mut self) -> Result<Sides<'_>> {
        Ok(match self {
            HostBatches::Pageable { inputs, outputs } => (
                inputs.iter().map(Vec::as_slice).collect(),
                outputs.iter_mut().map(Vec::as_mut_slice).collect(),
            ),
            HostBatches::Pinned { inputs, outputs } => (
                inputs
                    .iter()
                    .map(PinnedBuffer::as_slice)
                    .collect::<unigpu::Result<_>>()?,
                outputs
                    .iter_mut()
                    .map(PinnedBuffer::as_mut_slice)
                    .collect::<unigpu::Result<_>>()?,
            ),
        })
    }

    /// The batches as pieces of `piece` elements, in order.
    fn pieces(&mut self, piece: usize) -> Result<Sides<'_>> {
        let piece = piece.max(1);
        let (inputs, outputs) = self.slices()?;
        Ok((
            inputs.into_iter().flat_map(|b| b.chunks(piece)).collect(),
            outputs
                .into_iter()
                .flat_map(|b| b.chunks_mut(piece))
                .collect(),
        ))
    }
}

/// `y = ALPHA * relu(x)`, with the relu done `repeats` times (each pass
/// reads `x` and writes `y` in full, so the result is the same).
fn scale_relu(
    ctx: &Context,
    s: &Stream,
    repeats: usize,
    x: &GpuArray<f32>,
    y: &mut GpuArray<f32>,
) -> unigpu::Result<()> {
    let ops = ctx.ops_on(s);
    for _ in 0..repeats {
        ops.relu(x, y)?;
    }
    ops.scale(ALPHA, y)
}

/// Relu passes that make compute about as long as one upload: from the
/// median of four sequential one-batch runs (the first pays for first
/// touches and lazy initialisation, and a loaded machine adds noise).
fn calibrate(
    p: &mut Pipeline<f32>,
    ctx: &Context,
    inputs: &[&[f32]],
    outputs: &mut [&mut [f32]],
) -> Result<usize> {
    if inputs.is_empty() {
        return Ok(1);
    }
    let mut once =
        |s: &Stream, x: &GpuArray<f32>, y: &mut GpuArray<f32>| scale_relu(ctx, s, 1, x, y);
    let mut runs = (0..4)
        .map(|_| p.run_sequential(&inputs[..1], &mut outputs[..1], &mut once))
        .collect::<unigpu::Result<Vec<_>>>()?;
    runs.sort_by(|a, b| a.wall_ms().total_cmp(&b.wall_ms()));
    let timeline = &runs[runs.len() / 2];
    let [upload, compute, _] = timeline.stage_ms();
    // One pass is a relu and a scale; each added pass is one more relu,
    // about half of that.
    let pass = compute / 2.0;
    if pass <= 0.0 {
        return Ok(1);
    }
    let repeats = ((upload - pass) / pass).round().max(1.0);
    Ok((repeats as usize).min(MAX_REPEATS))
}

/// Every element of every output against the host's `ALPHA * max(x, 0)`
/// (exact: both sides round the one product the same way).
fn check(inputs: &[&[f32]], outputs: &[&mut [f32]]) -> Result<()> {
    for (k, (x, y)) in inputs.iter().zip(outputs).enumerate() {
        if let Some(i) = (0..x.len()).find(|&i| y[i] != ALPHA * x[i].max(0.0)) {
            bail!(
                "pipeline workload: batch {k} element {i} is {}, expected {}",
                y[i],
                ALPHA * x[i].max(0.0)
            );
        }
    }
    Ok(())
}

/// Values in [-1, 1), half of them negative, the same every run (a
/// splitmix64 stream: the figures of every run measure the same data).
fn random_batch(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            // The top 24 bits, as a float in [0, 1), moved to [-1, 1).
            (z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use unigpu::Backend;

    use super::*;

    /// Whole batches and batches in 4 pieces, from pinned and ordinary
    /// memory, on the CPU backend: `run` checks every output itself.
    #[test]
    fn runs_every_shape_and_reports_it() {
        let ctx = Context::new(Backend::Cpu, 0).unwrap();
        for pieces in [1, 4] {
            for host in [HostMemory::Pinned, HostMemory::Pageable] {
                let options = WorkloadOptions {
                    batches: 5,
                    batch_bytes: 1 << 20,
                    repetitions: 1,
                    pieces,
                    host,
                    ..WorkloadOptions::BASELINE
                };
                let w = run(&ctx, options).unwrap();
                assert_eq!((w.report.batches, w.report.pieces), (5, pieces));
                assert!(w.compute_repeats >= 1);
                assert_eq!(w.trace.batches(), 5 * pieces);
            }
        }
    }

    #[test]
    fn pieces_that_do_not_split_a_batch_are_refused() {
        let ctx = Context::new(Backend::Cpu, 0).unwrap();
        let odd = WorkloadOptions {
            batches: 2,
            batch_bytes: 1 << 20,
            pieces: 3,
            ..WorkloadOptions::BASELINE
        };
        let e = run(&ctx, odd).map(|w| w.report).unwrap_err();
        assert!(e.to_string().contains("pieces"), "{e}");
    }
}
