//! Pipelines: upload → compute → download over host batches, checked
//! element by element, and their timelines as Chrome trace JSON, on every
//! backend.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{assert_same, random_len, random_vec};
use serde_json::Value;
use unigpu::pipeline::Stage;
use unigpu::{Context, Error, GpuArray, Grid, Result, Stream};

const ALPHA: f32 = 0.25;

/// The compute stage of the tests: `y = ALPHA * relu(x)` on `s`.
fn scale_relu(
    ctx: &Context,
) -> impl FnMut(&Stream, &GpuArray<f32>, &mut GpuArray<f32>) -> Result<()> {
    move |s, x, y| {
        let ops = ctx.ops_on(s);
        ops.relu(x, y)?;
        ops.scale(ALPHA, y)
    }
}

fn expected(input: &[f32]) -> Vec<f32> {
    input.iter().map(|&x| ALPHA * x.max(0.0)).collect()
}

#[track_caller]
fn assert_outputs(inputs: &[Vec<f32>], outputs: &[Vec<f32>]) {
    assert_eq!(inputs.len(), outputs.len());
    for (x, y) in inputs.iter().zip(outputs) {
        assert_same(&expected(x), y);
    }
}

fn batches(count: usize, len: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let inputs = (0..count).map(|_| random_vec::<f32>(len)).collect();
    // NaN, so that a batch the pipeline never wrote cannot pass.
    (inputs, vec![vec![f32::NAN; len]; count])
}

/// Batch counts for `depth`: none, one, a multiple of the depth and not.
fn counts(depth: usize) -> Vec<usize> {
    vec![0, 1, depth, 2 * depth + 1, 7]
}

on_every_backend!(pipeline_matches_host, |ctx| {
    for depth in 1..=3 {
        let len = random_len(1 << 14);
        let mut p = ctx.pipeline::<f32>(depth, len).unwrap();
        assert_eq!((p.depth(), p.batch_len()), (depth, len));
        for count in counts(depth) {
            let (inputs, mut outputs) = batches(count, len);
            p.run(&inputs, &mut outputs, scale_relu(ctx)).unwrap();
            assert_outputs(&inputs, &outputs);
        }
    }
});

on_every_backend!(pipeline_sequential_matches_host, |ctx| {
    for depth in 1..=3 {
        let len = random_len(1 << 12);
        let mut p = ctx.pipeline::<f32>(depth, len).unwrap();
        for count in counts(depth) {
            let (inputs, mut outputs) = batches(count, len);
            let t = p
                .run_sequential(&inputs, &mut outputs, scale_relu(ctx))
                .unwrap();
            assert_outputs(&inputs, &outputs);
            assert_eq!(t.batches(), count);
        }
    }
});

on_every_backend!(pipeline_takes_slices_and_any_element, |ctx| {
    // Borrowed slices rather than vectors, and a type without float ops:
    // the compute stage is a copy.
    let len = 1000;
    let data: Vec<Vec<u8>> = (0..5).map(|_| random_vec::<u8>(len)).collect();
    let inputs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let mut storage = vec![vec![0u8; len]; 5];
    let mut outputs: Vec<&mut [u8]> = storage.iter_mut().map(Vec::as_mut_slice).collect();
    let mut p = ctx.pipeline::<u8>(2, len).unwrap();
    p.run(&inputs, &mut outputs, |s, x, y| s.copy(x, y))
        .unwrap();
    assert_eq!(storage, data);
});

on_every_backend!(pipeline_batch_size_errors_name_the_batch, |ctx| {
    let len = 64;
    let mut p = ctx.pipeline::<f32>(2, len).unwrap();
    let (mut inputs, mut outputs) = batches(4, len);
    inputs[2].push(1.0);
    let err = p.run(&inputs, &mut outputs, scale_relu(ctx)).unwrap_err();
    assert_eq!(
        err,
        Error::BatchSize {
            batch: 2,
            side: "input",
            expected: len,
            actual: len + 1
        }
    );
    assert!(err.to_string().contains("batch 2"), "{err}");
    // Checked before anything ran: no output was written.
    assert!(outputs.iter().flatten().all(|y| y.is_nan()));

    inputs[2].pop();
    outputs[3].truncate(10);
    let err = p
        .run_traced(&inputs, &mut outputs, scale_relu(ctx))
        .unwrap_err();
    assert_eq!(
        err,
        Error::BatchSize {
            batch: 3,
            side: "output",
            expected: len,
            actual: 10
        }
    );

    outputs.pop();
    let err = p
        .run_sequential(&inputs, &mut outputs, scale_relu(ctx))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::SizeMismatch {
                expected: 4,
                actual: 3,
                ..
            }
        ),
        "{err}"
    );

    assert!(matches!(
        ctx.pipeline::<f32>(0, len),
        Err(Error::SizeMismatch { .. })
    ));
});

on_every_backend!(pipeline_compute_error_stops_the_run, |ctx| {
    let len = 256;
    let mut p = ctx.pipeline::<f32>(2, len).unwrap();
    let (inputs, mut outputs) = batches(6, len);
    let mut calls = 0;
    let failing = |s: &Stream, x: &GpuArray<f32>, y: &mut GpuArray<f32>| {
        calls += 1;
        if calls == 4 {
            return Err(Error::StreamWork {
                message: "compute 3 failed".into(),
            });
        }
        s.copy(x, y)
    };
    let err = p.run(&inputs, &mut outputs, failing).unwrap_err();
    assert_eq!(
        err,
        Error::StreamWork {
            message: "compute 3 failed".into()
        }
    );
    assert_eq!(calls, 4, "the run went on after the compute stage failed");
    // The pipeline is whole after a failed run.
    p.run(&inputs, &mut outputs, scale_relu(ctx)).unwrap();
    assert_outputs(&inputs, &outputs);
});

/// The parsed trace: metadata track names by tid, and complete events.
struct Trace {
    tracks: HashMap<u64, String>,
    spans: Vec<Value>,
}

fn parse_trace(json: &str) -> Trace {
    let v: Value = serde_json::from_str(json).expect("the trace is JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents is a list");
    let mut tracks = HashMap::new();
    let mut spans = Vec::new();
    for e in events {
        assert_eq!(e["pid"], 1);
        match e["ph"].as_str().unwrap() {
            "M" if e["name"] == "thread_name" => {
                let name = e["args"]["name"].as_str().unwrap().to_string();
                assert!(tracks.insert(e["tid"].as_u64().unwrap(), name).is_none());
            }
            "M" => {}
            "X" => {
                assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
                spans.push(e.clone());
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    Trace { tracks, spans }
}

on_every_backend!(pipeline_trace_has_a_track_per_stream, |ctx| {
    for depth in 1..=3 {
        let len = random_len(1 << 14);
        let mut p = ctx.pipeline::<f32>(depth, len).unwrap();
        for count in counts(depth) {
            let (inputs, mut outputs) = batches(count, len);
            let timeline = p
                .run_traced(&inputs, &mut outputs, scale_relu(ctx))
                .unwrap();
            assert_outputs(&inputs, &outputs);
            assert_eq!(timeline.spans().len(), 3 * count);
            assert!(timeline.wall_ms() > 0.0);

            let trace = parse_trace(&timeline.to_chrome_trace_json());
            let mut names: Vec<&str> = trace.tracks.values().map(String::as_str).collect();
            names.sort();
            assert_eq!(
                names,
                ["compute stream", "download stream", "upload stream"]
            );
            for (tid, name) in &trace.tracks {
                let on_track: Vec<&Value> =
                    trace.spans.iter().filter(|e| e["tid"] == *tid).collect();
                assert_eq!(on_track.len(), count, "events on the {name} track");
                let stage = name.trim_end_matches(" stream");
                let mut batches: Vec<u64> = on_track
                    .iter()
                    .map(|e| {
                        assert_eq!(e["cat"], stage);
                        e["args"]["batch"].as_u64().unwrap()
                    })
                    .collect();
                batches.sort();
                assert_eq!(batches, (0..count as u64).collect::<Vec<_>>());
            }
            assert_eq!(trace.spans.len(), 3 * count);
        }
    }
});

on_every_backend!(pipeline_trace_follows_the_stage_order, |ctx| {
    let len = 1 << 14;
    let mut p = ctx.pipeline::<f32>(2, len).unwrap();
    let (inputs, mut outputs) = batches(6, len);
    let timeline = p
        .run_traced(&inputs, &mut outputs, scale_relu(ctx))
        .unwrap();
    let span = |stage: Stage, batch: usize| {
        *timeline
            .spans()
            .iter()
            .find(|s| s.stage == stage && s.batch == batch)
            .unwrap()
    };
    // Event timestamps have about a microsecond of resolution on CUDA.
    let slack = 0.01;
    for k in 0..6 {
        let (up, comp, down) = (
            span(Stage::Upload, k),
            span(Stage::Compute, k),
            span(Stage::Download, k),
        );
        assert!(
            comp.start_ms + slack >= up.start_ms + up.duration_ms,
            "batch {k}"
        );
        assert!(
            down.start_ms + slack >= comp.start_ms + comp.duration_ms,
            "batch {k}"
        );
        if k >= 2 {
            // Slot reuse: upload k after compute k-2 read the buffer.
            let before = span(Stage::Compute, k - 2);
            assert!(up.start_ms + slack >= before.start_ms + before.duration_ms);
        }
    }
    let sums = timeline.stage_ms();
    assert!(sums.iter().all(|&ms| ms >= 0.0));
});

/// A kernel that keeps its stream busy for 50 ms: a spin on the GPU's
/// clock, a sleep on the CPU backend. Not a host function: CUDA runs every
/// host function of a process on one driver thread, which would serialise
/// it with any other stage that uses one.
const SPIN_50MS: &str = r#"
extern "C" __global__ void spin_50ms() {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < 50000000ull);
}"#;

/// The CPU and CUDA backends overlap a pipeline's stages. Not the torch
/// backend: its copies from pageable memory go through torch's `copy_`,
/// which waits for other streams' work (on the H200, upload 2 began only
/// when compute 1 ended), as docs/pipelines.md says.
fn pipeline_overlaps_stages(ctx: &Context) {
    // A compute stage that takes 50 ms on its stream: with depth 2 the
    // next upload must run while it does, or the stages do not overlap.
    let len = 1 << 12;
    let mut p = ctx.pipeline::<f32>(2, len).unwrap();
    let (inputs, mut outputs) = batches(4, len);
    let spin = ctx
        .compile(SPIN_50MS)
        .unwrap()
        .kernel("spin_50ms")
        .unwrap()
        .with_cpu(|_| {
            std::thread::sleep(Duration::from_millis(50));
            Ok(())
        });
    let one = Grid::new((1, 1, 1), (1, 1, 1));
    let slow = |s: &Stream, x: &GpuArray<f32>, y: &mut GpuArray<f32>| {
        s.launch(&spin, one, ())?;
        s.copy(x, y)
    };
    let timeline = p.run_traced(&inputs, &mut outputs, slow).unwrap();
    for (x, y) in inputs.iter().zip(&outputs) {
        assert_same(x, y);
    }
    let find = |stage: Stage, batch: usize| {
        *timeline
            .spans()
            .iter()
            .find(|s| s.stage == stage && s.batch == batch)
            .unwrap()
    };
    for k in 0..3 {
        let comp = find(Stage::Compute, k);
        let next_up = find(Stage::Upload, k + 1);
        assert!(
            next_up.start_ms < comp.start_ms + comp.duration_ms,
            "upload {} started at {} ms, after compute {k} ended at {} ms",
            k + 1,
            next_up.start_ms,
            comp.start_ms + comp.duration_ms
        );
    }
}

mod pipeline_overlaps_stages {
    use super::*;

    #[test]
    fn cpu() {
        pipeline_overlaps_stages(&common::cpu_ctx());
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn cuda() {
        pipeline_overlaps_stages(&common::cuda_ctx());
    }
}

on_every_backend!(pipeline_zero_batches, |ctx| {
    let mut p = ctx.pipeline::<f32>(3, 16).unwrap();
    let (inputs, mut outputs) = batches(0, 16);
    p.run(&inputs, &mut outputs, scale_relu(ctx)).unwrap();
    let timeline = p
        .run_traced(&inputs, &mut outputs, scale_relu(ctx))
        .unwrap();
    assert!(timeline.spans().is_empty());
    let trace = parse_trace(&timeline.to_chrome_trace_json());
    assert_eq!(trace.tracks.len(), 3);
    assert!(trace.spans.is_empty());
    let seq = p
        .run_sequential(&inputs, &mut outputs, scale_relu(ctx))
        .unwrap();
    assert_eq!(seq.stage_ms(), [0.0; 3]);
});

/// `count` random batches of `len` in pinned host memory, and as many
/// NaN-filled outputs.
fn pinned_batches(
    ctx: &Context,
    count: usize,
    len: usize,
) -> (
    Vec<unigpu::PinnedBuffer<f32>>,
    Vec<unigpu::PinnedBuffer<f32>>,
) {
    let (inputs, outputs) = batches(count, len);
    let pin = |v: Vec<f32>| {
        let mut p = ctx.pinned::<f32>(len).unwrap();
        p.as_mut_slice().unwrap().copy_from_slice(&v);
        p
    };
    (
        inputs.into_iter().map(pin).collect(),
        outputs.into_iter().map(pin).collect(),
    )
}

on_every_backend!(pipeline_report_of_a_workload, |ctx| {
    // A sequential run of whole batches and a pipelined run of the same
    // batches moved whole or in 4 pieces, from pinned and from ordinary
    // host memory, every output checked against the host; the report's
    // figures follow from the timeline as documented.
    let (count, len) = (5, 1 << 18);
    for pieces in [1, 4] {
        for pinned in [true, false] {
            let (ins, mut outs) = batches(count, len);
            let (pins, mut pouts) = pinned_batches(ctx, count, len);
            let (inputs, mut outputs): (Vec<&[f32]>, Vec<&mut [f32]>) = if pinned {
                (
                    pins.iter().map(|p| p.as_slice().unwrap()).collect(),
                    pouts
                        .iter_mut()
                        .map(|p| p.as_mut_slice().unwrap())
                        .collect(),
                )
            } else {
                (
                    ins.iter().map(Vec::as_slice).collect(),
                    outs.iter_mut().map(Vec::as_mut_slice).collect(),
                )
            };
            let mut p = ctx.pipeline::<f32>(3, len).unwrap();
            let seq = p
                .run_sequential(&inputs, &mut outputs, scale_relu(ctx))
                .unwrap();
            let want: Vec<Vec<f32>> = inputs.iter().map(|x| expected(x)).collect();
            for (w, y) in want.iter().zip(&outputs) {
                assert_same(w, y);
            }
            outputs.iter_mut().for_each(|o| o.fill(f32::NAN));
            let mut q = ctx.pipeline::<f32>(3, len / pieces).unwrap();
            let piece_ins: Vec<&[f32]> =
                inputs.iter().flat_map(|b| b.chunks(len / pieces)).collect();
            let mut piece_outs: Vec<&mut [f32]> = outputs
                .iter_mut()
                .flat_map(|b| b.chunks_mut(len / pieces))
                .collect();
            let start = std::time::Instant::now();
            let trace = q
                .run_traced(&piece_ins, &mut piece_outs, scale_relu(ctx))
                .unwrap();
            let wall_ms = start.elapsed().as_secs_f64() * 1e3;
            drop(piece_outs);
            for (w, y) in want.iter().zip(&outputs) {
                assert_same(w, y);
            }
            assert_eq!(trace.batches(), count * pieces);

            let r = unigpu::pipeline::PipelineReport::with_pieces(&seq, wall_ms, pieces);
            assert_eq!((r.batches, r.pieces), (count, pieces));
            assert!(r.stage_ms.iter().all(|&ms| ms > 0.0), "{r:?}");
            let sum: f64 = r.stage_ms.iter().sum();
            let max = r.stage_ms.iter().copied().fold(0.0, f64::max);
            assert!((r.ideal_speedup - sum / max).abs() < 1e-9);
            assert!((1.0..=3.0).contains(&r.ideal_speedup));
            let n = (count * pieces) as f64;
            let ideal_n = n * sum / (sum + (n - 1.0) * max);
            assert!(
                (r.ideal_speedup_for_batches - ideal_n).abs() < 1e-9,
                "{r:?}"
            );
            assert!(r.ideal_speedup_for_batches <= r.ideal_speedup + 1e-9);
            assert!((r.achieved_speedup - r.sequential_ms / r.wall_ms).abs() < 1e-9);
            assert!((r.overlap_efficiency - r.achieved_speedup / r.ideal_speedup).abs() < 1e-9);
            assert!(r.to_string().contains("pipe_overlap_efficiency"));
        }
    }
});
