//! GpuArray: allocation, upload, download and device copies, for every
//! element type, on every backend.

mod common;

use common::{Random, assert_same, random_len, random_vec, sizes};
use unigpu::{Context, Error, GpuArray};

fn upload_download_roundtrip<T: Random>(ctx: &Context) {
    for n in sizes() {
        let host = random_vec::<T>(n);
        let a = ctx.alloc_upload(&host).unwrap();
        assert_eq!(a.len(), n);
        assert_eq!(a.is_empty(), n == 0);
        assert_eq!(a.size_bytes(), n * std::mem::size_of::<T>());
        assert_eq!(a.dtype(), T::DTYPE);
        assert_same(&host, &a.download().unwrap());
        let b = ctx.upload(&host).unwrap();
        let mut back = vec![T::default(); n];
        b.download_into(&mut back).unwrap();
        assert_same(&host, &back);
    }
}
on_every_backend!(upload_download_every_type, |ctx| for_every_type!(
    upload_download_roundtrip,
    ctx
));

fn zeros_are_zero<T: Random>(ctx: &Context) {
    for n in sizes() {
        let z = ctx.alloc_zeros::<T>(n).unwrap();
        assert_same(&vec![T::default(); n], &z.download().unwrap());
        let z = ctx.zeros::<T>(n).unwrap();
        assert_same(&vec![T::default(); n], &z.download().unwrap());
    }
}
on_every_backend!(alloc_zeros_every_type, |ctx| for_every_type!(
    zeros_are_zero,
    ctx
));

fn alloc_then_overwrite<T: Random>(ctx: &Context) {
    for n in sizes() {
        let mut a: GpuArray<T> = ctx.alloc(n).unwrap();
        assert_eq!(a.len(), n);
        let host = random_vec::<T>(n);
        a.upload_from(&host).unwrap();
        assert_same(&host, &a.download().unwrap());
    }
}
on_every_backend!(alloc_and_upload_from_every_type, |ctx| for_every_type!(
    alloc_then_overwrite,
    ctx
));

fn copy_between_arrays<T: Random>(ctx: &Context) {
    for n in sizes() {
        let host = random_vec::<T>(n);
        let a = ctx.upload(&host).unwrap();
        let mut b = ctx.upload(&random_vec::<T>(n)).unwrap();
        a.copy_to(&mut b).unwrap();
        assert_same(&host, &b.download().unwrap());
        let c = b.try_clone().unwrap();
        assert_same(&host, &c.download().unwrap());
    }
}
on_every_backend!(copy_to_and_try_clone_every_type, |ctx| for_every_type!(
    copy_between_arrays,
    ctx
));

on_every_backend!(copy_between_different_lengths_is_an_error, |ctx| {
    let n = random_len(1000);
    let a = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let before = random_vec::<f32>(n + 1);
    let mut b = ctx.upload(&before).unwrap();
    let err = a.copy_to(&mut b).unwrap_err();
    assert_eq!(
        err,
        Error::SizeMismatch {
            what: "Stream::copy",
            expected: n + 1,
            actual: n
        }
    );
    // Nothing was written.
    assert_same(&before, &b.download().unwrap());
});

on_every_backend!(host_buffers_of_the_wrong_length_are_errors, |ctx| {
    let n = random_len(1000);
    let host = random_vec::<f64>(n);
    let mut a = ctx.upload(&host).unwrap();
    let mut short = vec![0.0f64; n - 1];
    assert!(matches!(
        a.download_into(&mut short),
        Err(Error::SizeMismatch { .. })
    ));
    assert!(matches!(
        a.upload_from(&random_vec::<f64>(n + 3)),
        Err(Error::SizeMismatch { .. })
    ));
    assert_same(&host, &a.download().unwrap());
});

on_every_backend!(arrays_outlive_dropped_contexts, |ctx| {
    // A context of its own, dropped (with every clone and stream) while
    // its arrays live on: the arrays keep the device, and every operation
    // on them still works.
    let host = random_vec::<u32>(random_len(10_000));
    let n = host.len();
    let (mut array, zeros) = {
        let own = Context::new(ctx.backend(), ctx.device_id()).unwrap();
        let s = own.create_stream().unwrap();
        let mut a = own.zeros::<u32>(n).unwrap();
        s.upload(&host, &mut a).unwrap();
        let z = own.zeros::<u32>(n).unwrap();
        (a, z)
    };
    assert_same(&host, &array.download().unwrap());
    assert_eq!(array.context().backend(), ctx.backend());
    assert_eq!(array.context().device_id(), ctx.device_id());
    let copy = array.try_clone().unwrap();
    assert_same(&vec![0; n], &zeros.download().unwrap());
    zeros.copy_to(&mut array).unwrap();
    assert_same(&vec![0; n], &array.download().unwrap());
    assert_same(&host, &copy.download().unwrap());
    let fresh = random_vec::<u32>(n);
    array.upload_from(&fresh).unwrap();
    assert_same(&fresh, &array.download().unwrap());
});

on_every_backend!(to_context_copies_to_the_cpu_and_back, |ctx| {
    // The CPU run moves between two CPU contexts; the GPU runs move
    // CUDA (or torch) -> CPU -> CUDA (or torch), through host memory.
    let cpu = common::cpu_ctx();
    for n in sizes() {
        let host = random_vec::<f64>(n);
        let mut a = ctx.upload(&host).unwrap();
        let on_cpu = a.to_context(&cpu).unwrap();
        assert_eq!(on_cpu.context().backend(), unigpu::Backend::Cpu);
        assert_eq!(on_cpu.len(), n);
        assert_same(&host, &on_cpu.download().unwrap());
        let back = on_cpu.to_context(ctx).unwrap();
        assert_eq!(back.context().backend(), ctx.backend());
        assert_eq!(back.context().device_id(), ctx.device_id());
        assert_same(&host, &back.download().unwrap());
        // Each is a copy: overwriting the source changes none of them.
        a.upload_from(&vec![-1.0; n]).unwrap();
        assert_same(&host, &on_cpu.download().unwrap());
        assert_same(&host, &back.download().unwrap());
        let same = a.to_context(ctx).unwrap();
        assert_same(&vec![-1.0; n], &same.download().unwrap());
    }
});

on_every_backend!(to_context_sees_pending_writes_on_a_stream, |ctx| {
    // The move must wait for a write still queued on another stream.
    let _parked = common::park_lock();
    let s = ctx.create_stream().unwrap();
    let n = random_len(1 << 16);
    let host = random_vec::<i32>(n);
    let mut a = ctx.zeros::<i32>(n).unwrap();
    ctx.sync().unwrap();
    let (open, gate) = std::sync::mpsc::channel::<()>();
    s.host_fn(move || {
        let _ = gate.recv_timeout(std::time::Duration::from_millis(300));
    })
    .unwrap();
    s.upload(&host, &mut a).unwrap();
    let moved = a.to_context(&common::cpu_ctx()).unwrap();
    drop(open);
    assert_same(&host, &moved.download().unwrap());
});
