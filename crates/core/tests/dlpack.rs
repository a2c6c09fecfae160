//! DLPack ownership and validation without a GPU: tensors made by a fake
//! producer (a Vec and a counting deleter) are imported, rejected or
//! handed back, and the deleter runs exactly once in every case.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;
use unigpu_core::dlpack::ffi::*;
use unigpu_core::dlpack::{HostArray, HostMem, ManagedTensor, dtype_of};

/// What a fake producer's tensor owns; freed by its deleter.
struct Producer {
    data: Vec<f32>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    deleted: Arc<AtomicUsize>,
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    // SAFETY: `p` is a Box made by `versioned` below, whose manager_ctx is a
    // Box<Producer>; DLPack calls the deleter once.
    unsafe {
        let t = Box::from_raw(p);
        let owner = Box::from_raw(t.manager_ctx.cast::<Producer>());
        owner.deleted.fetch_add(1, Ordering::SeqCst);
    }
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    // SAFETY: as in `delete_versioned`.
    unsafe {
        let t = Box::from_raw(p);
        let owner = Box::from_raw(t.manager_ctx.cast::<Producer>());
        owner.deleted.fetch_add(1, Ordering::SeqCst);
    }
}

fn dl_tensor(owner: &mut Producer) -> DLTensor {
    DLTensor {
        data: owner.data.as_mut_ptr().cast::<c_void>(),
        device: DLDevice {
            device_type: kDLCPU,
            device_id: 0,
        },
        ndim: owner.shape.len() as i32,
        dtype: dtype_of::<f32>(),
        shape: owner.shape.as_mut_ptr(),
        strides: owner
            .strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

fn producer(
    data: Vec<f32>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
) -> (Box<Producer>, Arc<AtomicUsize>) {
    let deleted = Arc::new(AtomicUsize::new(0));
    let p = Box::new(Producer {
        data,
        shape,
        strides,
        deleted: deleted.clone(),
    });
    (p, deleted)
}

fn versioned(
    mut owner: Box<Producer>,
    edit: impl FnOnce(&mut DLManagedTensorVersioned),
) -> *mut DLManagedTensorVersioned {
    let mut t = DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 0 },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_versioned),
        flags: 0,
        dl_tensor: dl_tensor(&mut owner),
    };
    t.manager_ctx = Box::into_raw(owner).cast();
    edit(&mut t);
    Box::into_raw(Box::new(t))
}

fn random_data(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-1e3..1e3)).collect()
}

#[test]
fn contiguous_tensors_of_any_rank_import_without_copying() {
    let mut rng = rand::rng();
    for _ in 0..50 {
        let rank = rng.random_range(0..4);
        let shape: Vec<i64> = (0..rank).map(|_| rng.random_range(0..6)).collect();
        let n: i64 = shape.iter().product();
        let data = random_data(n as usize);
        // Compact strides given explicitly half of the time.
        let strides = rng.random_bool(0.5).then(|| {
            let mut s = vec![1i64; rank];
            for i in (0..rank.saturating_sub(1)).rev() {
                s[i] = s[i + 1] * shape[i + 1];
            }
            s
        });
        let (owner, deleted) = producer(data.clone(), shape, strides);
        let addr = owner.data.as_ptr() as u64;
        // SAFETY: `versioned` builds a valid tensor owned by nobody else.
        let t = unsafe { ManagedTensor::from_raw_versioned(versioned(owner, |_| {})) }.unwrap();
        let mem = HostMem::<f32>::from_dlpack(t).unwrap();
        assert_eq!(&mem[..], &data[..]);
        if n > 0 {
            assert_eq!(mem.as_ptr() as u64, addr, "imported without a copy");
        }
        assert_eq!(deleted.load(Ordering::SeqCst), 0);
        drop(mem);
        assert_eq!(deleted.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn bad_descriptors_are_rejected_and_still_deleted() {
    type Edit = fn(&mut DLManagedTensorVersioned);
    let cases: [(&str, Edit); 7] = [
        ("negative strides", |t| {
            // shape [2, 3] with the first axis walked backwards
            // SAFETY: the producer's strides were allocated with 2 entries.
            unsafe { *t.dl_tensor.strides.add(0) = -3 };
        }),
        ("version", |t| t.version.major = 2),
        ("NULL", |t| t.dl_tensor.data = std::ptr::null_mut()),
        ("aligned", |t| t.dl_tensor.byte_offset = 1),
        ("lanes", |t| t.dl_tensor.dtype.lanes = 4),
        ("host memory", |t| t.dl_tensor.device.device_type = kDLCUDA),
        ("read-only", |t| t.flags = DLPACK_FLAG_BITMASK_READ_ONLY),
    ];
    for (expect, edit) in cases {
        let (owner, deleted) = producer(random_data(6), vec![2, 3], Some(vec![3, 1]));
        let raw = versioned(owner, edit);
        // SAFETY: a valid tensor apart from the edit under test.
        let err = match unsafe { ManagedTensor::from_raw_versioned(raw) } {
            Err(e) => e,
            Ok(t) => HostMem::<f32>::from_dlpack(t).unwrap_err(),
        };
        assert!(err.to_string().contains(expect), "{expect}: {err}");
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "{expect}: deleted once");
    }
}

#[test]
fn wrong_dtype_is_rejected() {
    let (owner, deleted) = producer(random_data(4), vec![4], None);
    // SAFETY: `versioned` builds a valid tensor.
    let t = unsafe { ManagedTensor::from_raw_versioned(versioned(owner, |_| {})) }.unwrap();
    let err = HostMem::<i32>::from_dlpack(t).unwrap_err();
    assert!(err.to_string().contains("float32"), "{err}");
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn legacy_tensors_import() {
    let data = random_data(17);
    let (mut owner, deleted) = producer(data.clone(), vec![17], None);
    let t = DLManagedTensor {
        dl_tensor: dl_tensor(&mut owner),
        manager_ctx: Box::into_raw(owner).cast(),
        deleter: Some(delete_legacy),
    };
    let raw = Box::into_raw(Box::new(t));
    // SAFETY: a valid legacy tensor owned by nobody else.
    let t = unsafe { ManagedTensor::from_raw_legacy(raw) }.unwrap();
    assert_eq!(t.version().major, 0);
    let mem = HostMem::<f32>::from_dlpack(t).unwrap();
    assert_eq!(&mem[..], &data[..]);
    drop(mem);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn exports_keep_the_memory_until_the_consumer_deletes_them() {
    for legacy in [false, true] {
        let data = random_data(1000);
        let array = HostArray::new(HostMem::from(data.clone()));
        let tensor = array.to_dlpack();
        let view = tensor.view().unwrap();
        assert_eq!(view.len, 1000);
        assert_eq!(view.data, array.read().as_ptr() as u64);
        drop(array);
        // A consumer in C takes the raw pointer and later calls the deleter.
        let check = |t: &DLTensor| {
            // SAFETY: the export keeps 1000 f32 at `data` alive until deleted.
            let seen = unsafe { std::slice::from_raw_parts(t.data.cast::<f32>(), 1000) };
            assert_eq!(seen, &data[..]);
            // SAFETY: ndim 1, shape points at one entry.
            assert_eq!(unsafe { *t.shape }, 1000);
        };
        if legacy {
            let raw = tensor.into_raw_legacy().unwrap();
            // SAFETY: live until its deleter runs, which we call once.
            unsafe {
                check(&(*raw).dl_tensor);
                ((*raw).deleter.unwrap())(raw);
            }
        } else {
            let raw = tensor.into_raw_versioned().unwrap();
            // SAFETY: as above.
            unsafe {
                assert_eq!((*raw).version.major, 1);
                check(&(*raw).dl_tensor);
                ((*raw).deleter.unwrap())(raw);
            }
        }
    }
}

#[test]
fn null_is_an_error_not_a_crash() {
    // SAFETY: NULL is allowed and rejected.
    assert!(unsafe { ManagedTensor::from_raw_versioned(std::ptr::null_mut()) }.is_err());
    // SAFETY: as above.
    assert!(unsafe { ManagedTensor::from_raw_legacy(std::ptr::null_mut()) }.is_err());
}

#[test]
fn an_export_names_its_owner_and_a_foreign_tensor_does_not() {
    let array = HostArray::new(HostMem::from(random_data(10)));
    let tensor = array.to_dlpack();
    let owner = tensor.owner::<HostArray<f32>>().expect("our own export");
    assert!(HostArray::ptr_eq(owner, &array));
    assert!(tensor.owner::<HostArray<f64>>().is_none());
    // Through the legacy form and back, still ours.
    let raw = tensor.into_raw_legacy().unwrap();
    // SAFETY: a legacy tensor made by `export`, owned by nobody else.
    let back = unsafe { ManagedTensor::from_raw_legacy(raw) }.unwrap();
    assert!(back.owner::<HostArray<f32>>().is_some());

    let (owner, deleted) = producer(random_data(4), vec![4], None);
    // SAFETY: `versioned` builds a valid tensor.
    let foreign = unsafe { ManagedTensor::from_raw_versioned(versioned(owner, |_| {})) }.unwrap();
    assert!(foreign.owner::<HostArray<f32>>().is_none());
    drop(foreign);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}
