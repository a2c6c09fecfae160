//! Graphs on every backend: kernels, ops and copies captured from a
//! stream and replayed on any stream, every element checked against a host
//! reference; memory the captured work uses stays valid for every replay;
//! work a replay cannot repeat is refused while capturing.

mod common;

use common::{assert_same, random_len, random_vec, saxpy};
use unigpu::{Backend, Context, Error, GpuArray, Grid, Stream};

/// Graph tests one at a time: a capture on one thread makes a device-wide
/// sync on another fail (docs/graphs.md), and every test here syncs.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The end of a capture that filled `a` with 1.5: scale it by 2, end the
/// capture, replay it once, and check every element is 3.
fn scale_end_and_replay(ctx: &Context, s: &Stream, a: &mut GpuArray<f32>) {
    ctx.ops_on(s).scale(2.0, a).unwrap();
    let graph = s.end_capture().unwrap();
    graph.launch(s).unwrap();
    s.sync().unwrap();
    assert!(a.download().unwrap().iter().all(|&v| v == 3.0));
}

/// What the captured sequence below computes, on the host.
fn reference(x: &[f32], y0: &[f32]) -> (Vec<f32>, Vec<f32>) {
    // y = y0; y = 0.5 x + y (kernel); y = relu(y); y *= 3; y += x; z = y
    let y: Vec<f32> = x
        .iter()
        .zip(y0)
        .map(|(&x, &y)| {
            let k = 0.5f32.mul_add(x, y);
            let r = if k > 0.0 { k } else { 0.0 };
            (r * 3.0) + x
        })
        .collect();
    (y.clone(), y)
}

on_every_backend!(replays_kernels_ops_and_copies, |ctx| {
    let _one = one_at_a_time();
    let k = saxpy(ctx);
    let n = 1000 + random_len(50_000);
    let capture_stream = ctx.create_stream().unwrap();
    let x0 = random_vec::<f32>(n);
    let y0 = random_vec::<f32>(n);
    let mut x = ctx.upload(&x0).unwrap();
    let mut y = ctx.upload(&y0).unwrap();
    let mut t = ctx.zeros::<f32>(n).unwrap();
    let mut z = ctx.zeros::<f32>(n).unwrap();
    ctx.sync().unwrap();
    let graph = capture_stream
        .capture(|s| {
            let ops = ctx.ops_on(s);
            s.launch(&k, Grid::for_elems(n), (0.5f32, &x, &mut y, n as u32))?;
            ops.relu(&y, &mut t)?;
            ops.scale(3.0, &mut t)?;
            ops.add(&t, &x, &mut y)?;
            ops.copy(&y, &mut z)
        })
        .unwrap();
    assert!(!capture_stream.is_capturing());
    assert!(graph.len() >= 5, "{} pieces of work recorded", graph.len());
    // Capturing ran nothing.
    assert_same(&y0, &y.download().unwrap());
    assert!(z.download().unwrap().iter().all(|&v| v == 0.0));

    graph.launch(&capture_stream).unwrap();
    capture_stream.sync().unwrap();
    let (want_y, want_z) = reference(&x0, &y0);
    assert_same(&want_y, &y.download().unwrap());
    assert_same(&want_z, &z.download().unwrap());

    // New inputs between replays, and replays on other streams: each
    // replay reads the arrays as they are when it runs, after their
    // pending writes on any stream, with no sync in between.
    let mut host_y = want_y;
    for round in 0..3 {
        let x1 = random_vec::<f32>(n);
        let writer = ctx.create_stream().unwrap();
        writer.upload(&x1, &mut x).unwrap();
        let runner = ctx.create_stream().unwrap();
        graph.launch(&runner).unwrap();
        let (want, _) = reference(&x1, &host_y);
        assert_same(&want, &z.download().unwrap());
        assert_same(&want, &y.download().unwrap());
        host_y = want;
        let _ = round;
    }
});

on_every_backend!(memory_used_by_a_graph_outlives_its_arrays, |ctx| {
    let _one = one_at_a_time();
    let n = 4096 + random_len(100_000);
    let s = ctx.create_stream().unwrap();
    let x0 = random_vec::<f32>(n);
    let x = ctx.upload(&x0).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    ctx.sync().unwrap();
    let graph = s
        .capture(|s| {
            let ops = ctx.ops_on(s);
            // A temporary made and dropped inside the capture, and the
            // input itself dropped after it: the graph keeps both.
            let mut tmp = ctx.alloc::<f32>(n)?;
            ops.relu(&x, &mut tmp)?;
            ops.add(&tmp, &x, &mut out)
        })
        .unwrap();
    drop(x);
    // Arrays of the same size, filled with another value: the allocator
    // would hand them the dropped arrays' memory if the graph did not
    // keep it.
    let mut decoys = Vec::new();
    for _ in 0..4 {
        let mut d = ctx.alloc::<f32>(n).unwrap();
        ctx.ops().fill(&mut d, 7.0).unwrap();
        decoys.push(d);
    }
    for _ in 0..2 {
        graph.launch(&s).unwrap();
        s.sync().unwrap();
        let want: Vec<f32> = x0.iter().map(|&v| v.max(0.0) + v).collect();
        assert_same(&want, &out.download().unwrap());
    }
    for d in &decoys {
        assert!(d.download().unwrap().iter().all(|&v| v == 7.0));
    }
    drop(graph);
    ctx.sync().unwrap();
});

on_every_backend!(
    work_a_replay_cannot_repeat_is_refused_while_capturing,
    |ctx| {
        let _one = one_at_a_time();
        let s = ctx.create_stream().unwrap();
        let n = 1 + random_len(1000);
        let host = random_vec::<f32>(n);
        let mut a = ctx.upload(&host).unwrap();
        let mut out = vec![0.0f32; n];
        let event = ctx.create_event().unwrap();
        ctx.sync().unwrap();
        match s.end_capture() {
            Err(Error::Unsupported { what, .. }) => {
                assert!(what.contains("not capturing"), "{what}")
            }
            other => panic!("end_capture without a capture: {other:?}"),
        }
        s.begin_capture().unwrap();
        assert!(s.is_capturing());
        match s.begin_capture() {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains("already"), "{what}"),
            other => panic!("a second begin_capture: {other:?}"),
        }
        let refusals: Vec<(&str, unigpu::Result<()>)> = vec![
            ("upload", s.upload(&host, &mut a)),
            ("download", s.download_into(&a, &mut out)),
            ("sum", ctx.ops_on(&s).sum(&a).map(drop)),
            ("host_fn", s.host_fn(|| ())),
            ("record", event.record(&s)),
            ("record a new event", s.record().map(drop)),
            ("sync", s.sync()),
        ];
        for (what, outcome) in refusals {
            match outcome {
                Err(Error::Unsupported { .. }) => {}
                other => panic!("{what} while capturing: {other:?}"),
            }
        }
        ctx.ops_on(&s).scale(2.0, &mut a).unwrap();
        let graph = s.end_capture().unwrap();
        assert!(!s.is_capturing());
        // The refused work changed nothing, and the stream works as before.
        assert_same(&host, &a.download().unwrap());
        graph.launch(&s).unwrap();
        graph.launch(&s).unwrap();
        s.sync().unwrap();
        let want: Vec<f32> = host.iter().map(|v| v * 4.0).collect();
        assert_same(&want, &a.download().unwrap());
    }
);

on_every_backend!(a_graph_launches_only_on_its_own_backend, |ctx| {
    let _one = one_at_a_time();
    if ctx.backend() == Backend::Cpu {
        return;
    }
    let s = ctx.create_stream().unwrap();
    let mut a = ctx.zeros::<f32>(16).unwrap();
    let graph = s.capture(|s| ctx.ops_on(s).fill(&mut a, 1.0)).unwrap();
    let cpu = common::cpu_ctx();
    let other = cpu.create_stream().unwrap();
    match graph.launch(&other) {
        Err(Error::ContextMismatch { .. }) => {}
        other => panic!("a {} graph on a CPU stream: {other:?}", ctx.backend()),
    }
});

on_every_backend!(a_capture_survives_another_thread_using_the_gpu, |ctx| {
    let _one = one_at_a_time();
    let backend = ctx.backend();
    let n = 1 + random_len(10_000);
    let s = ctx.create_stream().unwrap();
    let mut a = ctx.zeros::<f32>(n).unwrap();
    ctx.sync().unwrap();
    s.begin_capture().unwrap();
    ctx.ops_on(&s).fill(&mut a, 1.5).unwrap();
    // Another thread opens its own context on the same device, makes a
    // stream, allocates, uploads and syncs its stream while this one
    // captures: none of it may fail or invalidate the capture.
    let host = random_vec::<f32>(n);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let other = unigpu::Context::new(backend, 0).unwrap();
                let t = other.create_stream().unwrap();
                let mut b = other.alloc::<f32>(n).unwrap();
                t.upload(&host, &mut b).unwrap();
                assert_same(&host, &t.download(&b).unwrap());
            })
            .join()
            .unwrap();
    });
    scale_end_and_replay(ctx, &s, &mut a);
});

// Found by the soak on one H100 (2026-11-27): on vulkan a context sync from
// another thread refused ("a sync cannot be recorded while the stream
// captures") because it synced the capturing stream too. A context sync
// waits for the work enqueued on every stream; a capture enqueues nothing.
on_every_backend!(a_context_sync_beside_a_capture_waits_and_keeps_it, |ctx| {
    let _one = one_at_a_time();
    let n = 1 + random_len(10_000);
    let s = ctx.create_stream().unwrap();
    let mut a = ctx.zeros::<f32>(n).unwrap();
    let host = random_vec::<f32>(n);
    let mut b = ctx.alloc::<f32>(n).unwrap();
    ctx.sync().unwrap();
    s.begin_capture().unwrap();
    ctx.ops_on(&s).fill(&mut a, 1.5).unwrap();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let t = ctx.create_stream().unwrap();
                t.upload(&host, &mut b).unwrap();
                ctx.sync().unwrap();
            })
            .join()
            .unwrap();
    });
    scale_end_and_replay(ctx, &s, &mut a);
    assert_same(&host, &b.download().unwrap());
});
