//! Unified (managed) memory arrays on every backend: random data written
//! through the host view, used by kernels and ops, read back through the
//! view, every element checked; views wait for pending work; prefetch;
//! requests over the free memory refused with the free bytes; views and
//! prefetch of ordinary arrays refused; torch refuses unified memory.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{assert_same, random_len, random_vec, saxpy, sizes};
use unigpu::{Backend, Context, Element, Error, GpuArray, Grid, Location};

/// A unified array, or `None` on torch and vulkan after checking that
/// they refuse with the reason (vulkan: wgpu has no memory that host and
/// shaders address at once).
fn unified<T: Element>(ctx: &Context, n: usize) -> Option<GpuArray<T>> {
    match ctx.alloc_unified::<T>(n) {
        Err(Error::Unsupported {
            backend: Backend::Torch,
            what,
        }) if ctx.backend() == Backend::Torch => {
            assert!(
                what.contains("alloc_unified") && what.contains("cuda"),
                "the reason names the call and the way out: {what}"
            );
            None
        }
        Err(Error::Unsupported {
            backend: Backend::Vulkan,
            what,
        }) if ctx.backend() == Backend::Vulkan => {
            assert!(
                what.contains("alloc_unified") && what.contains("wgpu"),
                "the reason names the call and why: {what}"
            );
            None
        }
        other => {
            let a = other.unwrap();
            assert_eq!(a.len(), n);
            assert!(a.is_unified());
            Some(a)
        }
    }
}

#[track_caller]
fn assert_unsupported<T: std::fmt::Debug>(what: &str, r: unigpu::Result<T>) {
    match r {
        Err(Error::Unsupported { what: why, .. }) => {
            assert!(why.contains("alloc_unified"), "{what}: {why}")
        }
        other => panic!("{what} of an ordinary array: {other:?}"),
    }
}

on_every_backend!(
    host_writes_reach_kernels_and_kernel_writes_reach_the_host,
    |ctx| {
        let k = saxpy(ctx);
        for n in sizes() {
            let Some(mut x) = unified::<f32>(ctx, n) else {
                return;
            };
            let mut y = unified::<f32>(ctx, n).unwrap();
            assert!(x.host_view().unwrap().iter().all(|&v| v == 0.0), "zeroed");
            let (hx, hy) = (random_vec::<f32>(n), random_vec::<f32>(n));
            x.host_view_mut().unwrap().copy_from_slice(&hx);
            y.host_view_mut().unwrap().copy_from_slice(&hy);
            let a = random_vec::<f32>(1)[0];
            let s = ctx.create_stream().unwrap();
            s.prefetch(&x, Location::Device).unwrap();
            s.prefetch(&y, Location::Device).unwrap();
            s.launch(&k, Grid::for_elems(n), (a, &x, &mut y, n as u32))
                .unwrap();
            s.prefetch(&y, Location::Host).unwrap();
            // No sync: the view waits for the launch that writes `y`.
            let want: Vec<f32> = hx.iter().zip(&hy).map(|(x, y)| a.mul_add(*x, *y)).collect();
            assert_same(&want, &y.host_view().unwrap());
            // The input is unchanged, and an ordinary download agrees.
            assert_same(&hx, &x.host_view().unwrap());
            assert_same(&want, &y.download().unwrap());
        }
    }
);

on_every_backend!(ops_read_and_write_unified_arrays, |ctx| {
    fn check<T: common::Random + unigpu::Float + std::ops::Add<Output = T>>(ctx: &Context) {
        let n = random_len(100_000);
        let Some(mut a) = unified::<T>(ctx, n) else {
            return;
        };
        let (ha, hb) = (random_vec::<T>(n), random_vec::<T>(n));
        a.host_view_mut().unwrap().copy_from_slice(&ha);
        // One unified operand, one ordinary one, a unified result.
        let b = ctx.upload(&hb).unwrap();
        let mut c = unified::<T>(ctx, n).unwrap();
        ctx.ops().add(&a, &b, &mut c).unwrap();
        ctx.default_stream().prefetch(&c, Location::Host).unwrap();
        let want: Vec<T> = ha.iter().zip(&hb).map(|(x, y)| *x + *y).collect();
        assert_same(&want, &c.host_view().unwrap());
        // A copy of a unified array is an ordinary one.
        let copy = c.try_clone().unwrap();
        assert!(!copy.is_unified());
        assert_same(&want, &copy.download().unwrap());
        // Copies into a unified array land where the host sees them.
        b.copy_to(&mut a).unwrap();
        assert_same(&hb, &a.host_view().unwrap());
    }
    check::<f32>(ctx);
    check::<f64>(ctx);
});

on_every_backend!(host_views_wait_for_pending_work, |ctx| {
    let _parked = common::park_lock();
    let k = saxpy(ctx);
    let n = random_len(1 << 18);
    let Some(mut x) = unified::<f32>(ctx, n) else {
        return;
    };
    let mut y = unified::<f32>(ctx, n).unwrap();
    let hx = random_vec::<f32>(n);
    x.host_view_mut().unwrap().copy_from_slice(&hx);
    // Hold the stream back behind a gate the test opens later: the view
    // must wait for the launch, not read zeros.
    let s = ctx.create_stream().unwrap();
    let (open, gate) = mpsc::channel::<()>();
    s.host_fn(move || {
        let _ = gate.recv_timeout(Duration::from_secs(30));
    })
    .unwrap();
    s.launch(&k, Grid::for_elems(n), (2.0f32, &x, &mut y, n as u32))
        .unwrap();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        open.send(()).unwrap();
    });
    let want: Vec<f32> = hx.iter().map(|v| 2.0f32.mul_add(*v, 0.0)).collect();
    assert_same(&want, &y.host_view().unwrap());
    opener.join().unwrap();
    // A writable view waits for pending reads: the launch reading `x` sees
    // the old contents, whatever the host writes after.
    let mut z = ctx.zeros::<f32>(n).unwrap();
    s.launch(&k, Grid::for_elems(n), (1.0f32, &x, &mut z, n as u32))
        .unwrap();
    x.host_view_mut().unwrap().fill(-1.0);
    assert_same(&hx, &z.download().unwrap());
    assert!(x.host_view().unwrap().iter().all(|&v| v == -1.0));
});

on_every_backend!(
    requests_over_the_free_memory_are_refused_with_the_free_bytes,
    |ctx| {
        let total = ctx.memory_info().unwrap().total;
        let n = total / 4 + 1024;
        match ctx.alloc_unified::<f32>(n) {
            Err(Error::OutOfMemory { requested, free }) => {
                assert!(requested > total, "asked {requested} of {total}");
                assert!(free <= total, "free {free} of {total}");
                let text = ctx.alloc_unified::<f32>(n).unwrap_err().to_string();
                assert!(
                    text.contains(&requested.to_string()) && text.contains("free"),
                    "{text}"
                );
            }
            Err(Error::Unsupported { .. })
                if matches!(ctx.backend(), Backend::Torch | Backend::Vulkan) => {}
            other => panic!("{n} f32s on a device of {total} bytes: {other:?}"),
        }
        // An element count whose byte size overflows is refused, not a panic.
        if !matches!(ctx.backend(), Backend::Torch | Backend::Vulkan) {
            assert!(matches!(
                ctx.alloc_unified::<f64>(usize::MAX / 2),
                Err(Error::OutOfMemory { .. })
            ));
        }
    }
);

on_every_backend!(
    views_and_prefetch_of_ordinary_arrays_are_unsupported,
    |ctx| {
        let mut a = ctx.upload(&random_vec::<f32>(100)).unwrap();
        assert!(!a.is_unified());
        assert_unsupported("host_view", a.host_view());
        assert_unsupported("host_view_mut", a.host_view_mut());
        assert_unsupported(
            "prefetch",
            ctx.default_stream().prefetch(&a, Location::Host),
        );
        if ctx.backend() != Backend::Cpu {
            // A CPU context's unified array on a GPU stream is refused.
            let cpu = common::cpu_ctx();
            let foreign = cpu.alloc_unified::<f32>(10).unwrap();
            match ctx.default_stream().prefetch(&foreign, Location::Device) {
                Err(Error::ContextMismatch { .. }) => {}
                other => panic!(
                    "a CPU array prefetched on a {} stream: {other:?}",
                    ctx.backend()
                ),
            }
        }
    }
);

#[test]
fn the_cpu_backend_makes_empty_unified_arrays_and_prefetch_is_a_no_op() {
    let ctx = common::cpu_ctx();
    let mut a = ctx.alloc_unified::<u8>(0).unwrap();
    assert!(a.is_unified() && a.host_view().unwrap().is_empty());
    assert!(a.host_view_mut().unwrap().is_empty());
    let b = ctx.alloc_unified::<i64>(3).unwrap();
    ctx.default_stream().prefetch(&b, Location::Device).unwrap();
    ctx.default_stream().prefetch(&b, Location::Host).unwrap();
    assert_eq!(&*b.host_view().unwrap(), &[0, 0, 0]);
}
