//! What tests/multi_gpu.rs (cuda contexts) and tests/multi_gpu_torch.rs
//! (torch contexts) share: every GPU of a backend, the communicator over
//! them, random whole-number inputs, and the check of broadcast,
//! all-gather, reduce-scatter and send/recv against the host.

#![allow(dead_code)] // each test binary uses its own part

use rand::Rng;
use unigpu::{Backend, Communicator, Context, GpuArray, ReduceOp};

/// A context of `backend` on every GPU (at least two).
pub fn gpus(backend: Backend) -> Vec<Context> {
    let n = match unigpu::list_devices(backend) {
        Ok(d) => d.len(),
        Err(e) => panic!("this test needs two CUDA GPUs ({backend}) and found none: {e}"),
    };
    assert!(n >= 2, "this test needs two CUDA GPUs and found {n}");
    (0..n).map(|i| Context::new(backend, i).unwrap()).collect()
}

pub fn communicator(ctxs: &[Context]) -> Communicator {
    assert_eq!(
        std::env::var("NCCL_NVLS_ENABLE").as_deref(),
        Ok("0"),
        "run NCCL tests with NCCL_NVLS_ENABLE=0 (bench/runners/run_multi_gpu.sh does): NVLink multicast \
         can take a shared host's GPUs out of service"
    );
    Communicator::local(ctxs).expect("a communicator over every GPU (is libnccl on the path?)")
}

/// Whole numbers as floats: sums in any order are exact.
pub fn ints(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| rng.random_range(-1000..1000) as f32)
        .collect()
}

pub fn upload_all(ctxs: &[Context], data: &[Vec<f32>]) -> Vec<GpuArray<f32>> {
    ctxs.iter()
        .zip(data)
        .map(|(c, d)| c.upload(d).unwrap())
        .collect()
}

#[track_caller]
pub fn assert_same(expected: &[f32], actual: &[f32], what: &str) {
    assert_eq!(expected.len(), actual.len(), "{what}: lengths");
    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != actual[i]) {
        panic!(
            "{what}: element {i} is {}, expected {}",
            actual[i], expected[i]
        );
    }
}

/// Broadcast from the last rank, all-gather (arrays given in reverse:
/// each goes to its context's rank), reduce-scatter, and send/recv around
/// a ring, each on `len` elements a rank, against the host.
pub fn broadcast_gather_scatter_send_recv(ctxs: &[Context], comm: &Communicator, len: usize) {
    let n = ctxs.len();
    let data: Vec<Vec<f32>> = (0..n).map(|_| ints(len)).collect();
    let mut arrays = upload_all(ctxs, &data);
    comm.broadcast(&mut arrays.iter_mut().collect::<Vec<_>>(), n - 1)
        .unwrap();
    for (r, a) in arrays.iter().enumerate() {
        assert_same(
            &data[n - 1],
            &a.download().unwrap(),
            &format!("broadcast rank {r}"),
        );
    }

    // All-gather: rank order, whatever order the arrays come in.
    let sends = upload_all(ctxs, &data);
    let mut recvs: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(n * len).unwrap()).collect();
    comm.all_gather(
        &sends.iter().rev().collect::<Vec<_>>(),
        &mut recvs.iter_mut().collect::<Vec<_>>(),
    )
    .unwrap();
    let gathered: Vec<f32> = data.concat();
    for (r, a) in recvs.iter().enumerate() {
        assert_same(
            &gathered,
            &a.download().unwrap(),
            &format!("all_gather rank {r}"),
        );
    }

    // Reduce-scatter: rank r gets block r of the sum.
    let big: Vec<Vec<f32>> = (0..n).map(|_| ints(n * len)).collect();
    let sends = upload_all(ctxs, &big);
    let mut recvs: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(len).unwrap()).collect();
    comm.reduce_scatter(
        &sends.iter().collect::<Vec<_>>(),
        &mut recvs.iter_mut().collect::<Vec<_>>(),
        ReduceOp::Sum,
    )
    .unwrap();
    for (r, a) in recvs.iter().enumerate() {
        let expected: Vec<f32> = (0..len)
            .map(|i| big.iter().map(|d| d[r * len + i]).sum())
            .collect();
        assert_same(
            &expected,
            &a.download().unwrap(),
            &format!("reduce_scatter rank {r}"),
        );
    }

    // Send/recv around a ring: rank r sends to r + 1, receives from r - 1.
    let sends = upload_all(ctxs, &data);
    let mut recvs: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(len).unwrap()).collect();
    let s: Vec<(&GpuArray<f32>, usize)> = sends
        .iter()
        .enumerate()
        .map(|(r, a)| (a, (r + 1) % n))
        .collect();
    let mut rv: Vec<(&mut GpuArray<f32>, usize)> = recvs
        .iter_mut()
        .enumerate()
        .map(|(r, a)| (a, (r + n - 1) % n))
        .collect();
    comm.send_recv(&s, &mut rv).unwrap();
    comm.wait().unwrap();
    for (r, a) in recvs.iter().enumerate() {
        assert_same(
            &data[(r + n - 1) % n],
            &a.download().unwrap(),
            &format!("recv rank {r}"),
        );
    }
}
