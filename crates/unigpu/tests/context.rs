//! Context: identity, sharing across threads, invalid devices, and out of
//! memory with recovery, on every backend.

mod common;

use common::{assert_same, random_len, random_vec};
use unigpu::{Backend, Context, DeviceKind, Error, Event, GpuArray, Outcome, Stream};

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Context>();
    send_sync::<GpuArray<f32>>();
    send_sync::<GpuArray<unigpu::bf16>>();
    send_sync::<Stream>();
    send_sync::<Event>();
}

/// Issue 25: wgpu's handles inside a context made `Context` lose
/// `RefUnwindSafe`, and `catch_unwind(|| ctx.alloc(..))` stopped compiling.
/// A compile-time check of the handles that hold no user closure (a
/// `Kernel` with a CPU function and a `Graph` hold the caller's closures,
/// unwind safe or not), and the call itself.
#[test]
fn handles_are_unwind_safe() {
    fn unwind_safe<T: std::panic::RefUnwindSafe + std::panic::UnwindSafe>() {}
    unwind_safe::<Context>();
    unwind_safe::<GpuArray<f32>>();
    unwind_safe::<GpuArray<unigpu::f16>>();
    unwind_safe::<unigpu::AnyArray>();
    unwind_safe::<Stream>();
    unwind_safe::<Event>();
    unwind_safe::<unigpu::Module>();
    unwind_safe::<unigpu::PinnedBuffer<f32>>();
    unwind_safe::<unigpu::Error>();
}

/// `unigpu::hardware_here` (what `unigpu soak --backend all` requires to
/// open) agrees with the CUDA probe and with the Vulkan adapters listed:
/// hardware for cuda (and torch in a torch build) exactly where the driver
/// counts a device, for vulkan exactly where an adapter that is not a
/// software one exists, and never for cpu.
#[test]
fn hardware_here_follows_the_probe_and_the_adapters() {
    assert_eq!(unigpu::hardware_here(Backend::Cpu), None);
    let cuda = common::cuda_usable();
    assert_eq!(unigpu::hardware_here(Backend::Cuda).is_some(), cuda);
    assert_eq!(
        unigpu::hardware_here(Backend::Torch).is_some(),
        cuda && cfg!(feature = "torch")
    );
    let hardware_adapter = unigpu::list_devices(Backend::Vulkan).is_ok_and(|adapters| {
        adapters.iter().any(|a| {
            a.details
                .iter()
                .any(|(k, v)| k == "type" && v != "software (CPU)")
        })
    });
    assert_eq!(
        unigpu::hardware_here(Backend::Vulkan).is_some(),
        hardware_adapter,
        "{:?}",
        unigpu::hardware_here(Backend::Vulkan)
    );
}

on_every_backend!(alloc_inside_catch_unwind, |ctx| {
    let host = random_vec::<f32>(random_len(5000));
    let a = std::panic::catch_unwind(|| ctx.upload(&host))
        .expect("no panic")
        .unwrap();
    assert_same(&host, &a.download().unwrap());
    let n = std::panic::catch_unwind(|| ctx.alloc::<f32>(host.len()).unwrap().len()).unwrap();
    assert_eq!(n, host.len());
});

on_every_backend!(identity, |ctx| {
    assert_eq!(ctx.backend_name(), ctx.backend().name());
    assert_eq!(ctx.device_id(), 0);
    let info = ctx.device_info().unwrap();
    assert_eq!(info.backend, ctx.backend());
    assert_eq!(info.ordinal, 0);
    assert!(!info.name.is_empty());
    assert_eq!(ctx.device_name().unwrap(), info.name);
    // A CUDA capability for CUDA devices (cuda, torch); none for the CPU
    // or a Vulkan adapter, whose facts are in `details` instead.
    assert_eq!(
        info.compute_capability.is_some(),
        ctx.backend().device_kind() == DeviceKind::Cuda
    );
    assert_eq!(info.details.is_empty(), ctx.backend() != Backend::Vulkan);
    let mem = ctx.memory_info().unwrap();
    assert!(mem.total > 0 && mem.free <= mem.total, "{mem:?}");
    let chosen: Vec<_> = ctx
        .fallback_chain()
        .iter()
        .filter(|a| a.outcome == Outcome::Chosen)
        .map(|a| a.backend)
        .collect();
    assert_eq!(chosen, vec![ctx.backend()]);
});

on_every_backend!(one_context_from_many_threads, |ctx| {
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let ctx = ctx.clone();
            std::thread::spawn(move || {
                for _ in 0..10 {
                    let host = random_vec::<f64>(random_len(5000));
                    let a = ctx.upload(&host).unwrap();
                    let s = ctx.create_stream().unwrap();
                    let mut b = ctx.alloc::<f64>(host.len()).unwrap();
                    s.copy(&a, &mut b).unwrap();
                    assert_same(&host, &s.download(&b).unwrap());
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker thread failed");
    }
    ctx.sync().unwrap();
});

on_every_backend!(out_of_memory_is_an_error_and_the_context_survives, |ctx| {
    let total = ctx.memory_info().unwrap().total;
    let asked = total + (1 << 30);
    let err = ctx.alloc::<u8>(asked).unwrap_err();
    match err {
        Error::OutOfMemory { requested, free } => {
            assert_eq!(requested, asked);
            assert!(free <= total, "free {free} > total {total}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    // An element count whose byte size overflows is refused the same way.
    assert!(matches!(
        ctx.alloc_zeros::<f64>(usize::MAX / 4),
        Err(Error::OutOfMemory { .. })
    ));
    // Still usable afterwards.
    ctx.sync().unwrap();
    let host = random_vec::<f32>(random_len(100_000));
    let a = ctx.upload(&host).unwrap();
    assert_same(&host, &a.download().unwrap());
});

#[test]
fn cpu_device_ids_other_than_zero_are_invalid() {
    let err = Context::new(Backend::Cpu, 1).unwrap_err();
    assert_eq!(
        err,
        Error::InvalidDevice {
            backend: Backend::Cpu,
            asked: 1,
            available: 1
        }
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_device_ids_past_the_end_are_invalid() {
    let available = unigpu::list_devices(Backend::Cuda)
        .expect("this test needs a CUDA GPU")
        .len();
    assert!(available > 0, "this test needs a CUDA GPU");
    let err = Context::new(Backend::Cuda, available + 3).unwrap_err();
    assert_eq!(
        err,
        Error::InvalidDevice {
            backend: Backend::Cuda,
            asked: available + 3,
            available
        }
    );
}

#[cfg(not(feature = "torch"))]
#[test]
fn torch_without_the_feature_is_unavailable_with_a_reason() {
    match Context::new(Backend::Torch, 0) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, Backend::Torch);
            assert!(reason.contains("torch"), "{reason}");
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_the_feature_is_unavailable_with_a_reason_and_the_chain_goes_on() {
    match Context::new(Backend::Cuda, 0) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, Backend::Cuda);
            assert!(reason.contains("`cuda` feature"), "{reason}");
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
    let ctx = Context::from_config(unigpu::Config::default()).unwrap();
    let cuda = ctx
        .fallback_chain()
        .iter()
        .find(|a| a.backend == Backend::Cuda)
        .expect("cuda is in the chain")
        .clone();
    assert!(
        format!("{:?}", cuda.outcome).contains("`cuda` feature"),
        "{cuda:?}"
    );
}

/// The backend `Context::default()` must pick when CUDA works.
const GPU_DEFAULT: Backend = if cfg!(feature = "torch") {
    Backend::Torch
} else {
    Backend::Cuda
};

#[test]
fn the_default_context_records_why_each_backend_was_skipped() {
    let ctx = Context::from_config(unigpu::Config::default()).unwrap();
    let chain = ctx.fallback_chain();
    assert_eq!(
        chain.iter().map(|a| a.backend).collect::<Vec<_>>(),
        Backend::ALL.to_vec()
    );
    let gpu = common::cuda_usable();
    // A Vulkan adapter that is not software (an AMD or Intel GPU, or an
    // NVIDIA one without CUDA) comes before the CPU.
    let vulkan_gpu = unigpu::list_devices(Backend::Vulkan).is_ok_and(|list| {
        list.iter().any(|d| {
            d.details
                .iter()
                .any(|(k, v)| k == "type" && !v.starts_with("software"))
        })
    });
    let expected = if gpu {
        GPU_DEFAULT
    } else if vulkan_gpu {
        Backend::Vulkan
    } else {
        Backend::Cpu
    };
    assert_eq!(ctx.backend(), expected, "chain: {chain:?}");
    for attempt in chain {
        match (&attempt.outcome, attempt.backend.cmp(&expected)) {
            (Outcome::Skipped(reason), std::cmp::Ordering::Less) => {
                assert!(!reason.is_empty());
                if attempt.backend == Backend::Vulkan {
                    // Says which: no loader, no adapter, only a software
                    // adapter, or not built in.
                    assert!(
                        [
                            "no Vulkan loader",
                            "no adapter",
                            "software adapter",
                            "`vulkan` feature"
                        ]
                        .iter()
                        .any(|why| reason.contains(why)),
                        "{reason}"
                    );
                }
                if attempt.backend == Backend::Torch {
                    // Either the feature is off, or torch says why it has no CUDA.
                    assert!(
                        reason.contains("torch") || reason.contains("CUDA"),
                        "{reason}"
                    );
                }
            }
            (Outcome::Chosen, std::cmp::Ordering::Equal) => {}
            (Outcome::NotTried, std::cmp::Ordering::Greater) => {}
            (outcome, _) => panic!(
                "{} had outcome {outcome:?}; chain {chain:?}",
                attempt.backend
            ),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_default_context_picks_the_first_gpu_backend_when_a_gpu_is_present() {
    // A GPU first, so that without one this fails for that reason.
    common::cuda_ctx();
    let ctx = Context::from_config(unigpu::Config::default()).unwrap();
    assert_eq!(
        ctx.backend(),
        GPU_DEFAULT,
        "chain: {:?}",
        ctx.fallback_chain()
    );
}
