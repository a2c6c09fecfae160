//! The c10 bridge on any machine: tensors, DLPack, and the error path of
//! every CUDA call when torch has no usable CUDA. CI runs these with a
//! CUDA-enabled pip libtorch and no GPU, and sets UNIGPU_EXPECT_NO_GPU=1.
#![cfg(feature = "torch")]

use rand::Rng;
use unigpu_torch_bridge as c10;

fn random_tensor() -> (Vec<f32>, Vec<i64>, c10::Tensor) {
    let mut rng = rand::rng();
    let shape: Vec<i64> = (0..rng.random_range(1..4))
        .map(|_| rng.random_range(1..40))
        .collect();
    let n: i64 = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.random_range(-10.0..10.0)).collect();
    let t = c10::tensor_from_f32(&data, &shape).unwrap();
    (data, shape, t)
}

#[test]
fn cuda_availability_is_consistent_and_never_aborts() {
    let count = c10::cuda_device_count().unwrap();
    let available = c10::cuda_is_available().unwrap();
    let status = c10::cuda_status().unwrap();
    assert_eq!(available, count > 0);
    assert_eq!(status.is_empty(), available, "status: {status}");
    if std::env::var("UNIGPU_EXPECT_NO_GPU").as_deref() == Ok("1") {
        assert!(
            !available,
            "UNIGPU_EXPECT_NO_GPU=1 but torch sees {count} CUDA device(s)"
        );
    }
}

#[test]
fn without_cuda_every_cuda_call_is_a_clear_error() {
    if c10::cuda_is_available().unwrap() {
        // With a GPU the same calls succeed, on device 0.
        assert!(c10::cuda_status().unwrap().is_empty());
        let s = c10::stream_from_pool(0, false).unwrap();
        assert_eq!(s.device_index().unwrap(), 0);
        assert_eq!(c10::current_stream(0).unwrap().device_index().unwrap(), 0);
        assert_eq!(c10::default_stream(0).unwrap().device_index().unwrap(), 0);
        let mut ev = c10::event_new().unwrap();
        ev.record(&s).unwrap();
        ev.synchronize().unwrap();
        assert!(ev.query().unwrap());
        let (data, _, t) = random_tensor();
        let pinned = t.pin_memory().unwrap();
        assert!(!pinned.is_cuda().unwrap());
        assert_eq!(pinned.to_f32_vec().unwrap(), data);
        return;
    }
    let reason = c10::cuda_status().unwrap();
    assert!(!reason.is_empty());
    let check = |what: &str, err: c10::Error| {
        let text = err.to_string();
        assert!(
            text.contains("CUDA") || text.contains("libtorch_cuda"),
            "{what}: {text}"
        );
    };
    check(
        "stream_from_pool",
        c10::stream_from_pool(0, false).unwrap_err(),
    );
    check("current_stream", c10::current_stream(0).unwrap_err());
    check("default_stream", c10::default_stream(0).unwrap_err());
    check("event_new", c10::event_new().unwrap_err());
    let (_, _, t) = random_tensor();
    check("pin_memory", t.pin_memory().unwrap_err());
}

#[test]
fn tensors_round_trip_element_by_element() {
    for _ in 0..10 {
        let (data, shape, t) = random_tensor();
        assert_eq!(t.numel().unwrap(), shape.iter().product::<i64>());
        assert!(!t.is_cuda().unwrap());
        assert_eq!(t.to_f32_vec().unwrap(), data);
    }
}

#[test]
fn a_shape_that_does_not_fit_the_data_is_an_error() {
    let err = c10::tensor_from_f32(&[1.0, 2.0, 3.0], &[2, 2]).unwrap_err();
    assert!(err.to_string().contains("3 values"), "{err}");
    assert!(c10::tensor_from_f32(&[], &[-1]).is_err());
}

#[test]
fn relu_sigmoid_and_copy_match_the_host() {
    let (data, shape, t) = random_tensor();
    let relu: Vec<f32> = data.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(t.relu().unwrap().to_f32_vec().unwrap(), relu);
    let sig = t.sigmoid().unwrap().to_f32_vec().unwrap();
    for (s, v) in sig.iter().zip(&data) {
        let want = 1.0 / (1.0 + (-(*v as f64)).exp());
        assert!(
            (*s as f64 - want).abs() <= 1e-6,
            "sigmoid({v}) = {s}, want {want}"
        );
    }
    let mut dst = c10::tensor_from_f32(&vec![0.0; data.len()], &shape).unwrap();
    dst.copy_from(&t, false).unwrap();
    assert_eq!(dst.to_f32_vec().unwrap(), data);
}

#[test]
fn dlpack_round_trip_shares_the_values() {
    let (data, shape, t) = random_tensor();
    let mut capsule = c10::tensor_to_dlpack(&t).unwrap();
    assert_eq!(capsule.device_type().unwrap(), 1, "kDLCPU");
    assert_eq!(capsule.ndim().unwrap() as usize, shape.len());
    assert!(!capsule.is_consumed().unwrap());
    let back = c10::tensor_from_dlpack(&mut capsule).unwrap();
    assert!(capsule.is_consumed().unwrap());
    assert_eq!(back.to_f32_vec().unwrap(), data);
    // A consumed capsule cannot be imported twice.
    let err = c10::tensor_from_dlpack(&mut capsule).unwrap_err();
    assert!(err.to_string().contains("consumed"), "{err}");
    // Shared memory: writing through the import is seen by the original.
    let mut back = back;
    let ones = c10::tensor_from_f32(&vec![1.0; data.len()], &shape).unwrap();
    back.copy_from(&ones, false).unwrap();
    assert_eq!(t.to_f32_vec().unwrap(), vec![1.0; data.len()]);
}

/// `bmm_out` on CPU tensors (the same ATen calls as on CUDA): `a` and `b`
/// as 1-D buffers read through strided views (an offset, a leading
/// dimension past the row, a batch stride, 0 for one matrix shared by the
/// batch, transposed storage), against the host in f64, for each of its
/// three paths (one product, a shared `b` under row-contiguous batches of
/// `a`, bmm).
#[test]
fn bmm_out_reads_strided_views_in_place() {
    let mut rng = rand::rng();
    // One operand: (offset, batch stride, ld, transposed) and its buffer.
    let mut operand = |g: usize, r: usize, c: usize, t: bool, shared: bool, dense: bool| {
        let (sr, sc) = if t { (c, r) } else { (r, c) };
        let ld = if dense {
            sc
        } else {
            sc + rng.random_range(0..3)
        };
        let offset = if dense { 0 } else { rng.random_range(0..4) };
        let bs = if shared {
            0
        } else {
            sr * ld + if dense { 0 } else { rng.random_range(0..3) }
        };
        let len = offset + g.saturating_sub(1) * bs + sr * ld;
        let data: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        let at = move |z: usize, i: usize, j: usize| {
            let (i, j) = if t { (j, i) } else { (i, j) };
            offset + z * bs + i * ld + j
        };
        (data, (offset as i64, bs as i64, ld as i64, t), at)
    };
    for round in 0..24 {
        let g = if round % 4 == 0 {
            1
        } else {
            rand::rng().random_range(1..5)
        };
        let (m, k, n) = (
            rand::rng().random_range(1..20),
            rand::rng().random_range(1..20),
            rand::rng().random_range(1..20),
        );
        let (ta, tb) = (round % 2 == 1, (round / 2) % 2 == 1);
        // Rounds 8..16: a dense row-major `a` and a shared `b` (one product
        // of (g·m)×k); the others random layouts.
        let shared_dense = (8..16).contains(&round);
        let (ha, (ao, abs_, ald, at_), ia) =
            operand(g, m, k, ta && !shared_dense, false, shared_dense);
        let (hb, (bo, bbs, bld, bt), ib) =
            operand(g, k, n, tb, shared_dense || round % 3 == 0, false);
        let a = c10::tensor_from_f32(&ha, &[ha.len() as i64]).unwrap();
        let b = c10::tensor_from_f32(&hb, &[hb.len() as i64]).unwrap();
        let mut c = c10::tensor_from_f32(&vec![7.0; g * m * n], &[(g * m * n) as i64]).unwrap();
        c.bmm_out(
            &a, &b, g as i64, m as i64, k as i64, n as i64, ao, abs_, ald, at_, bo, bbs, bld, bt,
        )
        .unwrap();
        let got = c.to_f32_vec().unwrap();
        for z in 0..g {
            for i in 0..m {
                for j in 0..n {
                    let (mut want, mut scale) = (0.0f64, 0.0f64);
                    for p in 0..k {
                        let v = ha[ia(z, i, p)] as f64 * hb[ib(z, p, j)] as f64;
                        want += v;
                        scale += v.abs();
                    }
                    let got = got[(z * m + i) * n + j] as f64;
                    let tol = (k as f64 + 2.0) * f32::EPSILON as f64 * scale + 1e-30;
                    assert!(
                        (got - want).abs() <= tol,
                        "round {round}: {g}x{m}x{k}x{n} a.t {at_} b.t {bt} [{z},{i},{j}]: {got} != {want}"
                    );
                }
            }
        }
    }
}
