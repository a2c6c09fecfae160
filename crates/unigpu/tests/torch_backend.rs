//! The torch backend: what it says without a GPU, arrays moving to and
//! from the cuda and cpu backends, and what it refuses. The element-wise
//! behaviour is covered by every `on_every_backend!` test, which gets a
//! `torch` variant with this feature.

#![cfg(feature = "torch")]

mod common;

use common::{Random, assert_same, cpu_ctx, cuda_ctx, random_len, random_vec, torch_ctx};
use unigpu::{Backend, Context, Error, bf16, f16};

#[test]
fn without_a_gpu_torch_is_unavailable_with_torchs_reason() {
    let gpu = common::cuda_usable();
    match (Context::new(Backend::Torch, 0), gpu) {
        (Ok(ctx), true) => assert_eq!(ctx.backend(), Backend::Torch),
        (Err(Error::BackendUnavailable { backend, reason }), false) => {
            assert_eq!(backend, Backend::Torch);
            assert!(reason.contains("CUDA"), "{reason}");
            assert!(matches!(
                unigpu::list_devices(Backend::Torch),
                Err(Error::BackendUnavailable { .. })
            ));
        }
        (other, gpu) => panic!("torch context with a GPU present = {gpu}: {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn torch_device_ids_past_the_end_are_invalid() {
    let available = unigpu::list_devices(Backend::Torch)
        .expect("this test needs a CUDA GPU")
        .len();
    assert!(available > 0);
    assert_eq!(
        Context::new(Backend::Torch, available).unwrap_err(),
        Error::InvalidDevice {
            backend: Backend::Torch,
            asked: available,
            available
        }
    );
}

fn round_trip<T: Random>(from: &Context, to: &Context) {
    for len in [0, 1, 4099, random_len(1 << 20)] {
        let host = random_vec::<T>(len);
        let a = from.upload(&host).unwrap();
        let b = a.to_context(to).unwrap();
        assert_eq!(b.context().backend(), to.backend());
        assert_same(&host, &b.download().unwrap());
        let back = b.to_context(from).unwrap();
        assert_same(&host, &back.download().unwrap());
    }
}

fn every_type(from: &Context, to: &Context) {
    round_trip::<f32>(from, to);
    round_trip::<f64>(from, to);
    round_trip::<f16>(from, to);
    round_trip::<bf16>(from, to);
    round_trip::<i32>(from, to);
    round_trip::<u32>(from, to);
    round_trip::<i64>(from, to);
    round_trip::<u64>(from, to);
    round_trip::<u8>(from, to);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn arrays_move_between_torch_and_cuda_for_every_type() {
    every_type(&torch_ctx(), &cuda_ctx());
    every_type(&cuda_ctx(), &torch_ctx());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn arrays_move_between_torch_and_cpu() {
    every_type(&torch_ctx(), &cpu_ctx());
}

/// The move waits for writes still running on a torch side stream, and
/// later torch work waits for the move: a long chain of ops on a pool
/// stream, then the move, then an overwrite of the source on that stream.
#[test]
#[ignore = "needs a CUDA GPU"]
fn moves_are_ordered_with_pending_work_on_both_sides() {
    let (torch, cuda) = (torch_ctx(), cuda_ctx());
    let n = 1 << 24;
    let host = random_vec::<f32>(n);
    let side = torch.create_stream().unwrap();
    let ops = torch.ops_on(&side);
    let mut x = torch.alloc::<f32>(n).unwrap();
    side.upload(&host, &mut x).unwrap();
    for _ in 0..20 {
        ops.scale(2.0, &mut x).unwrap();
    }
    let moved = x.to_context(&cuda).unwrap();
    ops.fill(&mut x, 0.0).unwrap();
    let expected: Vec<f32> = host.iter().map(|v| v * 1_048_576.0).collect();
    assert_same(&expected, &moved.download().unwrap());
    assert_same(&vec![0.0; n], &x.download().unwrap());
}

fn ops_match_the_host<T: unigpu::Float + Random>(ctx: &Context) {
    let n = random_len(1 << 16);
    let (a, b) = (random_vec::<T>(n), random_vec::<T>(n));
    let (da, db) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
    let mut out = ctx.alloc::<T>(n).unwrap();
    ctx.ops().add(&da, &db, &mut out).unwrap();
    let sum: Vec<T> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| T::from_acc(x.to_acc() + y.to_acc()))
        .collect();
    assert_same(&sum, &out.download().unwrap());
    let mut filled = ctx.alloc::<T>(n).unwrap();
    ctx.ops().fill(&mut filled, a[0]).unwrap();
    assert_same(&vec![a[0]; n], &filled.download().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ops_round_once_per_result_like_the_other_backends() {
    let ctx = torch_ctx();
    ops_match_the_host::<f32>(&ctx);
    ops_match_the_host::<f64>(&ctx);
    ops_match_the_host::<f16>(&ctx);
    ops_match_the_host::<bf16>(&ctx);
}

fn fill_is_exact<T: Random>(ctx: &Context) {
    let v = random_vec::<T>(1)[0];
    let mut a = ctx.alloc::<T>(1000).unwrap();
    ctx.ops().fill(&mut a, v).unwrap();
    assert_same(&[v; 1000], &a.download().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fill_sets_every_type_bit_exactly() {
    let ctx = torch_ctx();
    fill_is_exact::<u64>(&ctx);
    fill_is_exact::<u32>(&ctx);
    fill_is_exact::<i64>(&ctx);
    fill_is_exact::<u8>(&ctx);
    fill_is_exact::<f16>(&ctx);
    fill_is_exact::<bf16>(&ctx);
    fill_is_exact::<f64>(&ctx);
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"#;

/// A custom kernel on one c10 stream between torch ops on another: it sees
/// their writes, and the op after it sees its writes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_kernels_run_on_torch_arrays_in_order_with_torch_ops() {
    let ctx = torch_ctx();
    let saxpy = ctx.compile(SAXPY).unwrap().kernel("saxpy").unwrap();
    let n = 1 << 22;
    let (x, y) = (random_vec::<f32>(n), random_vec::<f32>(n));
    let (first, second) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let mut dx = ctx.alloc::<f32>(n).unwrap();
    let mut dy = ctx.alloc::<f32>(n).unwrap();
    first.upload(&x, &mut dx).unwrap();
    first.upload(&y, &mut dy).unwrap();
    for _ in 0..10 {
        ctx.ops_on(&first).scale(2.0, &mut dx).unwrap();
    }
    second
        .launch(
            &saxpy,
            unigpu::Grid::for_elems(n),
            (0.5f32, &dx, &mut dy, n as u32),
        )
        .unwrap();
    ctx.ops_on(&first).scale(-1.0, &mut dy).unwrap();
    let want: Vec<f32> = x
        .iter()
        .zip(&y)
        .map(|(x, y)| -(0.5f32 * (x * 1024.0) + y))
        .collect();
    assert_same(&want, &first.download(&dy).unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_functions_run_in_stream_order_and_panics_reach_sync() {
    let ctx = torch_ctx();
    let s = ctx.create_stream().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut a = ctx.alloc::<f32>(1 << 20).unwrap();
    ctx.ops_on(&s).fill(&mut a, 3.0).unwrap();
    for i in 0..3 {
        let seen = seen.clone();
        s.host_fn(move || seen.lock().unwrap().push(i)).unwrap();
    }
    s.sync().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2]);
    s.host_fn(|| panic!("boom in a host fn")).unwrap();
    let err = s.sync().unwrap_err();
    assert!(err.to_string().contains("boom in a host fn"), "{err}");
    s.sync().unwrap();
}

const TORCH_CUDA_OVERRIDE: &str = "UNIGPU_TEST_TORCH_CUDA_LIB";
const MISSING_TORCH_CUDA: &str = "/nonexistent/unigpu-test/libtorch_cuda.so";

/// A CPU-only libtorch (libtorch_cuda's load pointed at nothing, in a child
/// process): torch is skipped with that reason and the default context
/// falls back to the next backend, with or without a GPU.
#[test]
fn with_a_cpu_only_libtorch_the_default_context_falls_back() {
    if std::env::var(TORCH_CUDA_OVERRIDE).as_deref() == Ok(MISSING_TORCH_CUDA) {
        match Context::new(Backend::Torch, 0) {
            Err(Error::BackendUnavailable { backend, reason }) => {
                assert_eq!(backend, Backend::Torch);
                assert!(reason.contains("libtorch_cuda"), "{reason}");
            }
            other => panic!("expected BackendUnavailable, got {other:?}"),
        }
        let ctx = Context::default().unwrap();
        assert_ne!(ctx.backend(), Backend::Torch);
        let host = random_vec::<f32>(random_len(10_000));
        assert_same(&host, &ctx.upload(&host).unwrap().download().unwrap());
        println!("cpu-only-libtorch-facade-checks-ran");
        return;
    }
    unigpu_test_support::child::rerun(
        "with_a_cpu_only_libtorch_the_default_context_falls_back",
        &[(TORCH_CUDA_OVERRIDE, MISSING_TORCH_CUDA)],
    )
    .assert_ran(&["cpu-only-libtorch-facade-checks-ran"]);
}
