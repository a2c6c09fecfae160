//! DLPack inside unigpu: an exported array imported again shares its
//! memory (writes through one are seen through the other), the export
//! keeps the memory alive after the array is dropped, and the tensor's
//! descriptor says what the array is. Every element type, every backend.

mod common;

use common::{Gate, Random, WATCH, assert_same, random_len, random_vec, sizes};
use unigpu::{AnyArray, Backend, Context, DlpackSync, Error, GpuArray};

/// Vulkan arrays cannot be shared (wgpu gives safe code no address or
/// memory handle): exports and imports are refused, saying so.
fn refused_on_vulkan<T: Random>(ctx: &Context) -> bool {
    if ctx.backend() != Backend::Vulkan {
        return false;
    }
    let mut a = ctx.upload(&random_vec::<T>(16)).unwrap();
    let why = |e: Error| match e {
        Error::Dlpack { message } => assert!(message.contains("vulkan"), "{message}"),
        other => panic!("expected a DLPack error, got {other:?}"),
    };
    why(a.to_dlpack(DlpackSync::Host).unwrap_err());
    let mut on_cpu = common::cpu_ctx().upload(&random_vec::<T>(16)).unwrap();
    let tensor = on_cpu.to_dlpack(DlpackSync::Host).unwrap();
    why(GpuArray::<T>::from_dlpack(ctx, tensor).unwrap_err());
    // The array is untouched and the refused tensor was deleted.
    assert_eq!(a.download().unwrap().len(), 16);
    assert_eq!(on_cpu.download().unwrap().len(), 16);
    true
}

fn export_import_shares<T: Random>(ctx: &Context) {
    if refused_on_vulkan::<T>(ctx) {
        return;
    }
    for n in sizes() {
        let host = random_vec::<T>(n);
        let mut a = ctx.upload(&host).unwrap();
        let tensor = a.to_dlpack(DlpackSync::Host).unwrap();
        let view = tensor.view().unwrap();
        assert_eq!(view.len, n);
        assert_eq!(
            (view.device.device_type, view.device.device_id),
            ctx.dlpack_device()
        );
        assert!(!tensor.is_read_only());
        assert_eq!(tensor.version().major, 1);

        let mut b = GpuArray::<T>::from_dlpack(ctx, tensor).unwrap();
        assert_same(&host, &b.download().unwrap());
        // Same memory: a write through `b` is seen through `a`.
        let other = random_vec::<T>(n);
        b.upload_from(&other).unwrap();
        ctx.sync().unwrap();
        assert_same(&other, &a.download().unwrap());
        // Dropping the exporter first leaves the importer's memory valid.
        drop(a);
        let third = random_vec::<T>(n);
        b.upload_from(&third).unwrap();
        assert_same(&third, &b.download().unwrap());
    }
}
on_every_backend!(export_import_every_type, |ctx| for_every_type!(
    export_import_shares,
    ctx
));

fn any_array_roundtrip<T: Random>(ctx: &Context) {
    if refused_on_vulkan::<T>(ctx) {
        return;
    }
    let host = random_vec::<T>(1000);
    let mut a = AnyArray::from(ctx.upload(&host).unwrap());
    let tensor = a.to_dlpack(DlpackSync::Host).unwrap();
    drop(a);
    let b = ctx.from_dlpack(tensor).unwrap();
    assert_eq!(b.dtype(), T::DTYPE);
    assert_same(&host, &b.typed::<T>("test").unwrap().download().unwrap());
}
on_every_backend!(any_array_roundtrip_every_type, |ctx| for_every_type!(
    any_array_roundtrip,
    ctx
));

// An export moved on one element and cut by one (a producer's slice of
// it) comes back as that slice, not as the whole array it was made from:
// the import recognises its own export only while it spans the array.
on_every_backend!(a_slice_of_an_own_export_is_that_slice, |ctx| {
    if refused_on_vulkan::<f32>(ctx) {
        return;
    }
    let n = 2 + random_len(5000);
    let host = random_vec::<f32>(n);
    let mut a = ctx.upload(&host).unwrap();
    let b = common::offset_by_one(ctx, &mut a);
    assert_eq!(b.len(), n - 1);
    assert_same(&host[1..], &b.download().unwrap());
});

on_every_backend!(wrong_dtype_is_an_error, |ctx| {
    if refused_on_vulkan::<f32>(ctx) {
        return;
    }
    let mut a = ctx.upload(&random_vec::<f32>(64)).unwrap();
    let tensor = a.to_dlpack(DlpackSync::Host).unwrap();
    let err = GpuArray::<i32>::from_dlpack(ctx, tensor).unwrap_err();
    assert!(
        matches!(&err, Error::Dlpack { message } if message.contains("float32") && message.contains("int32")),
        "{err}"
    );
    // The rejected tensor was deleted, not leaked: the array still works.
    assert_eq!(a.download().unwrap().len(), 64);
});

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_rejects_host_tensors() {
    common::leak_checked(
        "cuda_rejects_host_tensors",
        unigpu::Backend::Cuda,
        common::cuda_ctx,
        |cuda| {
            let cpu = common::cpu_ctx();
            let mut a = cpu.upload(&random_vec::<f32>(8)).unwrap();
            let err = cuda
                .from_dlpack(a.to_dlpack(DlpackSync::Host).unwrap())
                .unwrap_err();
            assert!(matches!(err, Error::Dlpack { .. }), "{err}");
            let mut g = cuda.upload(&random_vec::<f32>(8)).unwrap();
            let err = cpu
                .from_dlpack(g.to_dlpack(DlpackSync::Host).unwrap())
                .unwrap_err();
            assert!(matches!(err, Error::Dlpack { .. }), "{err}");
        },
    );
}

/// Writes `fresh` into `writer` on a gated stream, then reads `reader`
/// (the same memory through the other array) on another stream and on the
/// default one: both reads must wait for the held-back write. A read that
/// does not wait copies the old contents and finishes at once.
fn gated_write_then_read(
    ctx: &Context,
    writer: &mut GpuArray<u32>,
    reader: &GpuArray<u32>,
    fresh: &[u32],
) {
    let n = fresh.len();
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let mut copy = ctx.zeros::<u32>(n).unwrap();
    let gate = Gate::close(&s1);
    s1.upload(fresh, writer).unwrap();
    s2.copy(reader, &mut copy).unwrap();
    std::thread::sleep(WATCH);
    assert!(
        !s2.is_idle().unwrap(),
        "the read through the other array finished while the write it must see was held back"
    );
    // The default stream's download blocks until the gate opens, so open
    // it from another thread once the download has had time to run early.
    let opener = std::thread::spawn(move || {
        std::thread::sleep(WATCH);
        gate.open();
        gate
    });
    assert_same(fresh, &reader.download().unwrap());
    assert_same(fresh, &s2.download(&copy).unwrap());
    s1.sync().unwrap();
    opener.join().unwrap().assert_opened_by_the_test();
}

// An array exported and imported again in the same process is one array
// to the ordering rules: a write through either, then a read through the
// other on any stream, sees the write (docs/dlpack.md).
on_every_backend!(reimport_is_ordered_with_the_original, |ctx| {
    if refused_on_vulkan::<u32>(ctx) {
        return;
    }
    let _parked = common::park_lock();
    let n = random_len(1 << 18);
    let mut a = ctx.upload(&random_vec::<u32>(n)).unwrap();
    let mut b = GpuArray::<u32>::from_dlpack(ctx, a.to_dlpack(DlpackSync::Host).unwrap()).unwrap();
    // Through the re-import, read through the original ...
    gated_write_then_read(ctx, &mut b, &a, &random_vec::<u32>(n));
    // ... and the other way round.
    gated_write_then_read(ctx, &mut a, &b, &random_vec::<u32>(n));
    // Still so once the original is gone (its export keeps the state).
    let mut c = GpuArray::<u32>::from_dlpack(ctx, b.to_dlpack(DlpackSync::Host).unwrap()).unwrap();
    drop(a);
    gated_write_then_read(ctx, &mut c, &b, &random_vec::<u32>(n));
});

// `DlpackSync::Host` with a write still pending on another stream: the
// export returns only once the write is done, so a consumer that orders
// nothing itself (here an import through a foreign-looking tensor, read
// on a stream of its own) sees the finished data.
on_every_backend!(host_export_waits_for_pending_writes, |ctx| {
    if refused_on_vulkan::<u32>(ctx) {
        return;
    }
    let _parked = common::park_lock();
    let n = random_len(1 << 18);
    let fresh = random_vec::<u32>(n);
    let mut a = ctx.upload(&random_vec::<u32>(n)).unwrap();
    let s1 = ctx.create_stream().unwrap();
    let gate = Gate::close(&s1);
    s1.upload(&fresh, &mut a).unwrap();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(WATCH);
        gate.open();
        gate
    });
    let tensor = a.to_dlpack(DlpackSync::Host).unwrap();
    // `flattened` wraps the tensor as another library's would be: the
    // import does not recognise our export, so it tracks nothing of `a`'s
    // pending work and relies on the export's ordering alone. On torch the
    // consumer is a cuda context: a torch import counts as written by its
    // context's default stream, which the export has already ordered after
    // the write, so a torch consumer would be ordered even without `Host`.
    let consumer_ctx = match ctx.backend() {
        Backend::Torch => common::cuda_ctx(),
        _ => ctx.clone(),
    };
    let consumer =
        GpuArray::<u32>::from_dlpack(&consumer_ctx, tensor.flattened().unwrap()).unwrap();
    let s2 = consumer_ctx.create_stream().unwrap();
    assert_same(&fresh, &s2.download(&consumer).unwrap());
    drop(consumer);
    s1.sync().unwrap();
    opener.join().unwrap().assert_opened_by_the_test();
});
