//! Collectives on torch contexts: every GPU of the machine through torch
//! (arrays are tensors on c10 streams), every collective with random
//! inputs checked element by element against a host reference, a gated
//! write that the collective must wait for, and what is refused.
//!
//! Ignored unless asked for; each fails, never skips, with fewer than two
//! GPUs (.ci/gpu-tests-fail-without-gpu.sh checks). NCCL runs only with
//! `NCCL_NVLS_ENABLE=0` (bench/runners/run_multi_gpu.sh sets it).

#![cfg(feature = "torch")]

mod common;

use common::{Gate, WATCH};
use rand::Rng;
use unigpu::{Backend, Communicator, Context, Error, GpuArray, ReduceOp};

/// A torch context on every GPU (at least two).
fn gpus() -> Vec<Context> {
    let n = match unigpu::list_devices(Backend::Torch) {
        Ok(d) => d.len(),
        Err(e) => panic!("this test needs two CUDA GPUs usable through torch and found none: {e}"),
    };
    assert!(n >= 2, "this test needs two CUDA GPUs and found {n}");
    (0..n)
        .map(|i| Context::new(Backend::Torch, i).unwrap())
        .collect()
}

fn communicator(ctxs: &[Context]) -> Communicator {
    assert_eq!(
        std::env::var("NCCL_NVLS_ENABLE").as_deref(),
        Ok("0"),
        "run NCCL tests with NCCL_NVLS_ENABLE=0 (bench/runners/run_multi_gpu.sh does)"
    );
    Communicator::local(ctxs).expect("a communicator over every GPU's torch context")
}

/// Whole numbers as floats: sums in any order are exact.
fn ints(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| rng.random_range(-1000..1000) as f32)
        .collect()
}

fn upload_all(ctxs: &[Context], data: &[Vec<f32>]) -> Vec<GpuArray<f32>> {
    ctxs.iter()
        .zip(data)
        .map(|(c, d)| c.upload(d).unwrap())
        .collect()
}

#[track_caller]
fn assert_same(expected: &[f32], actual: &[f32], what: &str) {
    assert_eq!(expected.len(), actual.len(), "{what}: lengths");
    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != actual[i]) {
        panic!(
            "{what}: element {i} is {}, expected {}",
            actual[i], expected[i]
        );
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_torch_contexts_run_every_collective_and_match_the_host() {
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    let n = ctxs.len();
    let len = 65_537;

    // All-reduce, in place and into other arrays.
    let data: Vec<Vec<f32>> = (0..n).map(|_| ints(len)).collect();
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        let expected: Vec<f32> = (0..len)
            .map(|i| {
                let col = data.iter().map(|d| d[i]);
                match op {
                    ReduceOp::Max => col.fold(f32::MIN, f32::max),
                    ReduceOp::Min => col.fold(f32::MAX, f32::min),
                    _ => col.sum(),
                }
            })
            .collect();
        let mut arrays = upload_all(&ctxs, &data);
        comm.all_reduce(&mut arrays.iter_mut().rev().collect::<Vec<_>>(), op)
            .unwrap();
        for (r, a) in arrays.iter().enumerate() {
            assert_eq!(a.context().backend(), Backend::Torch);
            assert_same(
                &expected,
                &a.download().unwrap(),
                &format!("{op:?} rank {r}"),
            );
        }
        let sends = upload_all(&ctxs, &data);
        let mut recvs: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(len).unwrap()).collect();
        comm.all_reduce_into(
            &sends.iter().collect::<Vec<_>>(),
            &mut recvs.iter_mut().collect::<Vec<_>>(),
            op,
        )
        .unwrap();
        for (r, a) in recvs.iter().enumerate() {
            assert_same(
                &expected,
                &a.download().unwrap(),
                &format!("{op:?} into, rank {r}"),
            );
        }
    }

    // Broadcast from the last rank.
    let mut arrays = upload_all(&ctxs, &data);
    comm.broadcast(&mut arrays.iter_mut().collect::<Vec<_>>(), n - 1)
        .unwrap();
    for (r, a) in arrays.iter().enumerate() {
        assert_same(
            &data[n - 1],
            &a.download().unwrap(),
            &format!("broadcast rank {r}"),
        );
    }

    // All-gather, in rank order.
    let sends = upload_all(&ctxs, &data);
    let mut recvs: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(n * len).unwrap()).collect();
    comm.all_gather(
        &sends.iter().collect::<Vec<_>>(),
        &mut recvs.iter_mut().collect::<Vec<_>>(),
    )
    .unwrap();
    for (r, a) in recvs.iter().enumerate() {
        assert_same(
            &data.concat(),
            &a.download().unwrap(),
            &format!("all_gather rank {r}"),
        );
    }

    // Reduce-scatter: rank r gets block r of the sum.
    let big: Vec<Vec<f32>> = (0..n).map(|_| ints(n * len)).collect();
    let sends = upload_all(&ctxs, &big);
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

    // Send/recv around a ring.
    let sends = upload_all(&ctxs, &data);
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
    for c in &ctxs {
        c.synchronize().unwrap();
    }
}

/// Each rank's array is written on a stream held back by a gate; the
/// collective runs on the default streams and must wait for the write. A
/// collective that does not wait reduces the zeros already there, and
/// finishes while the gate is shut.
#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_a_torch_collective_waits_for_a_gated_write() {
    let _parked = common::park_lock();
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    // Unless NCCL connects at init (NCCL_RUNTIME_CONNECT=0, which unigpu
    // cannot set once torch has loaded NCCL), a communicator's first
    // collective connects its rings, and that waits for the work already
    // queued on the device: behind the gate it would block this thread
    // (docs/multi-gpu.md). One collective first, so the gated one is
    // ordered by the streams alone.
    let mut first: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(8).unwrap()).collect();
    comm.all_reduce(&mut first.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap();
    comm.wait().unwrap();
    println!("blocking collectives: {}", comm.blocking_collectives());
    let len = 1 << 20;
    let data: Vec<Vec<f32>> = ctxs.iter().map(|_| ints(len)).collect();
    let sources = upload_all(&ctxs, &data);
    let mut arrays: Vec<GpuArray<f32>> = ctxs.iter().map(|c| c.zeros(len).unwrap()).collect();
    for c in &ctxs {
        c.synchronize().unwrap();
    }
    // A device-side copy: an upload from pageable memory would block this
    // thread behind the gate instead of queueing.
    let writers: Vec<_> = ctxs.iter().map(|c| c.create_stream().unwrap()).collect();
    let gates: Vec<Gate> = writers.iter().map(Gate::close).collect();
    for ((w, a), src) in writers.iter().zip(arrays.iter_mut()).zip(&sources) {
        w.copy(src, a).unwrap();
    }
    comm.all_reduce(&mut arrays.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap();
    std::thread::sleep(WATCH);
    for (r, c) in ctxs.iter().enumerate() {
        assert!(
            !c.default_stream().is_idle().unwrap(),
            "rank {r}'s all-reduce finished while the write it must wait for was held back"
        );
    }
    for g in &gates {
        g.open();
    }
    let expected: Vec<f32> = (0..len).map(|i| data.iter().map(|d| d[i]).sum()).collect();
    for (r, a) in arrays.iter().enumerate() {
        assert_same(
            &expected,
            &a.download().unwrap(),
            &format!("gated all_reduce rank {r}"),
        );
    }
    comm.wait().unwrap();
    for (w, g) in writers.iter().zip(&gates) {
        w.sync().unwrap();
        g.assert_opened_by_the_test();
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_torch_and_cuda_arrays_do_not_mix_in_one_collective() {
    let ctxs = gpus();
    let comm = communicator(&ctxs);
    let cuda = Context::new(Backend::Cuda, 1).unwrap();
    let mut mixed = vec![
        ctxs[0].zeros::<f32>(8).unwrap(),
        cuda.zeros::<f32>(8).unwrap(),
    ];
    mixed.extend(ctxs[2..].iter().map(|c| c.zeros::<f32>(8).unwrap()));
    let err = comm
        .all_reduce(&mut mixed.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(err, Error::ContextMismatch { .. }), "{err}");
    let cuda_all: Vec<Context> = (0..ctxs.len())
        .map(|i| Context::new(Backend::Cuda, i).unwrap())
        .collect();
    let mut both = ctxs.clone();
    both[1] = cuda_all[1].clone();
    let err = Communicator::local(&both).unwrap_err();
    assert!(matches!(err, Error::ContextMismatch { .. }), "{err}");
    // Still usable after the refusal.
    let mut ok: Vec<GpuArray<f32>> = ctxs
        .iter()
        .map(|c| c.upload(&[2.0f32; 4]).unwrap())
        .collect();
    comm.all_reduce(&mut ok.iter_mut().collect::<Vec<_>>(), ReduceOp::Sum)
        .unwrap();
    assert_eq!(ok[0].download().unwrap(), vec![2.0 * ctxs.len() as f32; 4]);
}
