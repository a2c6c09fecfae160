//! Streams and events: ordering, concurrency, queries and timing, on every
//! backend.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{GATE_TIMEOUT, Gate, WATCH, assert_same, random_len, random_vec, sizes};
use unigpu::{Backend, Error};

on_every_backend!(stream_upload_copy_download, |ctx| {
    let s = ctx.create_stream().unwrap();
    for n in sizes() {
        let host = random_vec::<f32>(n);
        let mut a = ctx.alloc::<f32>(n).unwrap();
        let mut b = ctx.alloc::<f32>(n).unwrap();
        s.upload(&host, &mut a).unwrap();
        s.copy(&a, &mut b).unwrap();
        assert_same(&host, &s.download(&b).unwrap());
        let mut out = vec![0.0; n];
        s.download_into(&a, &mut out).unwrap();
        assert_same(&host, &out);
    }
    s.sync().unwrap();
    assert!(s.is_idle().unwrap());
});

on_every_backend!(stream_copy_length_mismatch, |ctx| {
    let s = ctx.stream().unwrap();
    let n = random_len(100);
    let a = ctx.upload(&random_vec::<i64>(n)).unwrap();
    let mut b = ctx.zeros::<i64>(n + 1).unwrap();
    assert!(matches!(
        s.copy(&a, &mut b),
        Err(Error::SizeMismatch { .. })
    ));
    assert!(matches!(
        s.upload(&random_vec::<i64>(n), &mut b),
        Err(Error::SizeMismatch { .. })
    ));
    assert_same(&vec![0; n + 1], &b.download().unwrap());
});

on_every_backend!(writes_on_one_stream_are_seen_by_reads_on_another, |ctx| {
    let _parked = common::park_lock();
    // No explicit event: arrays remember their pending writes.
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let n = random_len(1 << 18);
    let host = random_vec::<u32>(n);
    let mut a = ctx.zeros::<u32>(n).unwrap();
    let mut b = ctx.zeros::<u32>(n).unwrap();
    // The upload cannot start before the gate opens; a copy on s2 that did
    // not wait for it would copy the zeros and finish at once.
    let gate = Gate::close(&s1);
    s1.upload(&host, &mut a).unwrap();
    s2.copy(&a, &mut b).unwrap();
    std::thread::sleep(WATCH);
    assert!(
        !s2.is_idle().unwrap(),
        "the copy on s2 finished while the write it reads was held back"
    );
    gate.open();
    assert_same(&host, &s2.download(&b).unwrap());
    assert_same(&host, &b.download().unwrap());
    s1.sync().unwrap();
    gate.assert_opened_by_the_test();
});

on_every_backend!(a_write_on_another_stream_waits_for_a_pending_read, |ctx| {
    let _parked = common::park_lock();
    // Write after read, again with no event: the copy on s1 reads `a` and is
    // held back; the write to `a` on s2 must wait for it, or the copy
    // finds the new values when the gate opens.
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let n = random_len(1 << 18);
    let (old, new) = (random_vec::<u32>(n), random_vec::<u32>(n));
    let mut a = ctx.upload(&old).unwrap();
    let fresh = ctx.upload(&new).unwrap();
    let mut b = ctx.zeros::<u32>(n).unwrap();
    // Both copies once ungated first, for the lazy loading that the
    // events test's warm-up is for.
    s1.copy(&a, &mut b).unwrap();
    s2.copy(&a, &mut b).unwrap();
    ctx.sync().unwrap();
    let gate = Gate::close(&s1);
    s1.copy(&a, &mut b).unwrap();
    s2.copy(&fresh, &mut a).unwrap();
    std::thread::sleep(WATCH);
    assert!(
        !s2.is_idle().unwrap(),
        "the write on s2 finished while a read of the same array was held back"
    );
    gate.open();
    s2.sync().unwrap();
    assert_same(&old, &b.download().unwrap());
    assert_same(&new, &a.download().unwrap());
    s1.sync().unwrap();
    gate.assert_opened_by_the_test();
});

on_every_backend!(a_write_waits_for_every_repeated_read, |ctx| {
    let _parked = common::park_lock();
    // `a` is written on s2, then read three times on s1. Only the first
    // read waits for the write and records its end; a write on s2 after
    // them must wait for the last, not the first. A second gate holds the
    // later reads back once the first has run: a write that waited for the
    // first read only would finish while they are still held.
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let n = random_len(1 << 18);
    let (old, new) = (random_vec::<u32>(n), random_vec::<u32>(n));
    let mut a = ctx.zeros::<u32>(n).unwrap();
    s2.upload(&old, &mut a).unwrap();
    let fresh = ctx.upload(&new).unwrap();
    let mut outs: Vec<_> = (0..3).map(|_| ctx.zeros::<u32>(n).unwrap()).collect();
    // Both copies once ungated first (lazy loading), on other arrays.
    let mut spare = ctx.zeros::<u32>(n).unwrap();
    s1.copy(&fresh, &mut spare).unwrap();
    s2.copy(&fresh, &mut spare).unwrap();
    ctx.sync().unwrap();
    let first = Gate::close(&s1);
    s1.copy(&a, &mut outs[0]).unwrap();
    let later = Gate::close(&s1);
    s1.copy(&a, &mut outs[1]).unwrap();
    s1.copy(&a, &mut outs[2]).unwrap();
    s2.copy(&fresh, &mut a).unwrap();
    first.open();
    std::thread::sleep(WATCH);
    assert!(
        !s2.is_idle().unwrap(),
        "the write on s2 finished while later reads of the same array on s1 were held back"
    );
    later.open();
    s2.sync().unwrap();
    for out in &outs {
        assert_same(&old, &out.download().unwrap());
    }
    assert_same(&new, &a.download().unwrap());
    s1.sync().unwrap();
    first.assert_opened_by_the_test();
    later.assert_opened_by_the_test();
});

on_every_backend!(events_order_work_across_streams, |ctx| {
    let _parked = common::park_lock();
    let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    // Arrays the event alone orders: nothing links them to the producer.
    let n = random_len(1 << 16);
    let host = random_vec::<f32>(n);
    let src = ctx.upload(&host).unwrap();
    let mut dst = ctx.zeros::<f32>(n).unwrap();
    // Warm up the consumer's copy: CUDA loads a kernel's module on its first launch (lazy loading), and
    // loading waits for the device's streams, a gated one too,
    // so a first launch behind the closed gate would block the test.
    consumer.copy(&src, &mut dst).unwrap();
    ctx.ops_on(&consumer).fill(&mut dst, 0.0).unwrap();
    ctx.sync().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let gate = Gate::close(&producer);
    let set = flag.clone();
    producer
        .host_fn(move || set.store(true, Ordering::SeqCst))
        .unwrap();
    let done = producer.record().unwrap();
    consumer.wait(&done).unwrap();
    consumer.copy(&src, &mut dst).unwrap();
    std::thread::sleep(WATCH);
    assert!(
        !done.query().unwrap(),
        "the event is behind the closed gate"
    );
    assert!(
        !consumer.is_idle().unwrap(),
        "the consumer's copy ran before the event it waits for"
    );
    gate.open();
    let seen = Arc::new(Mutex::new(None));
    let (read, out) = (flag.clone(), seen.clone());
    consumer
        .host_fn(move || *out.lock().unwrap() = Some(read.load(Ordering::SeqCst)))
        .unwrap();
    consumer.sync().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(true),
        "the consumer ran before the event"
    );
    assert!(done.query().unwrap());
    assert_same(&host, &consumer.download(&dst).unwrap());
    producer.sync().unwrap();
    gate.assert_opened_by_the_test();
});

on_every_backend!(queries_see_pending_then_finished_work, |ctx| {
    let _parked = common::park_lock();
    let s = ctx.create_stream().unwrap();
    let fresh = ctx.create_event().unwrap();
    assert!(
        fresh.query().unwrap(),
        "an unrecorded event counts as complete"
    );
    let gate = Gate::close(&s);
    let ev = s.record().unwrap();
    assert!(
        !s.is_idle().unwrap(),
        "the stream is blocked, it cannot be idle"
    );
    assert!(!s.query().unwrap());
    assert!(!ev.query().unwrap(), "the event is behind blocked work");
    gate.open();
    ev.sync().unwrap();
    assert!(ev.query().unwrap());
    s.sync().unwrap();
    assert!(s.is_idle().unwrap());
    gate.assert_opened_by_the_test();
});

on_every_backend!(elapsed_time_covers_the_work_between_events, |ctx| {
    let s = ctx.create_stream().unwrap();
    // The host's clock runs around the whole span: from before the start
    // event is enqueued to after the end event is done. The events lie
    // inside it, so their distance cannot exceed it; the host function
    // between them holds the stream for at least 30 ms of it.
    let host = Instant::now();
    let start = s.record_timed().unwrap();
    s.host_fn(|| std::thread::sleep(Duration::from_millis(30)))
        .unwrap();
    let end = s.record_timed().unwrap();
    end.sync().unwrap();
    let host_ms = host.elapsed().as_secs_f64() * 1e3;
    let ms = f64::from(start.elapsed_ms(&end).unwrap());
    // The slack on each side is for clocks of different resolutions (the
    // device's ticks against the host's); a time in the wrong unit (µs,
    // s) is off by a factor of 1000.
    assert!(
        ms >= 29.0 && ms <= host_ms + 2.0,
        "elapsed {ms} ms for a 30 ms sleep, {host_ms} ms on the host's clock around it"
    );
    // Re-recording an event moves it: `mark` first sits right after `end`,
    // then after another 20 ms of work.
    let mark = ctx.create_timing_event().unwrap();
    mark.record(&s).unwrap();
    let first = end.elapsed_ms(&mark).unwrap();
    assert!(first >= 0.0, "{first} ms between consecutive events");
    s.host_fn(|| std::thread::sleep(Duration::from_millis(20)))
        .unwrap();
    mark.record(&s).unwrap();
    let second = end.elapsed_ms(&mark).unwrap();
    assert!(
        second >= first + 19.0,
        "re-recording did not move the event: {first} ms, then {second} ms"
    );
});

on_every_backend!(a_panicking_host_fn_is_an_error_at_the_next_sync, |ctx| {
    let s = ctx.create_stream().unwrap();
    s.host_fn(|| panic!("boom in a host function")).unwrap();
    let err = s.sync().unwrap_err();
    assert!(err.to_string().contains("boom in a host function"), "{err}");
    // The error is reported once; the stream keeps working.
    s.sync().unwrap();
    let host = random_vec::<f32>(random_len(1000));
    let mut a = ctx.zeros::<f32>(host.len()).unwrap();
    s.upload(&host, &mut a).unwrap();
    assert_same(&host, &s.download(&a).unwrap());
});

on_every_backend!(context_sync_waits_for_every_stream, |ctx| {
    let streams: Vec<_> = (0..3).map(|_| ctx.create_stream().unwrap()).collect();
    let counter = Arc::new(Mutex::new(0));
    for s in &streams {
        let c = counter.clone();
        s.host_fn(move || {
            std::thread::sleep(Duration::from_millis(20));
            *c.lock().unwrap() += 1;
        })
        .unwrap();
    }
    ctx.sync().unwrap();
    assert_eq!(*counter.lock().unwrap(), 3);
    for s in &streams {
        assert!(s.is_idle().unwrap());
    }
});

#[track_caller]
fn refused<T: std::fmt::Debug>(call: &str, result: unigpu::Result<T>) {
    assert!(
        matches!(result, Err(Error::ContextMismatch { .. })),
        "{call} with a context of another backend: {result:?}"
    );
}

on_every_backend!(events_streams_and_arrays_of_other_contexts, |ctx| {
    // The other context is a CPU one. For the CPU run that is a second
    // context on the same device, which shares memory and ordering with
    // the first: every call accepts it. For the GPU runs every call refuses
    // it, and nothing is written.
    let other = common::cpu_ctx();
    let s = ctx.create_stream().unwrap();
    let foreign_stream = other.create_stream().unwrap();
    let foreign_event = foreign_stream.record_timed().unwrap();
    let own_event = s.record_timed().unwrap();
    let host = random_vec::<f32>(random_len(1000));
    let n = host.len();
    let theirs = other.upload(&host).unwrap();
    let mut their_dst = other.zeros::<f32>(n).unwrap();
    let own_src = ctx.upload(&host).unwrap();
    let mut ours = ctx.zeros::<f32>(n).unwrap();
    let mut buf = vec![0.0f32; n];
    if ctx.backend() == Backend::Cpu {
        s.wait(&foreign_event).unwrap();
        s.copy(&theirs, &mut ours).unwrap();
        assert_same(&host, &s.download(&ours).unwrap());
        s.upload(&random_vec::<f32>(n), &mut their_dst).unwrap();
        s.copy(&own_src, &mut their_dst).unwrap();
        s.download_into(&their_dst, &mut buf).unwrap();
        assert_same(&host, &buf);
        own_event.record(&foreign_stream).unwrap();
        foreign_event.record(&s).unwrap();
        assert!(own_event.elapsed_ms(&foreign_event).is_ok());
        return;
    }
    refused("Stream::wait", s.wait(&foreign_event));
    refused("Event::record", own_event.record(&foreign_stream));
    refused("Event::record", foreign_event.record(&s));
    refused("Event::elapsed_ms", own_event.elapsed_ms(&foreign_event));
    refused("Event::elapsed_ms", foreign_event.elapsed_ms(&own_event));
    refused("Stream::copy", s.copy(&theirs, &mut ours));
    refused("Stream::copy", s.copy(&own_src, &mut their_dst));
    refused("Stream::upload", s.upload(&host, &mut their_dst));
    refused("Stream::download", s.download(&theirs));
    refused("Stream::download_into", s.download_into(&theirs, &mut buf));
    refused("Stream::download", foreign_stream.download(&own_src));
    refused("GpuArray::copy_to", own_src.copy_to(&mut their_dst));
    refused("GpuArray::copy_to", theirs.copy_to(&mut ours));
    assert_same(&vec![0.0; n], &ours.download().unwrap());
    assert_same(&vec![0.0; n], &their_dst.download().unwrap());
    assert_same(&vec![0.0; n], &buf);
});

#[test]
fn cpu_streams_really_run_at_the_same_time() {
    // Each stream's job needs the other's to be running: on one thread
    // this would wait out the timeout and fail.
    let ctx = common::cpu_ctx();
    let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let (to_b, from_a) = mpsc::channel::<()>();
    let (to_a, from_b) = mpsc::channel::<()>();
    let met = Arc::new(AtomicBool::new(false));
    let met_a = met.clone();
    a.host_fn(move || {
        to_b.send(()).unwrap();
        if from_b.recv_timeout(Duration::from_secs(10)).is_ok() {
            met_a.store(true, Ordering::SeqCst);
        }
    })
    .unwrap();
    b.host_fn(move || {
        if from_a.recv_timeout(Duration::from_secs(10)).is_ok() {
            to_a.send(()).unwrap();
        }
    })
    .unwrap();
    a.sync().unwrap();
    b.sync().unwrap();
    assert!(
        met.load(Ordering::SeqCst),
        "the two streams did not overlap"
    );
}

#[test]
fn a_stream_dropped_with_pending_work_finishes_it() {
    let ctx = common::cpu_ctx();
    let done = Arc::new(AtomicBool::new(false));
    {
        let s = ctx.create_stream().unwrap();
        let d = done.clone();
        s.host_fn(move || {
            std::thread::sleep(Duration::from_millis(20));
            d.store(true, Ordering::SeqCst);
        })
        .unwrap();
    }
    assert!(done.load(Ordering::SeqCst));
}

on_every_backend!(untimed_events_are_refused_by_elapsed_ms, |ctx| {
    let s = ctx.create_stream().unwrap();
    let (untimed, timed) = (s.record().unwrap(), s.record_timed().unwrap());
    assert!(!untimed.is_timed() && timed.is_timed());
    assert!(!ctx.create_event().unwrap().is_timed());
    assert!(ctx.create_timing_event().unwrap().is_timed());
    for (a, b) in [(&untimed, &timed), (&timed, &untimed), (&untimed, &untimed)] {
        match a.elapsed_ms(b) {
            Err(Error::Unsupported { what, .. }) => {
                assert!(what.contains("record_timed"), "{what}")
            }
            other => panic!("elapsed_ms with an untimed event: {other:?}"),
        }
    }
    // Untimed events still order streams and the host.
    untimed.sync().unwrap();
    assert!(untimed.query().unwrap());
    let other = ctx.create_stream().unwrap();
    other.wait(&untimed).unwrap();
    other.sync().unwrap();
    let end = s.record_timed().unwrap();
    assert!(timed.elapsed_ms(&end).unwrap() >= 0.0);
});

/// A small download that waits for its gated stream must not hold up a
/// small upload on another stream from another thread: a pipeline's
/// download thread waits like this while its upload thread goes on. On
/// CUDA a pageable copy that waits inside the driver held up the other
/// direction's pageable copies (seen as a pipeline upload that began only
/// when the compute it did not depend on ended). Not the torch backend:
/// its copies wait for other streams' work (docs/pipelines.md).
fn a_waiting_download_does_not_hold_up_an_upload(ctx: &unigpu::Context) {
    let _parked = common::park_lock();
    let n = 1 + random_len(4096);
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let src = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let mut dst = ctx.zeros::<f32>(n).unwrap();
    ctx.sync().unwrap();
    let gate = Gate::close(&s1);
    let (downloaded_tx, downloaded) = mpsc::channel();
    let (uploaded_tx, uploaded) = mpsc::channel();
    let host = random_vec::<f32>(n);
    std::thread::scope(|scope| {
        let (s1, src) = (&s1, &src);
        scope.spawn(move || {
            let mut out = vec![0.0f32; n];
            let r = s1.download_into(src, &mut out);
            let _ = downloaded_tx.send(r);
        });
        // Let the download start waiting.
        std::thread::sleep(WATCH);
        let (s2, dst, host) = (&s2, &mut dst, &host);
        scope.spawn(move || {
            let r = s2.upload(host, dst);
            let _ = uploaded_tx.send(r);
        });
        let upload = uploaded.recv_timeout(GATE_TIMEOUT / 2);
        let download_waited = downloaded.try_recv().is_err();
        gate.open();
        match upload {
            Ok(r) => r.unwrap(),
            Err(_) => panic!("the upload on s2 waited for the download gated on s1"),
        }
        assert!(download_waited, "the download did not wait for its gate");
        downloaded.recv().unwrap().unwrap();
    });
    s1.sync().unwrap();
    gate.assert_opened_by_the_test();
    assert_same(&host, &s2.download(&dst).unwrap());
}

mod a_waiting_download_does_not_hold_up_an_upload {
    use super::*;

    #[test]
    fn cpu() {
        a_waiting_download_does_not_hold_up_an_upload(&common::cpu_ctx());
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn cuda() {
        a_waiting_download_does_not_hold_up_an_upload(&common::cuda_ctx());
    }

    #[cfg(feature = "vulkan")]
    #[test]
    #[ignore = "needs a Vulkan adapter"]
    fn vulkan() {
        a_waiting_download_does_not_hold_up_an_upload(&common::vulkan_ctx());
    }
}
