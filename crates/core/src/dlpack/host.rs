//! Host memory that is either a `Vec` or borrowed from a DLPack producer,
//! seen as a slice either way.

use std::any::Any;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::{Export, ManagedTensor, Result, ffi, rejected};
use crate::Element;

/// `len` elements of host memory: a `Vec<T>`, or a CPU tensor imported
/// through DLPack (kept alive until this value drops). Never resized, so a
/// pointer to its elements stays valid for as long as it lives.
#[derive(Debug)]
pub struct HostMem<T: Element> {
    repr: Repr<T>,
}

#[derive(Debug)]
enum Repr<T> {
    Owned(Vec<T>),
    Imported {
        ptr: NonNull<T>,
        len: usize,
        _tensor: ManagedTensor,
    },
}

// SAFETY: HostMem owns its elements exclusively, like a Vec (the imported
// tensor's producer gave them up to us until the deleter runs), and
// ManagedTensor is Send.
unsafe impl<T: Element> Send for HostMem<T> {}
// SAFETY: `&HostMem` only gives `&[T]`, and T: Sync.
unsafe impl<T: Element> Sync for HostMem<T> {}

impl<T: Element> From<Vec<T>> for HostMem<T> {
    fn from(v: Vec<T>) -> Self {
        HostMem {
            repr: Repr::Owned(v),
        }
    }
}

impl<T: Element> HostMem<T> {
    /// Views a CPU tensor as host memory of `T`, without copying. The
    /// tensor must live in host memory (`kDLCPU`, `kDLCUDAHost` or
    /// `kDLCUDAManaged`), hold `T`s, be contiguous and writable.
    pub fn from_dlpack(tensor: ManagedTensor) -> Result<Self> {
        let view = tensor.view()?;
        if !matches!(
            view.device.device_type,
            ffi::kDLCPU | ffi::kDLCUDAHost | ffi::kDLCUDAManaged
        ) {
            return Err(rejected(format!(
                "a tensor on DLPack device type {} is not in host memory",
                view.device.device_type
            )));
        }
        view.expect_dtype::<T>()?;
        if tensor.is_read_only() {
            return Err(rejected(
                "the tensor is read-only, and unigpu arrays are writable; import a writable copy",
            ));
        }
        let ptr = if view.len == 0 {
            NonNull::dangling()
        } else {
            NonNull::new(view.data as *mut T).ok_or_else(|| rejected("the data pointer is NULL"))?
        };
        Ok(HostMem {
            repr: Repr::Imported {
                ptr,
                len: view.len,
                _tensor: tensor,
            },
        })
    }

    /// Whether the memory came from another library.
    pub fn is_imported(&self) -> bool {
        matches!(self.repr, Repr::Imported { .. })
    }
}

impl<T: Element> Deref for HostMem<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            // SAFETY: `TensorView` checked non-NULL (or dangling for 0),
            // alignment and extent; the tensor keeps the memory alive and
            // exclusively ours (DLPack hands it over) while `self` lives.
            Repr::Imported { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Element> DerefMut for HostMem<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.repr {
            Repr::Owned(v) => v,
            // SAFETY: as in `deref`; the tensor is writable (checked) and
            // `&mut self` is exclusive.
            Repr::Imported { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

/// Shared host memory: what the CPU backend keeps an array in. Clones
/// share the elements. The lock guards give slices only, so the memory
/// behind a `HostArray` is never replaced or resized, which is what lets
/// [`HostArray::to_dlpack`] hand out its address.
#[derive(Debug)]
pub struct HostArray<T: Element> {
    mem: Arc<RwLock<HostMem<T>>>,
}

impl<T: Element> Clone for HostArray<T> {
    fn clone(&self) -> Self {
        HostArray {
            mem: self.mem.clone(),
        }
    }
}

/// Read access to a [`HostArray`]'s elements.
#[derive(Debug)]
pub struct HostRead<'a, T: Element>(RwLockReadGuard<'a, HostMem<T>>);

/// Write access to a [`HostArray`]'s elements.
#[derive(Debug)]
pub struct HostWrite<'a, T: Element>(RwLockWriteGuard<'a, HostMem<T>>);

impl<T: Element> Deref for HostRead<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Element> Deref for HostWrite<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Element> DerefMut for HostWrite<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T: Element> HostArray<T> {
    pub fn new(mem: HostMem<T>) -> Self {
        HostArray {
            mem: Arc::new(RwLock::new(mem)),
        }
    }

    /// Locks for reading; a poisoned lock is taken anyway (the elements
    /// are plain numbers, always valid).
    pub fn read(&self) -> HostRead<'_, T> {
        HostRead(self.mem.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Locks for writing.
    pub fn write(&self) -> HostWrite<'_, T> {
        HostWrite(self.mem.write().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `a` and `b` share their elements.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.mem, &b.mem)
    }

    /// Whether the elements came from another library through DLPack.
    pub fn is_imported(&self) -> bool {
        self.read().0.is_imported()
    }

    /// Exports the elements as a DLPack CPU tensor sharing them; the tensor
    /// holds a clone of this array, so the memory outlives every other
    /// owner if need be. The consumer reads and writes the elements without
    /// taking the lock: ordering with other users is the caller's duty, as
    /// DLPack specifies.
    pub fn to_dlpack(&self) -> ManagedTensor {
        self.export_owned_by(Box::new(self.clone()))
    }

    /// [`Self::to_dlpack`], with `with` kept beside the array for as long
    /// as the tensor lives: an import in this process finds both again
    /// through `ManagedTensor::owner::<HostExport<T, X>>()` (the CPU
    /// backend keeps an array's use tracking there, so that its own export
    /// imported again is ordered with the original).
    pub fn to_dlpack_with<X: Any + Send>(&self, with: X) -> ManagedTensor {
        self.export_owned_by(Box::new(HostExport {
            array: self.clone(),
            with,
        }))
    }

    /// `owner` holds a clone of this array.
    fn export_owned_by(&self, owner: Box<dyn Any + Send>) -> ManagedTensor {
        let (data, len) = {
            let guard = self.read();
            (guard.as_ptr() as u64, guard.len())
        };
        let desc = Export {
            data,
            device: ffi::DLDevice {
                device_type: ffi::kDLCPU,
                device_id: 0,
            },
            dtype: T::DLPACK,
            len,
            read_only: false,
        };
        // SAFETY: the owner holds a clone of the Arc holding the memory (its
        // callers pass one), and no API replaces or resizes a HostMem behind
        // a HostArray (the guards give slices only), so `data` stays valid
        // while it lives.
        unsafe { ManagedTensor::export(owner, desc) }
    }
}

/// The owner of a tensor made by [`HostArray::to_dlpack_with`]: the
/// array's memory and what the exporter attached to it.
#[derive(Debug)]
pub struct HostExport<T: Element, X> {
    pub array: HostArray<T>,
    pub with: X,
}

impl<T: Element, X> HostExport<T, X> {
    /// Whether `view`, of the tensor this export made, still spans the
    /// whole array: a consumer may move its start or cut its shape (a
    /// slice of it), and then it is another array over part of the memory,
    /// not this one coming back.
    pub fn spans(&self, view: &super::TensorView) -> bool {
        let guard = self.array.read();
        view.data == guard.as_ptr() as u64 && view.len == guard.len()
    }
}
