//! The c10 bridge on a GPU: pool streams, events, guards and copies on a
//! chosen stream. Ignored unless asked for; fails when torch sees no GPU.
#![cfg(feature = "torch")]

use rand::Rng;
use unigpu_c10_bridge as c10;

fn require_gpu() {
    let status = c10::cuda_status().unwrap();
    assert!(
        status.is_empty(),
        "these tests need a CUDA GPU visible to torch: {status}"
    );
}

fn random(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-5.0..5.0)).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streams_from_the_pool_move_tensors_and_events_time_them() {
    require_gpu();
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
    assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
    assert!(end.query().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_waits_on_an_event_and_bad_devices_are_errors() {
    require_gpu();
    let s1 = c10::stream_from_pool(0, false).unwrap();
    let s2 = c10::current_stream(0).unwrap();
    let d = c10::default_stream(0).unwrap();
    assert_eq!(d.device_index().unwrap(), 0);
    let mut ev = c10::event_new().unwrap();
    ev.record(&s1).unwrap();
    s2.wait_event(&ev).unwrap();
    s2.synchronize().unwrap();
    assert!(
        s1.query().unwrap() || {
            s1.synchronize().unwrap();
            s1.query().unwrap()
        }
    );
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
    let s = c10::stream_from_pool(0, false).unwrap();
    // 256 MiB from pinned memory: tens of milliseconds of copy-engine work.
    let n = 64 << 20;
    let host = c10::tensor_randn(&[n], -1).unwrap().pin_memory().unwrap();
    let expected = host.to_f32_vec().unwrap();
    let on_gpu = host.to_stream(0, true, &s).unwrap();
    let pending = !s.query().unwrap();
    s.synchronize().unwrap();
    assert!(
        pending,
        "to_stream(non_blocking) returned after the copy had finished"
    );
    assert!(s.query().unwrap(), "the stream is idle after synchronize");
    assert!(on_gpu.is_cuda().unwrap());
    assert_eq!(on_gpu.to_f32_vec().unwrap(), expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_copy_and_kernels_on_two_streams_overlap_in_time() {
    require_gpu();
    let (copy_stream, compute_stream) = (
        c10::stream_from_pool(0, false).unwrap(),
        c10::stream_from_pool(0, false).unwrap(),
    );
    let host = c10::tensor_randn(&[64 << 20], -1)
        .unwrap()
        .pin_memory()
        .unwrap();
    let (a, b) = {
        let _g = c10::guard_stream(&compute_stream).unwrap();
        (
            c10::tensor_randn(&[4096, 4096], 0).unwrap(),
            c10::tensor_randn(&[4096, 4096], 0).unwrap(),
        )
    };
    compute_stream.synchronize().unwrap();
    // One clock for both streams: every event is timed from `origin`.
    let mut origin = c10::event_new().unwrap();
    let mut marks: Vec<c10::TorchEvent> = (0..4).map(|_| c10::event_new().unwrap()).collect();
    origin.record(&copy_stream).unwrap();
    compute_stream.wait_event(&origin).unwrap();
    marks[0].record(&copy_stream).unwrap();
    let copied = host.to_stream(0, true, &copy_stream).unwrap();
    marks[1].record(&copy_stream).unwrap();
    marks[2].record(&compute_stream).unwrap();
    let mut results = Vec::new();
    {
        let _g = c10::guard_stream(&compute_stream).unwrap();
        for _ in 0..8 {
            results.push(a.matmul(&b).unwrap());
        }
    }
    marks[3].record(&compute_stream).unwrap();
    copy_stream.synchronize().unwrap();
    compute_stream.synchronize().unwrap();
    let t: Vec<f64> = marks
        .iter()
        .map(|m| origin.elapsed_ms(m).unwrap())
        .collect();
    let (copy, compute) = ((t[0], t[1]), (t[2], t[3]));
    let overlap = copy.1.min(compute.1) - copy.0.max(compute.0);
    let shorter = (copy.1 - copy.0).min(compute.1 - compute.0);
    assert!(
        overlap > 0.5 * shorter,
        "copy {copy:?} ms and compute {compute:?} ms overlap by only {overlap:.3} ms"
    );
    assert!(copied.is_cuda().unwrap() && results.len() == 8);
}
