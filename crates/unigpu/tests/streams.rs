//! Streams and events: ordering, concurrency, queries and timing, on every
//! backend.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_same, random_len, random_vec, sizes};
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
    let (tx, rx) = mpsc::channel::<()>();
    // Hold s1 until the reads on s2 are enqueued, so they really wait.
    s1.host_fn(move || {
        let _ = rx.recv_timeout(Duration::from_secs(10));
    })
    .unwrap();
    s1.upload(&host, &mut a).unwrap();
    s2.copy(&a, &mut b).unwrap();
    tx.send(()).unwrap();
    assert_same(&host, &s2.download(&b).unwrap());
    assert_same(&host, &b.download().unwrap());
});

on_every_backend!(events_order_work_across_streams, |ctx| {
    let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let flag = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(None));
    let set = flag.clone();
    producer
        .host_fn(move || {
            std::thread::sleep(Duration::from_millis(50));
            set.store(true, Ordering::SeqCst);
        })
        .unwrap();
    let done = producer.record().unwrap();
    consumer.wait(&done).unwrap();
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
});

on_every_backend!(queries_see_pending_then_finished_work, |ctx| {
    let _parked = common::park_lock();
    let s = ctx.create_stream().unwrap();
    let fresh = ctx.create_event().unwrap();
    assert!(
        fresh.query().unwrap(),
        "an unrecorded event counts as complete"
    );
    let (tx, rx) = mpsc::channel::<()>();
    s.host_fn(move || {
        let _ = rx.recv_timeout(Duration::from_secs(10));
    })
    .unwrap();
    let ev = s.record().unwrap();
    assert!(
        !s.is_idle().unwrap(),
        "the stream is blocked, it cannot be idle"
    );
    assert!(!s.query().unwrap());
    assert!(!ev.query().unwrap(), "the event is behind blocked work");
    tx.send(()).unwrap();
    ev.sync().unwrap();
    assert!(ev.query().unwrap());
    s.sync().unwrap();
    assert!(s.is_idle().unwrap());
});

on_every_backend!(elapsed_time_covers_the_work_between_events, |ctx| {
    let s = ctx.create_stream().unwrap();
    let start = s.record().unwrap();
    s.host_fn(|| std::thread::sleep(Duration::from_millis(30)))
        .unwrap();
    let end = s.record().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    // A lower bound only: a sleep lasts at least as long as asked.
    assert!(ms >= 29.0, "elapsed {ms} ms for a 30 ms sleep");
    // Re-recording an event moves it.
    let later = ctx.create_event().unwrap();
    later.record(&s).unwrap();
    assert!(end.elapsed_ms(&later).unwrap() >= 0.0);
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

on_every_backend!(events_and_streams_of_other_backends_are_refused, |ctx| {
    let other = if ctx.backend() == Backend::Cpu {
        return; // only the CUDA run has a second backend to mix in
    } else {
        common::cpu_ctx()
    };
    let s = ctx.create_stream().unwrap();
    let foreign = other.create_stream().unwrap().record().unwrap();
    assert!(matches!(
        s.wait(&foreign),
        Err(Error::ContextMismatch { .. })
    ));
    let a = other.upload(&[1.0f32]).unwrap();
    assert!(matches!(s.download(&a), Err(Error::ContextMismatch { .. })));
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
