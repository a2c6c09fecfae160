//! User kernels: compile, typed launches, CPU implementations, caches.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use common::{SAXPY, assert_same, device_fma, random_len, random_vec, saxpy, sizes};
use unigpu::kernel::ParamKind;
use unigpu::{Backend, CompileOptions, DType, Error, Grid, Kernel};

on_every_backend!(saxpy_matches_the_host, |ctx| {
    let k = saxpy(ctx);
    assert_eq!(
        k.params().unwrap(),
        &[
            ParamKind::Scalar(DType::F32),
            ParamKind::Pointer {
                dtype: Some(DType::F32),
                writable: false
            },
            ParamKind::Pointer {
                dtype: Some(DType::F32),
                writable: true
            },
            ParamKind::Scalar(DType::U32),
        ]
    );
    for n in sizes() {
        let (hx, hy) = (random_vec::<f32>(n), random_vec::<f32>(n));
        let a = random_vec::<f32>(1)[0];
        let x = ctx.upload(&hx).unwrap();
        let mut y = ctx.upload(&hy).unwrap();
        ctx.launch(&k, Grid::for_elems(n), (a, &x, &mut y, n as u32))
            .unwrap();
        let want: Vec<f32> = hx
            .iter()
            .zip(&hy)
            .map(|(x, y)| device_fma(ctx, a, *x, *y))
            .collect();
        assert_same(&want, &y.download().unwrap());
    }
});

on_every_backend!(launches_on_a_stream_are_ordered_with_other_streams, |ctx| {
    let _parked = common::park_lock();
    let k = saxpy(ctx);
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let n = random_len(1 << 18);
    let hx = random_vec::<f32>(n);
    let mut x = ctx.zeros::<f32>(n).unwrap();
    let mut y = ctx.zeros::<f32>(n).unwrap();
    ctx.sync().unwrap();
    // Hold s1 back so the upload of x cannot happen before the launch on
    // s2 is enqueued: a launch that did not wait for it would read zeros.
    let (open, gate) = mpsc::channel::<()>();
    let opened = Arc::new(AtomicBool::new(false));
    let flag = opened.clone();
    s1.host_fn(move || {
        if gate.recv_timeout(Duration::from_secs(30)).is_ok() {
            flag.store(true, Ordering::SeqCst);
        }
    })
    .unwrap();
    // From pinned memory: a pageable upload may wait for the stream in
    // the driver (CUDA syncs before large pageable copies), which would
    // hold this thread behind the gate.
    let mut staged = ctx.pinned::<f32>(n).unwrap();
    staged.as_mut_slice().unwrap().copy_from_slice(&hx);
    s1.upload_pinned(&staged, &mut x).unwrap();
    s2.launch(&k, Grid::for_elems(n), (3.0f32, &x, &mut y, n as u32))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !s2.is_idle().unwrap(),
        "the launch ran while the upload it reads was held back"
    );
    open.send(()).unwrap();
    let want: Vec<f32> = hx.iter().map(|v| 3.0f32.mul_add(*v, 0.0)).collect();
    assert_same(&want, &s2.download(&y).unwrap());
    s1.sync().unwrap();
    assert!(
        opened.load(Ordering::SeqCst),
        "the gate timed out instead of being opened by the test"
    );
});

on_every_backend!(launches_with_arrays_of_other_contexts, |ctx| {
    // A CPU context as the other one: for the CPU run it is the same device
    // (shared memory, accepted); for the GPU runs it is refused and nothing
    // is written.
    let k = saxpy(ctx);
    let other = common::cpu_ctx();
    let n = random_len(1000);
    let (hx, hy) = (random_vec::<f32>(n), random_vec::<f32>(n));
    let x_theirs = other.upload(&hx).unwrap();
    let mut y_theirs = other.upload(&hy).unwrap();
    let x_ours = ctx.upload(&hx).unwrap();
    let mut y_ours = ctx.upload(&hy).unwrap();
    let grid = Grid::for_elems(n);
    if ctx.backend() == Backend::Cpu {
        ctx.launch(&k, grid, (2.0f32, &x_theirs, &mut y_ours, n as u32))
            .unwrap();
        let want: Vec<f32> = hx
            .iter()
            .zip(&hy)
            .map(|(x, y)| 2.0f32.mul_add(*x, *y))
            .collect();
        assert_same(&want, &y_ours.download().unwrap());
        return;
    }
    for (what, result) in [
        (
            "a foreign input",
            ctx.launch(&k, grid, (2.0f32, &x_theirs, &mut y_ours, n as u32)),
        ),
        (
            "a foreign output",
            ctx.launch(&k, grid, (2.0f32, &x_ours, &mut y_theirs, n as u32)),
        ),
        (
            "a foreign input on a stream",
            ctx.create_stream().unwrap().launch(
                &k,
                grid,
                (2.0f32, &x_theirs, &mut y_ours, n as u32),
            ),
        ),
    ] {
        assert!(
            matches!(result, Err(Error::ContextMismatch { what: "launch" })),
            "launch with {what}: {result:?}"
        );
    }
    assert_same(&hy, &y_ours.download().unwrap());
    assert_same(&hy, &y_theirs.download().unwrap());
});

on_every_backend!(arguments_are_checked_against_the_declaration, |ctx| {
    let k = saxpy(ctx);
    let n = 16;
    let x = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let mut y = ctx.zeros::<f32>(n).unwrap();
    let xd = ctx.upload(&random_vec::<f64>(n)).unwrap();
    let g = Grid::for_elems(n);
    let msg = |r: unigpu::Result<()>| match r {
        Err(Error::KernelArgs { kernel, message }) => {
            assert_eq!(kernel, "saxpy");
            message
        }
        other => panic!("expected KernelArgs, got {other:?}"),
    };
    assert!(msg(ctx.launch(&k, g, (1.0f32, &x, &mut y))).contains("4 parameters"));
    assert!(msg(ctx.launch(&k, g, (1.0f64, &x, &mut y, n as u32))).contains("parameter 0"));
    assert!(msg(ctx.launch(&k, g, (1.0f32, &xd, &mut y, n as u32))).contains("GpuArray<f64>"));
    assert!(msg(ctx.launch(&k, g, (1.0f32, &x, &mut y, n as i32))).contains("parameter 3"));
    assert!(msg(ctx.launch(&k, g, (&x, 1.0f32, &mut y, n as u32))).contains("parameter 0"));
    // `float* y` may be written: a shared borrow would be tracked as a read.
    let shared_y = msg(ctx.launch(&k, g, (1.0f32, &x, &y, n as u32)));
    assert!(
        shared_y.contains("parameter 2") && shared_y.contains("pass it as &mut"),
        "{shared_y}"
    );
    assert_same(&vec![0.0f32; n], &y.download().unwrap());
    // `const float* x` is only read: either borrow is fine.
    let mut x_mut = ctx.upload(&x.download().unwrap()).unwrap();
    ctx.launch(&k, g, (1.0f32, &mut x_mut, &mut y, n as u32))
        .unwrap();
    ctx.sync().unwrap();
    assert_same(&x.download().unwrap(), &y.download().unwrap());
});

on_every_backend!(a_missing_kernel_name_is_an_error, |ctx| {
    let m = ctx.compile(SAXPY).unwrap();
    assert_eq!(m.kernel_names(), vec!["saxpy"]);
    assert!(matches!(m.kernel("nope"), Err(Error::KernelArgs { .. })));
});

on_every_backend!(cpu_implementations_can_use_the_grid_and_any_type, |ctx| {
    const SRC: &str = r#"
extern "C" __global__ void iota(long long* out, long long start, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = start + (long long)i;
}"#;
    let k = ctx
        .compile(SRC)
        .unwrap()
        .kernel("iota")
        .unwrap()
        .with_cpu(|a| {
            let start: i64 = a.scalar(1)?;
            let n: u64 = a.scalar(2)?;
            assert!(a.grid().threads() >= n);
            let mut out = a.output::<i64>(0)?;
            for (i, v) in out.iter_mut().enumerate().take(n as usize) {
                *v = start + i as i64;
            }
            Ok(())
        })
        // The vulkan variant runs this (64-bit integers: shader-int64).
        .with_wgsl(
            r#"
@group(0) @binding(0) var<storage, read_write> out: array<i64>;
@group(0) @binding(1) var<uniform> start: i64;
@group(0) @binding(2) var<uniform> n: u64;
@compute @workgroup_size(128)
fn iota(@builtin(global_invocation_id) g: vec3<u32>) {
    if (u64(g.x) < n) { out[g.x] = start + i64(g.x); }
}"#,
        )
        .unwrap();
    let n = random_len(100_000);
    let start = random_vec::<i64>(1)[0] / 4;
    let mut out = ctx.zeros::<i64>(n).unwrap();
    ctx.launch(
        &k,
        Grid::for_elems_with_block(n, 128),
        (&mut out, start, n as u64),
    )
    .unwrap();
    let want: Vec<i64> = (0..n as i64).map(|i| start + i).collect();
    assert_same(&want, &out.download().unwrap());
});

#[test]
fn on_the_cpu_a_kernel_without_a_cpu_implementation_says_so() {
    let ctx = common::cpu_ctx();
    let k = ctx.compile(SAXPY).unwrap().kernel("saxpy").unwrap();
    assert!(!k.has_cpu_impl());
    let x = ctx.zeros::<f32>(4).unwrap();
    let mut y = ctx.zeros::<f32>(4).unwrap();
    match ctx.launch(&k, Grid::for_elems(4), (1.0f32, &x, &mut y, 4u32)) {
        Err(Error::Unsupported { backend, what }) => {
            assert_eq!(backend, Backend::Cpu);
            assert!(
                what.contains("saxpy") && what.contains("with_cpu"),
                "{what}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cpu_kernel_errors_and_panics_come_back_at_sync_with_the_kernel_name() {
    let ctx = common::cpu_ctx();
    let bad = Kernel::cpu_only("reads_wrong_type", None, |a| {
        let _guard = a.input::<f64>(0)?;
        Ok(())
    });
    let x = ctx.zeros::<f32>(4).unwrap();
    ctx.launch(&bad, Grid::for_elems(4), (&x,)).unwrap();
    let err = ctx.sync().unwrap_err();
    // The kernel is a field of the error, not text spliced into another.
    assert_eq!(err.kernel(), Some("reads_wrong_type"), "{err:?}");
    assert!(
        matches!(err.root(), Error::KernelArgs { message, .. } if message.contains("GpuArray<f32>")),
        "{err:?}"
    );
    let panics = Kernel::cpu_only("panics", None, |_| panic!("kernel panic"));
    ctx.launch(&panics, Grid::for_elems(1), ()).unwrap();
    let err = ctx.sync().unwrap_err();
    assert_eq!(err.kernel(), Some("panics"), "{err:?}");
    let source = std::error::Error::source(&err).expect("the panic is the source");
    assert!(
        matches!(err.root(), Error::StreamWork { message } if message.contains("kernel panic")),
        "{err:?}"
    );
    assert!(source.to_string().contains("kernel panic"), "{source}");
    ctx.sync().unwrap();
}

#[test]
fn grid_helpers() {
    assert_eq!(Grid::for_elems(0).grid, (1, 1, 1));
    assert_eq!(Grid::for_elems(1).grid, (1, 1, 1));
    assert_eq!(Grid::for_elems(256).grid, (1, 1, 1));
    assert_eq!(Grid::for_elems(257).grid, (2, 1, 1));
    let n = random_len(1 << 30);
    let g = Grid::for_elems(n);
    assert!(g.threads() >= n as u64 && g.threads() < n as u64 + 256);
    assert_eq!(Grid::for_elems_with_block(1000, 100).grid, (10, 1, 1));
    assert_eq!(
        Grid::new((2, 3, 4), (8, 8, 1))
            .with_shared_mem(4096)
            .shared_mem_bytes,
        4096
    );
}

on_every_cuda_backend!(
    compile_errors_carry_the_nvrtc_log_with_line_numbers,
    |ctx| {
        let src = "extern \"C\" __global__ void broken(float* x) {\n  x[0] = undefined_name;\n}\n";
        match ctx.compile(src) {
            Err(Error::Compile { log }) => {
                assert!(log.contains("undefined_name"), "{log}");
                assert!(log.contains("(2)"), "the log names line 2: {log}");
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
);

on_every_cuda_backend!(compile_options_defines_includes_and_arch, |ctx| {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scale.h"), "#define SCALE_BY 3.0f\n").unwrap();
    let src = r#"
#include "scale.h"
extern "C" __global__ void scaled(float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * SCALE_BY + OFFSET;
}"#;
    let info = ctx.device_info().unwrap();
    let (major, minor) = info.compute_capability.unwrap();
    let opts = CompileOptions::default()
        .include(dir.path())
        .define("OFFSET", Some("1.0f"))
        .arch(major, minor);
    let k = ctx
        .compile_with(src, &opts)
        .unwrap()
        .kernel("scaled")
        .unwrap();
    let n = random_len(10_000);
    let hy = random_vec::<f32>(n);
    let mut y = ctx.upload(&hy).unwrap();
    ctx.launch(&k, Grid::for_elems(n), (&mut y, n as u32))
        .unwrap();
    let want: Vec<f32> = hy.iter().map(|v| v.mul_add(3.0, 1.0)).collect();
    assert_same(&want, &y.download().unwrap());
    // Without the define the source does not compile.
    assert!(matches!(
        ctx.compile_with(src, &CompileOptions::default().include(dir.path())),
        Err(Error::Compile { .. })
    ));
});

on_every_cuda_backend!(dynamic_shared_memory_and_cpp_kernels, |ctx| {
    // Not extern "C": found through NVRTC's lowered (mangled) name.
    let src = r#"
__global__ void reverse_block(const int* in, int* out) {
    extern __shared__ int tile[];
    unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
    tile[t] = in[base + t];
    __syncthreads();
    out[base + t] = tile[blockDim.x - 1 - t];
}"#;
    let k = ctx.compile(src).unwrap().kernel("reverse_block").unwrap();
    let (blocks, block) = (random_len(64), 128usize);
    let hin = random_vec::<i32>(blocks * block);
    let input = ctx.upload(&hin).unwrap();
    let mut out = ctx.zeros::<i32>(hin.len()).unwrap();
    let grid =
        Grid::new((blocks as u32, 1, 1), (block as u32, 1, 1)).with_shared_mem((block * 4) as u32);
    ctx.launch(&k, grid, (&input, &mut out)).unwrap();
    let want: Vec<i32> = hin
        .chunks(block)
        .flat_map(|c| c.iter().rev().copied())
        .collect();
    assert_same(&want, &out.download().unwrap());
});

on_every_cuda_backend!(a_second_compile_is_a_cache_hit, |ctx| {
    let src = format!("{SAXPY}\n// unique {}\n", random_vec::<u64>(1)[0]);
    let first = ctx.compile(&src).unwrap();
    let second = ctx.compile(&src).unwrap();
    assert!(first.same_as(&second));
    let other = ctx
        .compile_with(&src, &CompileOptions::default().define("X", None))
        .unwrap();
    assert!(
        !other.same_as(&first),
        "different options are a different key"
    );
});

on_every_cuda_backend!(
    an_invalid_launch_configuration_is_an_error_naming_the_kernel,
    |ctx| {
        let k = saxpy(ctx);
        let x = ctx.zeros::<f32>(8).unwrap();
        let mut y = ctx.zeros::<f32>(8).unwrap();
        let too_big = Grid::new((1, 1, 1), (4096, 1, 1));
        let err = ctx
            .launch(&k, too_big, (1.0f32, &x, &mut y, 8u32))
            .unwrap_err();
        assert_eq!(err.kernel(), Some("saxpy"), "{err:?}");
        // Refused before the driver is called, naming the limit.
        assert!(
            matches!(err.root(), Error::KernelArgs { message, .. } if message.contains("limit of 1024")),
            "a refusal naming the limit: {err:?}"
        );
        // The context is still fine afterwards.
        ctx.launch(&k, Grid::for_elems(8), (1.0f32, &x, &mut y, 8u32))
            .unwrap();
        ctx.sync().unwrap();
    }
);

on_every_cuda_backend!(
    launches_over_the_limits_are_refused_naming_the_limit_and_the_stream_goes_on,
    |ctx| {
        let k = ctx.compile(SAXPY).unwrap().kernel("saxpy").unwrap();
        let n = random_len(4096);
        let hx = random_vec::<f32>(n);
        let hy = random_vec::<f32>(n);
        let x = ctx.upload(&hx).unwrap();
        let mut y = ctx.upload(&hy).unwrap();
        let over = [
            (Grid::new((1, 1, 1), (2048, 1, 1)), "block.x = 2048"),
            (Grid::new((1, 1, 1), (32, 64, 1)), "2048 threads"),
            (Grid::new((1, 1, 1), (1, 1, 65)), "block.z = 65"),
            (Grid::new((1, 70_000, 1), (32, 1, 1)), "grid.y = 70000"),
            (Grid::new((0, 1, 1), (32, 1, 1)), "at least 1"),
            (Grid::for_elems(n).with_shared_mem(1 << 20), "1048576 bytes"),
        ];
        for (grid, says) in over {
            let err = ctx
                .launch(&k, grid, (2.0f32, &x, &mut y, n as u32))
                .expect_err("a launch over the limits must be refused");
            assert_eq!(err.kernel(), Some("saxpy"), "{err}");
            let text = err.to_string();
            assert!(text.contains(says), "{text}");
        }
        // Nothing ran, and the stream still works.
        ctx.launch(&k, Grid::for_elems(n), (2.0f32, &x, &mut y, n as u32))
            .unwrap();
        let want: Vec<f32> = hx
            .iter()
            .zip(&hy)
            .map(|(x, y)| device_fma(ctx, 2.0, *x, *y))
            .collect();
        assert_same(&want, &y.download().unwrap());
    }
);

/// A CPU implementation that panics: the panic is the launch's error at the
/// next sync, and what is ordered after the launch (a download of the
/// array it was to write, a later launch writing it) still runs, instead
/// of waiting forever for work that never ends.
#[test]
fn a_panicking_cpu_implementation_fails_the_sync_and_holds_nothing_up() {
    const SRC: &str = r#"
extern "C" __global__ void fill(float* out, unsigned int n, float v) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}"#;
    let ctx = unigpu::Context::new(Backend::Cpu, 0).unwrap();
    let program = ctx.compile(SRC).unwrap();
    let boom = program
        .kernel("fill")
        .unwrap()
        .with_cpu(|_| panic!("boom in a CPU kernel"));
    let fill = program.kernel("fill").unwrap().with_cpu(|a| {
        let v: f32 = a.scalar(2)?;
        a.output::<f32>(0)?.iter_mut().for_each(|x| *x = v);
        Ok(())
    });
    let n = random_len(5000);
    let v = random_vec::<f32>(1)[0];
    let mut out = ctx.zeros::<f32>(n).unwrap();
    ctx.launch(&boom, Grid::for_elems(n), (&mut out, n as u32, v))
        .unwrap();
    // On another thread, so that a hang fails the test instead of stalling it.
    let (tx, rx) = mpsc::channel();
    let waiter = ctx.clone();
    std::thread::spawn(move || {
        let first = out.download();
        let again = waiter
            .launch(&fill, Grid::for_elems(n), (&mut out, n as u32, v))
            .and_then(|()| out.download());
        let _ = tx.send((first, again, waiter.sync()));
    });
    let (first, again, synced) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("work ordered after a panicking launch never ran");
    // The panic is reported once, by the first wait that sees it.
    let reported: Vec<String> = [
        first.as_ref().err(),
        again.as_ref().err(),
        synced.as_ref().err(),
    ]
    .into_iter()
    .flatten()
    .map(ToString::to_string)
    .collect();
    assert!(
        reported.iter().any(|e| e.contains("boom in a CPU kernel")),
        "the panic was not reported: {reported:?}"
    );
    if let Ok(after) = again {
        assert!(
            after.iter().all(|&x| x.to_bits() == v.to_bits()),
            "the later fill"
        );
    }
}
