//! tch tensors into the bridge and back, sharing storage both ways.
#![cfg(feature = "torch")]

use rand::Rng;
use unigpu_torch_bridge as c10;

fn random(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-10.0..10.0)).collect()
}

fn tch_values(t: &tch::Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
}

#[test]
fn a_tch_tensor_is_borrowed_without_a_copy() {
    let data = random(rand::rng().random_range(1..5000));
    let owned = tch::Tensor::from_slice(&data);
    let borrowed = c10::Tensor::from_tch(&owned).unwrap();
    assert_eq!(borrowed.to_f32_vec().unwrap(), data);
    // Same storage: a write through the bridge shows in tch's tensor.
    let mut borrowed = borrowed;
    let ones = c10::tensor_from_f32(&vec![1.0; data.len()], &[data.len() as i64]).unwrap();
    borrowed.copy_from(&ones, false).unwrap();
    assert_eq!(tch_values(&owned), vec![1.0; data.len()]);
    // tch still owns its tensor: dropping the bridge handle leaves it valid.
    drop(borrowed);
    assert_eq!(tch_values(&owned), vec![1.0; data.len()]);
}

#[test]
fn bridge_results_come_back_as_tch_tensors() {
    let data = random(rand::rng().random_range(1..5000));
    let t = c10::tensor_from_f32(&data, &[data.len() as i64]).unwrap();
    let relu = t.relu().unwrap();
    let as_tch = relu.to_tch().unwrap();
    drop(relu);
    let want: Vec<f32> = data.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(tch_values(&as_tch), want);
    // And tch's own ops work on it.
    let doubled = &as_tch * 2.0;
    let want2: Vec<f32> = want.iter().map(|v| v * 2.0).collect();
    assert_eq!(tch_values(&doubled), want2);
}
