//! `Pipeline`: what it owns, and the runs it offers.

use std::sync::Mutex;

use super::stages;
use super::streams::Streams;
use super::timeline::{Stage, Timeline};
use crate::stream::check_len;
use crate::{Context, Element, Error, GpuArray, Result, Stream};

/// Runs upload → compute → download over host batches of one length, with
/// batch k+1 uploading while batch k computes and batch k-1 downloads.
///
/// Made by [`Context::pipeline`]. It owns `depth` device input buffers,
/// `depth` device output buffers and three streams, one per stage, shared
/// by every batch. One stream per stage, not one set per slot, because:
/// - copies in one direction share the device's copy engine, so two
///   upload streams would interleave two uploads, not move data faster;
/// - each stage then runs its batches in order, so a stall shows up as a
///   gap on one track of the [`Timeline`] rather than as a reordering.
///
/// Uploads and downloads from ordinary (pageable) host memory may block
/// the thread that issues them (CUDA stages pageable memory through the
/// driver's own pinned buffer; a download returns when the host holds the
/// data on every backend). A pipeline driven from one thread would then
/// wait for download k before it could issue upload k+1, and the stages
/// would run one after the other. So each transfer stage is issued from a
/// thread of its own, and compute is enqueued from the calling thread
/// (which is why the compute closure need not be `Send`).
///
/// The input and output buffers are two separate rings: input buffer
/// `k % depth` is reused once compute k-depth has run, output buffer
/// `k % depth` once download k-depth has; each waits on the other
/// stream's event, so even `depth = 1` overlaps the upload of one batch
/// with the download of the one before.
#[derive(Debug)]
pub struct Pipeline<T: Element> {
    ctx: Context,
    batch_len: usize,
    streams: Streams,
    /// Behind mutexes so that the stage threads can borrow them; the
    /// rings already keep two stages off the same buffer, so a lock is
    /// never contended.
    inputs: Vec<Mutex<GpuArray<T>>>,
    outputs: Vec<Mutex<GpuArray<T>>>,
}

impl Context {
    /// A pipeline of `depth` slots for batches of `batch_len` elements:
    /// `depth = 2` is double buffering, `3` triple buffering. Allocates
    /// `2 * depth` arrays of `batch_len` elements and three streams.
    pub fn pipeline<T: Element>(&self, depth: usize, batch_len: usize) -> Result<Pipeline<T>> {
        if depth == 0 {
            return Err(Error::SizeMismatch {
                what: "Context::pipeline depth (at least one slot)",
                expected: 1,
                actual: 0,
            });
        }
        let ring = || -> Result<Vec<Mutex<GpuArray<T>>>> {
            (0..depth)
                .map(|_| Ok(Mutex::new(self.alloc::<T>(batch_len)?)))
                .collect()
        };
        Ok(Pipeline {
            ctx: self.clone(),
            batch_len,
            streams: Streams {
                upload: self.create_stream()?,
                compute: self.create_stream()?,
                download: self.create_stream()?,
            },
            inputs: ring()?,
            outputs: ring()?,
        })
    }
}

impl<T: Element> Pipeline<T> {
    /// How many batches may be in flight at once.
    pub fn depth(&self) -> usize {
        self.inputs.len()
    }

    /// The length every batch must have.
    pub fn batch_len(&self) -> usize {
        self.batch_len
    }

    /// The context the pipeline's buffers and streams belong to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The stream `stage` runs on, e.g. to order other work after the
    /// pipeline's last download.
    pub fn stream(&self, stage: Stage) -> &Stream {
        self.streams.of(stage)
    }

    /// Uploads `inputs[k]`, runs `compute(stream, input, output)` on it,
    /// and downloads the result into `outputs[k]`, for every k, with the
    /// stages of different batches overlapping. Returns once every output
    /// holds its result.
    ///
    /// `compute` enqueues work on the stream it is given (the compute
    /// stream): `ctx.ops_on(stream)`, `stream.launch(...)`. It runs on the
    /// calling thread, once per batch, in order; an error from it stops
    /// the run and is returned. Every batch must have
    /// [`Pipeline::batch_len`] elements (else [`Error::BatchSize`] naming
    /// the first one that does not), checked before anything runs.
    ///
    /// ```
    /// # fn main() -> unigpu::Result<()> {
    /// let ctx = unigpu::Context::host()?;
    /// let inputs = vec![vec![-1.0f32, 2.0, -3.0, 4.0]; 5];
    /// let mut outputs = vec![vec![0.0f32; 4]; 5];
    /// let mut p = ctx.pipeline::<f32>(2, 4)?;
    /// p.run(&inputs, &mut outputs, |s, x, y| ctx.ops_on(s).relu(x, y))?;
    /// assert!(outputs.iter().all(|y| y == &[0.0, 2.0, 0.0, 4.0]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn run<I, O, F>(&mut self, inputs: &[I], outputs: &mut [O], compute: F) -> Result<()>
    where
        I: AsRef<[T]> + Sync,
        O: AsMut<[T]> + Send,
        F: FnMut(&Stream, &GpuArray<T>, &mut GpuArray<T>) -> Result<()>,
    {
        self.check(inputs, outputs)?;
        stages::overlapped(self.parts(), inputs, outputs, compute, false).map(drop)
    }

    /// [`Pipeline::run`], with a timed event at each edge of each stage:
    /// the [`Timeline`] of the run, which exports as a Chrome trace. The
    /// events cost a few microseconds per batch.
    pub fn run_traced<I, O, F>(
        &mut self,
        inputs: &[I],
        outputs: &mut [O],
        compute: F,
    ) -> Result<Timeline>
    where
        I: AsRef<[T]> + Sync,
        O: AsMut<[T]> + Send,
        F: FnMut(&Stream, &GpuArray<T>, &mut GpuArray<T>) -> Result<()>,
    {
        self.check(inputs, outputs)?;
        stages::overlapped(self.parts(), inputs, outputs, compute, true)
    }

    /// The same work with nothing overlapping: each batch is uploaded,
    /// computed and downloaded, and waited for, before the next one starts
    /// (as the sequential loop of bench/anchors/torch_cupy_baseline.py
    /// does). Timed: its stage totals are the stage times of the overlap
    /// formula ([`PipelineReport`](super::PipelineReport)), its wall time the sequential time.
    pub fn run_sequential<I, O, F>(
        &mut self,
        inputs: &[I],
        outputs: &mut [O],
        compute: F,
    ) -> Result<Timeline>
    where
        I: AsRef<[T]>,
        O: AsMut<[T]>,
        F: FnMut(&Stream, &GpuArray<T>, &mut GpuArray<T>) -> Result<()>,
    {
        self.check(inputs, outputs)?;
        stages::sequential(self.parts(), inputs, outputs, compute)
    }

    fn parts(&self) -> stages::Parts<'_, T> {
        stages::Parts {
            backend: self.ctx.backend(),
            streams: &self.streams,
            inputs: &self.inputs,
            outputs: &self.outputs,
        }
    }

    /// Every batch the right length, and one output per input.
    fn check<I: AsRef<[T]>, O: AsMut<[T]>>(&self, inputs: &[I], outputs: &mut [O]) -> Result<()> {
        check_len(
            "Pipeline::run: one output batch per input batch",
            inputs.len(),
            outputs.len(),
        )?;
        let sides = inputs
            .iter()
            .map(|b| ("input", b.as_ref().len()))
            .zip(outputs.iter_mut().map(|b| ("output", b.as_mut().len())));
        for (batch, (input, output)) in sides.enumerate() {
            for (side, actual) in [input, output] {
                if actual != self.batch_len {
                    return Err(Error::BatchSize {
                        batch,
                        side,
                        expected: self.batch_len,
                        actual,
                    });
                }
            }
        }
        Ok(())
    }
}
