//! The c10 bridge on a GPU: pool streams, events, guards and copies on a
//! chosen stream. Ignored unless asked for; fails when torch sees no GPU.
#![cfg(feature = "torch")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use rand::Rng;
use unigpu_torch_bridge as c10;

fn require_gpu() {
    let status = c10::cuda_status().unwrap();
    assert!(
        status.is_empty(),
        "these tests need a CUDA GPU visible to torch: {status}"
    );
}

/// Held by tests that park a stream: CUDA runs every host function of the
/// process on one driver thread, so two parked streams would wait on each
/// other.
fn park_lock() -> std::sync::MutexGuard<'static, ()> {
    static PARKED: std::sync::Mutex<()> = std::sync::Mutex::new(());
    PARKED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A c10 stream as the CUDA driver sees it, for host functions.
fn driver_view(s: &c10::TorchStream) -> unigpu_cuda_safe::ForeignStream {
    let device = unigpu_cuda_safe::CudaDevice::open(0).unwrap();
    s.as_foreign(&device).unwrap()
}

/// Holds `s` back behind a host function until the test sends on the
/// returned channel; the flag says whether it was opened (rather than timed
/// out after 30 s, which the test must treat as a failure).
fn close_gate(s: &c10::TorchStream) -> (mpsc::Sender<()>, Arc<AtomicBool>) {
    let (tx, rx) = mpsc::channel::<()>();
    let opened = Arc::new(AtomicBool::new(false));
    let flag = opened.clone();
    driver_view(s)
        .host_fn(move || {
            if rx.recv_timeout(Duration::from_secs(30)).is_ok() {
                flag.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    (tx, opened)
}

/// How long a test watches a blocked stream to see that it stays blocked.
const WATCH: Duration = Duration::from_millis(200);

fn random(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-5.0..5.0)).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streams_from_the_pool_move_tensors_and_events_time_them() {
    require_gpu();
    // Pool streams are shared by every caller: keep the parked tests' streams
    // free of this test's work.
    let _parked = park_lock();
    let (s1, s2) = (
        c10::stream_from_pool(0, false).unwrap(),
        c10::stream_from_pool(0, true).unwrap(),
    );
    assert_ne!(s1.id().unwrap(), s2.id().unwrap());
    assert_eq!(s1.device_index().unwrap(), 0);
    let (a, b) = (random(1_000_000), random(1_000_000));
    let ta = c10::tensor_from_f32(&a, &[1000, 1000])
        .unwrap()
        .pin_memory()
        .unwrap();
    let tb = c10::tensor_from_f32(&b, &[1000, 1000])
        .unwrap()
        .pin_memory()
        .unwrap();
    let mut start = c10::event_new().unwrap();
    let mut end = c10::event_new().unwrap();
    start.record(&s1).unwrap();
    // A known delay between the events: they must time at least that.
    driver_view(&s1)
        .host_fn(|| std::thread::sleep(Duration::from_millis(30)))
        .unwrap();
    let ga = ta.to_stream(0, true, &s1).unwrap();
    let gb = tb.to_stream(0, true, &s2).unwrap();
    let (ra, rb) = {
        let _g1 = c10::guard_stream(&s1).unwrap();
        let ra = ga.relu().unwrap();
        drop(_g1);
        let _g2 = c10::guard_stream(&s2).unwrap();
        (ra, gb.sigmoid().unwrap())
    };
    end.record(&s1).unwrap();
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(ra.is_cuda().unwrap() && rb.is_cuda().unwrap());
    let want_a: Vec<f32> = a.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(ra.to_f32_vec().unwrap(), want_a);
    for (got, v) in rb.to_f32_vec().unwrap().iter().zip(&b) {
        let want = 1.0 / (1.0 + (-(*v as f64)).exp());
        assert!((*got as f64 - want).abs() <= 1e-6);
    }
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms >= 29.0, "{ms} ms between events around a 30 ms sleep");
    assert!(end.query().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_waits_on_an_event_and_bad_devices_are_errors() {
    require_gpu();
    let _parked = park_lock();
    let s1 = c10::stream_from_pool(0, false).unwrap();
    let s2 = c10::stream_from_pool(0, false).unwrap();
    assert_ne!(s1.id().unwrap(), s2.id().unwrap());
    assert_eq!(c10::current_stream(0).unwrap().device_index().unwrap(), 0);
    let d = c10::default_stream(0).unwrap();
    assert_eq!(d.device_index().unwrap(), 0);
    // s1 is held back; s2 waits for an event behind the gate, then copies
    // a tensor: until the gate opens, s2 must stay busy.
    let (open, opened) = close_gate(&s1);
    let mut ev = c10::event_new().unwrap();
    ev.record(&s1).unwrap();
    s2.wait_event(&ev).unwrap();
    let waited = random(4096);
    let host = c10::tensor_from_f32(&waited, &[4096])
        .unwrap()
        .pin_memory()
        .unwrap();
    let copied = host.to_stream(0, true, &s2).unwrap();
    std::thread::sleep(WATCH);
    assert!(!ev.query().unwrap(), "the event is behind the closed gate");
    assert!(!s1.query().unwrap(), "s1 is parked");
    assert!(
        !s2.query().unwrap(),
        "s2 ran past wait_event before the event completed"
    );
    open.send(()).unwrap();
    s2.synchronize().unwrap();
    assert!(
        ev.query().unwrap(),
        "s2 finished, so the event it waited for did"
    );
    assert!(s1.query().unwrap(), "nothing follows the event on s1");
    assert!(s2.query().unwrap());
    assert!(opened.load(Ordering::SeqCst), "the gate timed out");
    assert_eq!(copied.to_f32_vec().unwrap(), waited);
    let count = c10::cuda_device_count().unwrap();
    let err = c10::stream_from_pool(count + 1, false).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    let data = random(4096);
    let t = c10::tensor_from_f32(&data, &[4096]).unwrap();
    let g = t.to_stream(0, false, &s1).unwrap();
    let mut capsule = c10::tensor_to_dlpack(&g).unwrap();
    assert_eq!(capsule.device_type().unwrap(), 2, "kDLCUDA");
    let back = c10::tensor_from_dlpack(&mut capsule).unwrap();
    assert_eq!(back.to_f32_vec().unwrap(), data);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_non_blocking_copy_returns_before_it_completes() {
    require_gpu();
    let _parked = park_lock();
    let s = c10::stream_from_pool(0, false).unwrap();
    let n = 1 << 20;
    let host = c10::tensor_randn(&[n], -1).unwrap().pin_memory().unwrap();
    let expected = host.to_f32_vec().unwrap();
    // The stream cannot start the copy until the test opens the gate, and
    // the test only opens it after to_stream returned: a copy that blocked
    // the caller would hold the gate shut until it times out.
    let (open, opened) = close_gate(&s);
    let on_gpu = host.to_stream(0, true, &s).unwrap();
    assert!(!s.query().unwrap(), "the copy is behind the closed gate");
    open.send(()).unwrap();
    s.synchronize().unwrap();
    assert!(
        opened.load(Ordering::SeqCst),
        "to_stream(non_blocking) waited for the copy: the gate timed out"
    );
    assert!(s.query().unwrap(), "the stream is idle after synchronize");
    assert!(on_gpu.is_cuda().unwrap());
    assert_eq!(on_gpu.to_f32_vec().unwrap(), expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_copy_and_kernels_on_two_streams_after_a_shared_event() {
    // Order and results, not speed (the overlap is measured by the
    // benchmarks): both streams wait for an event behind a gate, neither
    // finishes before it opens, and both produce the right values.
    require_gpu();
    let _parked = park_lock();
    let (copy_stream, compute_stream) = (
        c10::stream_from_pool(0, false).unwrap(),
        c10::stream_from_pool(0, false).unwrap(),
    );
    let data = random(1 << 20);
    let host = c10::tensor_from_f32(&data, &[1 << 20])
        .unwrap()
        .pin_memory()
        .unwrap();
    let dim = 64usize;
    let (ha, hb) = (random(dim * dim), random(dim * dim));
    let (a, b) = {
        let _g = c10::guard_stream(&compute_stream).unwrap();
        (
            c10::tensor_from_f32(&ha, &[dim as i64, dim as i64])
                .unwrap()
                .to_stream(0, false, &compute_stream)
                .unwrap(),
            c10::tensor_from_f32(&hb, &[dim as i64, dim as i64])
                .unwrap()
                .to_stream(0, false, &compute_stream)
                .unwrap(),
        )
    };
    // Warm up both streams' work: CUDA loads a kernel's module on its first launch (lazy loading), and
    // loading waits for the device's streams, a gated one too, so a
    // first launch (or cuBLAS's first call) behind the closed gate would
    // block the test itself.
    {
        let _g = c10::guard_stream(&compute_stream).unwrap();
        a.matmul(&b).unwrap();
    }
    host.to_stream(0, true, &copy_stream).unwrap();
    copy_stream.synchronize().unwrap();
    compute_stream.synchronize().unwrap();
    let (open, opened) = close_gate(&copy_stream);
    let mut origin = c10::event_new().unwrap();
    origin.record(&copy_stream).unwrap();
    compute_stream.wait_event(&origin).unwrap();
    let copied = host.to_stream(0, true, &copy_stream).unwrap();
    let mut results = Vec::new();
    {
        let _g = c10::guard_stream(&compute_stream).unwrap();
        for _ in 0..8 {
            results.push(a.matmul(&b).unwrap());
        }
    }
    std::thread::sleep(WATCH);
    assert!(!copy_stream.query().unwrap(), "the copy ran past the gate");
    assert!(
        !compute_stream.query().unwrap(),
        "the matmuls ran before the event they wait for"
    );
    open.send(()).unwrap();
    copy_stream.synchronize().unwrap();
    compute_stream.synchronize().unwrap();
    assert!(opened.load(Ordering::SeqCst), "the gate timed out");
    assert!(copied.is_cuda().unwrap());
    assert_eq!(copied.to_f32_vec().unwrap(), data);
    for r in &results {
        assert!(r.is_cuda().unwrap());
        let got = r.to_f32_vec().unwrap();
        for i in 0..dim {
            for j in 0..dim {
                let (mut want, mut scale) = (0.0f64, 0.0f64);
                for k in 0..dim {
                    let p = ha[i * dim + k] as f64 * hb[k * dim + j] as f64;
                    want += p;
                    scale += p.abs();
                }
                // f32 accumulation over k = dim products (TF32 is off for
                // matmul by default): |error| <= k * eps * sum |a*b|.
                let tol = 2.0 * dim as f64 * f32::EPSILON as f64 * scale + 1e-6;
                assert!(
                    (got[i * dim + j] as f64 - want).abs() <= tol,
                    "c[{i}][{j}] = {}, expected {want}",
                    got[i * dim + j]
                );
            }
        }
    }
}
