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
    let host = random_vec::<u32>(random_len(10_000));
    let array = {
        let clone = ctx.clone();
        clone.upload(&host).unwrap()
    };
    assert_same(&host, &array.download().unwrap());
    assert_eq!(array.context().backend(), ctx.backend());
});
