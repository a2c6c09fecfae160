//! Every GPU of the machine in one process: the peer-access matrix, copies
//! between devices, and every collective with random inputs checked
//! element by element against a host reference.
//!
//! Ignored unless asked for; each fails, never skips, with fewer than two
//! GPUs (.ci/gpu-tests-fail-without-gpu.sh checks). Written for any
//! number of GPUs. NCCL runs only with `NCCL_NVLS_ENABLE=0`
//! (bench/runners/run_multi_gpu.sh sets it).

mod collective_checks;

use collective_checks::{assert_same, communicator, ints, upload_all};
use rand::Rng;
use unigpu::{Backend, Context, GpuArray, ReduceOp, device_list};

/// A cuda context on every GPU (at least two).
fn gpus() -> Vec<Context> {
    collective_checks::gpus(Backend::Cuda)
}

fn copy_every_pair(ctxs: &[Context], len: impl Fn() -> usize, label: &str) {
    for (i, a) in ctxs.iter().enumerate() {
        for (j, b) in ctxs.iter().enumerate() {
            if i == j {
                continue;
            }
            let host = ints(len());
            let x = a.upload(&host).unwrap();
            let mut y = b.zeros::<f32>(host.len()).unwrap();
            x.copy_to(&mut y).unwrap();
            assert_same(
                &host,
                &y.download().unwrap(),
                &format!("{label}copy_to {i} -> {j}"),
            );
            let z = y.to_context(a).unwrap();
            assert_same(
                &host,
                &z.download().unwrap(),
                &format!("{label}to_context {j} -> {i}"),
            );
            assert_eq!(z.context().device_id(), i);
        }
    }
}

/// Issue 25: two Vulkan adapters gave `ContextMismatch` from `copy_to`,
/// for want of a vulkan arm in the copy between devices; the copy is now
/// staged through the host. Every ordered pair of adapters (a machine with
/// several GPUs has an adapter each; a software one such as lavapipe
/// counts too), random data, every element checked.
#[test]
#[ignore = "needs two Vulkan adapters"]
#[cfg(feature = "vulkan")]
fn two_vulkan_adapters_copy_to_each_other() {
    let n = match unigpu::list_devices(Backend::Vulkan) {
        Ok(d) => d.len(),
        Err(e) => panic!("this test needs two Vulkan adapters and found none: {e}"),
    };
    assert!(n >= 2, "this test needs two Vulkan adapters and found {n}");
    let ctxs: Vec<Context> = (0..n)
        .map(|i| Context::new(Backend::Vulkan, i).unwrap())
        .collect();
    copy_every_pair(&ctxs, || rand::rng().random_range(1..(1 << 20)), "vulkan ");
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_the_device_list_carries_the_peer_matrix_and_copies_cross_devices() {
    let ctxs = gpus();
    let list = device_list(Backend::Cuda).unwrap();
    assert_eq!(list.peers.len(), ctxs.len());
    print!("{}", list.peers);
    copy_every_pair(&ctxs, || 3 << 20, "");
    let mut short = ctxs[1].zeros::<f32>(2).unwrap();
    assert!(
        ctxs[0]
            .zeros::<f32>(3)
            .unwrap()
            .copy_to(&mut short)
            .is_err()
    );
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_all_reduce_sum_max_min_avg_match_the_host() {
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    // NCCL 2.18+ loaded by unigpu first: collectives take the blocking
    // path, which this test then checks.
    assert!(
        comm.blocking_collectives(),
        "collectives did not get blocking handles (is NCCL_RUNTIME_CONNECT set?)"
    );
    let n = ctxs.len();
    for len in [1, 4099, 1 << 20] {
        let data: Vec<Vec<f32>> = (0..n).map(|_| ints(len)).collect();
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg] {
            let expected: Vec<f32> = (0..len)
                .map(|i| {
                    let col = data.iter().map(|d| d[i]);
                    match op {
                        ReduceOp::Sum => col.sum(),
                        ReduceOp::Max => col.fold(f32::MIN, f32::max),
                        ReduceOp::Min => col.fold(f32::MAX, f32::min),
                        ReduceOp::Avg => col.sum::<f32>() / n as f32,
                    }
                })
                .collect();
            let mut arrays = upload_all(&ctxs, &data);
            // Any order: each array goes to the rank of its context.
            let mut refs: Vec<&mut GpuArray<f32>> = arrays.iter_mut().rev().collect();
            comm.all_reduce(&mut refs, op).unwrap();
            comm.wait().unwrap();
            for (r, a) in arrays.iter().enumerate() {
                let got = a.download().unwrap();
                if op == ReduceOp::Avg {
                    for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
                        assert!(
                            (e - g).abs() <= 1e-4 * e.abs().max(1.0),
                            "avg rank {r} element {i}: {g} vs {e}"
                        );
                    }
                } else {
                    assert_same(&expected, &got, &format!("{op:?} rank {r}, len {len}"));
                }
            }
        }
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_integer_and_double_all_reduce_match_the_host() {
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    let mut rng = rand::rng();
    let len = 10_007;
    let data: Vec<Vec<i32>> = ctxs
        .iter()
        .map(|_| {
            (0..len)
                .map(|_| rng.random_range(-1 << 20..1 << 20))
                .collect()
        })
        .collect();
    let mut arrays: Vec<GpuArray<i32>> = ctxs
        .iter()
        .zip(&data)
        .map(|(c, d)| c.upload(d).unwrap())
        .collect();
    comm.all_reduce(&mut arrays.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap();
    let expected: Vec<i32> = (0..len).map(|i| data.iter().map(|d| d[i]).sum()).collect();
    for a in &arrays {
        assert_eq!(a.download().unwrap(), expected);
    }
    let data: Vec<Vec<f64>> = ctxs
        .iter()
        .map(|_| (0..len).map(|_| rng.random_range(-1e6..1e6)).collect())
        .collect();
    let sends: Vec<GpuArray<f64>> = ctxs
        .iter()
        .zip(&data)
        .map(|(c, d)| c.upload(d).unwrap())
        .collect();
    let mut recvs: Vec<GpuArray<f64>> = ctxs.iter().map(|c| c.zeros(len).unwrap()).collect();
    comm.all_reduce_into(
        &sends.iter().collect::<Vec<_>>(),
        &mut recvs.iter_mut().collect::<Vec<_>>(),
        ReduceOp::Max,
    )
    .unwrap();
    let expected: Vec<f64> = (0..len)
        .map(|i| data.iter().map(|d| d[i]).fold(f64::MIN, f64::max))
        .collect();
    for r in &recvs {
        assert_eq!(r.download().unwrap(), expected);
    }
    comm.wait().unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_broadcast_all_gather_reduce_scatter_and_send_recv_match_the_host() {
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    let n = ctxs.len();
    collective_checks::broadcast_gather_scatter_send_recv(&ctxs, &comm, 65_537);

    // Mistakes are errors, and leave the communicator usable.
    let mut short: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(3).unwrap()).collect();
    short.pop();
    assert!(
        comm.all_reduce(&mut short.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
            .is_err()
    );
    let mut twice = vec![
        ctxs[0].zeros::<f32>(4).unwrap(),
        ctxs[0].zeros::<f32>(4).unwrap(),
    ];
    twice.extend(ctxs[2..].iter().map(|c| c.zeros::<f32>(4).unwrap()));
    assert!(
        comm.all_reduce(&mut twice.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
            .is_err()
    );
    let mut ok: Vec<GpuArray<f32>> = ctxs
        .iter()
        .map(|c| c.upload(&[1.0f32; 4]).unwrap())
        .collect();
    comm.all_reduce(&mut ok.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap();
    assert_eq!(ok[0].download().unwrap(), vec![n as f32; 4]);
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_collectives_on_other_streams_are_ordered_after_the_arrays_uses() {
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    let streams: Vec<_> = ctxs.iter().map(|c| c.create_stream().unwrap()).collect();
    let on = comm.on_streams(&streams).unwrap();
    let len = 1 << 22;
    let data: Vec<Vec<f32>> = ctxs.iter().map(|_| ints(len)).collect();
    let mut arrays: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(len).unwrap()).collect();
    // Written on the default streams, reduced on the others, read on the
    // default streams again: the use records order all three.
    for (a, d) in arrays.iter_mut().zip(&data) {
        a.upload_from(d).unwrap();
    }
    on.all_reduce(&mut arrays.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap();
    let expected: Vec<f32> = (0..len).map(|i| data.iter().map(|d| d[i]).sum()).collect();
    for a in &arrays {
        assert_same(
            &expected,
            &a.download().unwrap(),
            "all_reduce on other streams",
        );
    }
    on.wait().unwrap();
}

/// One thread driving every GPU, matmuls alternating between them (as a
/// data-parallel training loop enqueues them): each runs on its own
/// device's context whatever the thread bound last, and matches the host.
#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_one_thread_alternating_matmuls_match_the_host() {
    let ctxs = gpus();
    let (m, k, n) = (67, 129, 33);
    let mut rng = rand::rng();
    let mut random =
        |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let inputs: Vec<(Vec<f32>, Vec<f32>)> = ctxs
        .iter()
        .map(|_| (random(m * k), random(k * n)))
        .collect();
    let arrays: Vec<(GpuArray<f32>, GpuArray<f32>)> = ctxs
        .iter()
        .zip(&inputs)
        .map(|(c, (a, b))| {
            (
                c.upload(a).unwrap().reshape([m, k]).unwrap(),
                c.upload(b).unwrap().reshape([k, n]).unwrap(),
            )
        })
        .collect();
    let mut outs: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros([m, n]).unwrap()).collect();
    for round in 0..3 {
        for ((c, (a, b)), out) in ctxs.iter().zip(&arrays).zip(outs.iter_mut()) {
            c.ops().mm(a, b, out).unwrap();
        }
        for (r, ((a, b), out)) in inputs.iter().zip(&outs).enumerate() {
            let got = out.download().unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                        .sum();
                    let g = got[i * n + j];
                    assert!(
                        (f64::from(g) - want).abs() <= 1e-4 * (k as f64),
                        "round {round}, GPU {r}: c[{i}][{j}] = {g}, expected {want}"
                    );
                }
            }
        }
    }
}
