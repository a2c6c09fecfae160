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
