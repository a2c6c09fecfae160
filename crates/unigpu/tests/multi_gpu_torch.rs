//! Collectives on torch contexts: every GPU of the machine through torch
//! (arrays are tensors on c10 streams), every collective with random
//! inputs checked element by element against a host reference, a gated
//! write that the collective must wait for, and what is refused.
//!
//! Ignored unless asked for; each fails, never skips, with fewer than two
//! GPUs (.ci/gpu-tests-fail-without-gpu.sh checks). NCCL runs only with
//! `NCCL_NVLS_ENABLE=0` (bench/runners/run_multi_gpu.sh sets it).

#![cfg(feature = "torch")]

mod collective_checks;
mod common;

use collective_checks::{assert_same, communicator, ints, upload_all};
use common::{Gate, WATCH};
use unigpu::{Backend, Communicator, Context, Error, GpuArray, ReduceOp};

/// A torch context on every GPU (at least two).
fn gpus() -> Vec<Context> {
    collective_checks::gpus(Backend::Torch)
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

    collective_checks::broadcast_gather_scatter_send_recv(&ctxs, &comm, len);
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
