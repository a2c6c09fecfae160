//! Out of memory in the middle of work (issue 15): inside a pipeline's
//! compute stage, inside a graph capture and between graph replays. Each
//! is `Error::OutOfMemory`, nothing already done is lost or corrupted, and
//! the same pipeline or graph goes on once memory is given back
//! (`empty_cache`).
//!
//! Two ways to run out:
//! - every backend: ask for more than the device has, mid-run;
//! - cuda: really fill the device (every free byte taken in 64 MiB, then
//!   1 MiB pieces), so that an ordinary allocation fails, then give the
//!   memory back and go on.

mod common;

use common::{assert_same, random_vec};
use unigpu::{Context, Error, GpuArray, Stream};

fn relu_host(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| v.max(0.0)).collect()
}

/// More bytes than the device (or, on the CPU, the machine) has.
fn too_big(ctx: &Context) -> usize {
    let total = ctx.memory_info().unwrap().total;
    total.saturating_mul(2).max(1 << 40)
}

#[track_caller]
fn assert_out_of_memory<T: std::fmt::Debug>(got: unigpu::Result<T>, what: &str) {
    match got {
        Err(Error::OutOfMemory { requested, .. }) => assert!(requested > 0, "{what}"),
        other => panic!("{what}: expected OutOfMemory, got {other:?}"),
    }
}

/// The pipeline's compute stage needs a temporary of `temp_len` f32s for
/// each batch; its result is relu(x).
fn relu_through_a_temporary<'a>(
    ctx: &'a Context,
    temp_len: impl Fn(usize) -> usize + 'a,
) -> impl FnMut(&Stream, &GpuArray<f32>, &mut GpuArray<f32>) -> unigpu::Result<()> + 'a {
    let mut batch = 0;
    move |s, x, y| {
        let mut tmp = ctx.alloc::<f32>(temp_len(batch))?;
        batch += 1;
        let ops = ctx.ops_on(s);
        if tmp.len() == x.len() {
            ops.relu(x, &mut tmp)?;
            ops.copy(&tmp, y)
        } else {
            ops.relu(x, y)
        }
    }
}

/// A whole run of `p` whose compute has room for its temporary: every
/// output is its batch's relu.
#[track_caller]
fn runs_right(
    ctx: &Context,
    p: &mut unigpu::Pipeline<f32>,
    inputs: &[Vec<f32>],
    expected: &[Vec<f32>],
) {
    let len = p.batch_len();
    let mut outputs = vec![vec![0.0f32; len]; inputs.len()];
    p.run(inputs, &mut outputs, relu_through_a_temporary(ctx, |_| len))
        .unwrap();
    for (out, want) in outputs.iter().zip(expected) {
        assert_same(want, out);
    }
}

on_every_backend!(
    out_of_memory_inside_a_pipeline_stops_the_run_and_the_pipeline_goes_on,
    |ctx| {
        let (batches, len) = (6, 4099);
        let inputs: Vec<Vec<f32>> = (0..batches).map(|_| random_vec(len)).collect();
        let expected: Vec<Vec<f32>> = inputs.iter().map(|x| relu_host(x)).collect();
        let mut p = ctx.pipeline::<f32>(3, len).unwrap();

        // Batch 3's compute asks for more than there is. The outputs start
        // as -1, which no relu gives: an earlier batch left untouched is
        // told apart from one overwritten with zeros.
        let huge = too_big(ctx) / 4;
        let mut outputs = vec![vec![-1.0f32; len]; batches];
        let got = p.run(
            &inputs,
            &mut outputs,
            relu_through_a_temporary(ctx, |b| if b == 3 { huge } else { len }),
        );
        assert_out_of_memory(got, "a pipeline whose 4th compute asks too much");
        // Batches before the failing one were computed in full: their
        // outputs hold their results or their first contents, never a mix
        // (nor zeros). The failing batch and later ones hold no result.
        for (b, (out, want)) in outputs.iter().zip(&expected).enumerate() {
            let untouched = out.iter().all(|&v| v == -1.0);
            assert!(
                untouched || (b < 3 && out == want),
                "batch {b}: neither its result nor untouched after the failed run"
            );
        }

        ctx.sync().unwrap();
        if ctx.memory_stats().is_ok() {
            ctx.empty_cache().unwrap();
        }
        runs_right(ctx, &mut p, &inputs, &expected);
    }
);

on_every_backend!(
    out_of_memory_inside_a_capture_ends_it_and_the_stream_captures_again,
    |ctx| {
        let stream = ctx.create_stream().unwrap();
        let host = random_vec::<f32>(4099);
        let x = ctx.upload(&host).unwrap();
        let mut y = ctx.zeros::<f32>(host.len()).unwrap();
        let got = stream.capture(|s| {
            ctx.ops_on(s).relu(&x, &mut y)?;
            let _tmp = ctx.alloc::<u8>(too_big(ctx))?;
            Ok(())
        });
        // Every backend captures (a backend without graphs would say so
        // with Unsupported, and this test would have to name it).
        assert_out_of_memory(got, "a capture that allocates too much");
        assert!(!stream.is_capturing(), "the failed capture ended");

        let graph = stream.capture(|s| ctx.ops_on(s).relu(&x, &mut y)).unwrap();
        graph.launch(&stream).unwrap();
        stream.sync().unwrap();
        assert_same(&relu_host(&host), &y.download().unwrap());
    }
);

on_every_backend!(
    out_of_memory_between_graph_replays_leaves_the_graph_working,
    |ctx| {
        let stream = ctx.create_stream().unwrap();
        let mut x = ctx.zeros::<f32>(4099).unwrap();
        let mut y = ctx.zeros::<f32>(4099).unwrap();
        let graph = stream.capture(|s| ctx.ops_on(s).relu(&x, &mut y)).unwrap();
        for round in 0..4 {
            let host = random_vec::<f32>(x.len());
            stream.upload(&host, &mut x).unwrap();
            if round == 2 {
                assert_out_of_memory(
                    ctx.alloc::<u8>(too_big(ctx)),
                    "an allocation between replays",
                );
                if ctx.memory_stats().is_ok() {
                    ctx.empty_cache().unwrap();
                }
            }
            graph.launch(&stream).unwrap();
            stream.sync().unwrap();
            assert_same(&relu_host(&host), &y.download().unwrap());
        }
    }
);

/// Takes every free byte of the device: 64 MiB pieces, then 1 MiB ones,
/// until an allocation fails (which must be `OutOfMemory`).
fn fill_the_device(ctx: &Context) -> Vec<GpuArray<u8>> {
    let mut hog = Vec::new();
    for piece in [64usize << 20, 1 << 20] {
        loop {
            match ctx.alloc::<u8>(piece) {
                Ok(a) => hog.push(a),
                Err(Error::OutOfMemory { .. }) => break,
                Err(e) => panic!("filling the device: {e}"),
            }
        }
    }
    assert!(
        !hog.is_empty(),
        "the device had no free memory to begin with"
    );
    hog
}

/// CUDA only, with no torch variant: torch's allocator would keep the
/// filled device in its cache, which this crate cannot empty (its
/// `empty_cache` is `Unsupported`: allocator.rs), and starve every later
/// test of the process.
mod a_full_device_fails_a_pipeline_not_a_replay_and_both_go_on_after_empty_cache {
    use super::*;

    // The leak guard holds the GPU, so no other test of this binary
    // allocates while the device is full.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn cuda() {
        common::leak_checked(
            concat!(module_path!(), "::cuda"),
            unigpu::Backend::Cuda,
            common::cuda_ctx,
            full_device,
        );
    }

    fn full_device(ctx: &Context) {
        let (batches, len) = (8, 1 << 20);
        let inputs: Vec<Vec<f32>> = (0..batches).map(|_| random_vec(len)).collect();
        let expected: Vec<Vec<f32>> = inputs.iter().map(|x| relu_host(x)).collect();
        let mut p = ctx.pipeline::<f32>(2, len).unwrap();
        let stream = ctx.create_stream().unwrap();
        let x = ctx.upload(&inputs[0]).unwrap();
        let mut y = ctx.zeros::<f32>(len).unwrap();
        let graph = stream.capture(|s| ctx.ops_on(s).relu(&x, &mut y)).unwrap();

        // One good run and one replay first: the pipeline's page-locked
        // staging rings and the graph's launch resources are made while
        // the device has room (the driver keeps some of what it maps for
        // them while the context lives, which the leak guard would count).
        runs_right(ctx, &mut p, &inputs, &expected);
        graph.launch(&stream).unwrap();
        stream.sync().unwrap();

        let hog = fill_the_device(ctx);
        // Nothing is left for the compute stage's 4 MiB temporary.
        let mut outputs = vec![vec![0.0f32; len]; batches];
        let got = p.run(
            &inputs,
            &mut outputs,
            relu_through_a_temporary(ctx, |_| len),
        );
        assert_out_of_memory(got, "a pipeline on a full device");
        // A replay needs no new memory: it still runs, and is right.
        graph.launch(&stream).unwrap();
        stream.sync().unwrap();
        assert_same(&expected[0], &y.download().unwrap());

        drop(hog);
        let released = ctx.empty_cache().unwrap();
        assert!(released > 0, "the filled memory went back to the driver");
        runs_right(ctx, &mut p, &inputs, &expected);
        graph.launch(&stream).unwrap();
        stream.sync().unwrap();
        assert_same(&expected[0], &y.download().unwrap());
    }
}
