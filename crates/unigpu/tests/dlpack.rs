//! DLPack inside unigpu: an exported array imported again shares its
//! memory (writes through one are seen through the other), the export
//! keeps the memory alive after the array is dropped, and the tensor's
//! descriptor says what the array is. Every element type, every backend.

mod common;

use common::{Random, assert_same, random_vec, sizes};
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
