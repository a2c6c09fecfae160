//! DLPack: sharing memory with other libraries (numpy, torch, CuPy, C code)
//! without copying.
//!
//! [`ManagedTensor`] owns one `DLManagedTensorVersioned` (or a legacy
//! `DLManagedTensor`): dropping it calls the producer's deleter exactly
//! once, and `into_raw_*` hands that duty to a consumer. Its invariant is
//! the DLPack contract itself: the data it describes stays valid until the
//! deleter runs. Tensors made here keep their memory alive through an
//! owner value that the deleter drops; tensors that come from outside are
//! taken with the `unsafe` `from_raw_*` constructors, whose caller vouches
//! for the producer.
//!
//! [`ManagedTensor::view`] validates a tensor's descriptor once (device,
//! dtype, contiguity, alignment, sizes) into a [`TensorView`], so that the
//! typed views built from it — [`HostMem`] here and the backends' imports
//! (the CUDA layer's `DeviceBuffer::from_dlpack`) — rely on checked
//! numbers only.

pub mod ffi;
mod host;

use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use ffi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};
pub use host::{HostArray, HostExport, HostMem, HostRead, HostWrite};

use crate::Element;

/// Why a DLPack tensor was refused (the message says what to change), or
/// could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DLPack: {message}")]
pub struct DlpackError {
    pub message: String,
}

/// The result of a DLPack call.
pub type Result<T, E = DlpackError> = std::result::Result<T, E>;

/// A DLPack device: `(device_type, device_id)` as DLPack numbers them.
pub type Device = DLDevice;

/// The DLPack dtype of an element type.
pub fn dtype_of<T: Element>() -> DLDataType {
    T::DLPACK
}

fn rejected(message: impl Into<String>) -> DlpackError {
    DlpackError {
        message: message.into(),
    }
}

/// An owned DLPack tensor; see the module docs.
#[derive(Debug)]
pub struct ManagedTensor {
    raw: Raw,
}

#[derive(Debug, Clone, Copy)]
enum Raw {
    Versioned(NonNull<DLManagedTensorVersioned>),
    Legacy(NonNull<DLManagedTensor>),
}

// SAFETY: a ManagedTensor is a uniquely owned pointer; the DLPack contract
// lets the deleter run on any thread (numpy takes the GIL in it, torch and
// CuPy free C++ objects), and `&ManagedTensor` only reads the descriptor.
unsafe impl Send for ManagedTensor {}
// SAFETY: as above; no `&self` method writes.
unsafe impl Sync for ManagedTensor {}

impl ManagedTensor {
    /// Takes ownership of a versioned tensor from a producer.
    ///
    /// # Safety
    /// `ptr` is NULL or a `DLManagedTensorVersioned` whose fields follow the
    /// DLPack contract (data valid for the described extent until the
    /// deleter runs, shape/strides readable), not owned by anyone else.
    pub unsafe fn from_raw_versioned(ptr: *mut DLManagedTensorVersioned) -> Result<Self> {
        let raw = NonNull::new(ptr).ok_or_else(|| rejected("the tensor pointer is NULL"))?;
        let tensor = ManagedTensor {
            raw: Raw::Versioned(raw),
        };
        let version = tensor.version();
        if version.major != ffi::DLPACK_MAJOR_VERSION {
            // Dropping calls the deleter: the tensor is ours now, and the
            // spec says to delete a tensor of an unknown major version.
            return Err(rejected(format!(
                "DLPack version {}.{} is not supported (major version {} only)",
                version.major,
                version.minor,
                ffi::DLPACK_MAJOR_VERSION
            )));
        }
        Ok(tensor)
    }

    /// Takes ownership of a legacy (unversioned) tensor from a producer.
    ///
    /// # Safety
    /// As [`Self::from_raw_versioned`], for a `DLManagedTensor`.
    pub unsafe fn from_raw_legacy(ptr: *mut DLManagedTensor) -> Result<Self> {
        let raw = NonNull::new(ptr).ok_or_else(|| rejected("the tensor pointer is NULL"))?;
        Ok(ManagedTensor {
            raw: Raw::Legacy(raw),
        })
    }

    /// Wraps `data` described by `desc` in a new versioned tensor whose
    /// deleter drops `owner`.
    ///
    /// # Safety
    /// `owner` keeps the `desc.len` elements at `desc.data` on `desc.device`
    /// allocated for as long as it lives.
    pub unsafe fn export(owner: Box<dyn Any + Send>, desc: Export) -> ManagedTensor {
        let mut ctx = Box::new(ExportCtx {
            len: desc.len,
            shape: vec![desc.len as i64],
            strides: Vec::new(),
            _owner: owner,
            versioned: DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: ffi::DLPACK_MAJOR_VERSION,
                    minor: ffi::DLPACK_MINOR_VERSION,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags: if desc.read_only {
                    ffi::DLPACK_FLAG_BITMASK_READ_ONLY
                } else {
                    0
                },
                dl_tensor: DLTensor {
                    data: desc.data as *mut c_void,
                    device: desc.device,
                    ndim: 1,
                    dtype: desc.dtype,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            legacy: None,
        });
        // The shape lives in the same box, so its address is stable.
        ctx.versioned.dl_tensor.shape = ctx.shape.as_mut_ptr();
        let ctx = Box::into_raw(ctx);
        // SAFETY: `ctx` was just leaked from a Box and is not aliased.
        unsafe {
            (*ctx).versioned.manager_ctx = ctx.cast();
        }
        ManagedTensor {
            // SAFETY: a field of a live, leaked Box is never NULL.
            raw: Raw::Versioned(unsafe { NonNull::new_unchecked(&raw mut (*ctx).versioned) }),
        }
    }

    fn dl_tensor(&self) -> &DLTensor {
        match self.raw {
            // SAFETY: the pointer is live until the deleter runs (the type's
            // invariant), and `&self` keeps it from running.
            Raw::Versioned(p) => unsafe { &p.as_ref().dl_tensor },
            // SAFETY: as above.
            Raw::Legacy(p) => unsafe { &p.as_ref().dl_tensor },
        }
    }

    /// The DLPack version; legacy tensors report 0.0.
    pub fn version(&self) -> DLPackVersion {
        match self.raw {
            // SAFETY: as in `dl_tensor`.
            Raw::Versioned(p) => unsafe { p.as_ref().version },
            Raw::Legacy(_) => DLPackVersion { major: 0, minor: 0 },
        }
    }

    /// Whether the producer forbids writes through this tensor.
    pub fn is_read_only(&self) -> bool {
        match self.raw {
            // SAFETY: as in `dl_tensor`.
            Raw::Versioned(p) => unsafe {
                p.as_ref().flags & ffi::DLPACK_FLAG_BITMASK_READ_ONLY != 0
            },
            Raw::Legacy(_) => false,
        }
    }

    pub fn device(&self) -> Device {
        self.dl_tensor().device
    }

    /// Checks the descriptor and returns its numbers; see [`TensorView`].
    pub fn view(&self) -> Result<TensorView> {
        TensorView::of(self.dl_tensor())
    }

    /// The value that keeps the memory alive, when this tensor was made by
    /// [`Self::export`] in this process with an owner of type `O` (so an
    /// array exported and imported again can share its owner instead of
    /// aliasing the memory through a second handle).
    pub fn owner<O: Any>(&self) -> Option<&O> {
        let (deleter_is_ours, ctx) = match self.raw {
            // SAFETY: live per the invariant; only read here.
            Raw::Versioned(p) => unsafe {
                let t = p.as_ref();
                (
                    t.deleter.is_some_and(|d| {
                        std::ptr::fn_addr_eq(d, delete_versioned as unsafe extern "C" fn(_))
                    }),
                    t.manager_ctx,
                )
            },
            // SAFETY: as above.
            Raw::Legacy(p) => unsafe {
                let t = p.as_ref();
                (
                    t.deleter.is_some_and(|d| {
                        std::ptr::fn_addr_eq(d, delete_legacy as unsafe extern "C" fn(_))
                    }),
                    t.manager_ctx,
                )
            },
        };
        if !deleter_is_ours {
            return None;
        }
        // SAFETY: our deleter means `manager_ctx` is an ExportCtx, alive
        // while `self` is.
        let ctx = unsafe { &*ctx.cast::<ExportCtx>() };
        ctx._owner.downcast_ref()
    }

    /// The same memory as a 1-D tensor made here (so also exportable as
    /// legacy), owning this one.
    pub fn flattened(self) -> Result<ManagedTensor> {
        let view = self.view()?;
        let desc = Export {
            data: view.data,
            device: view.device,
            dtype: view.dtype,
            len: view.len,
            read_only: self.is_read_only(),
        };
        // SAFETY: the owner is this tensor, whose contract keeps the
        // validated extent alive until it is dropped.
        Ok(unsafe { ManagedTensor::export(Box::new(self), desc) })
    }

    /// Describes this tensor, one made by [`Self::export`] here and not
    /// handed out yet, as `layout` over the exported memory (its offset in
    /// elements of `elem_bytes`): DLPack's shape, strides and byte offset.
    /// The layout must lie within the exported elements. A tensor from
    /// elsewhere is refused.
    pub fn set_layout(&mut self, layout: &crate::Layout, elem_bytes: usize) -> Result<()> {
        let Raw::Versioned(mut p) = self.raw else {
            return Err(rejected(
                "only a tensor exported here can be given a layout",
            ));
        };
        // SAFETY: live per the invariant, and `&mut self` is the only handle.
        let t = unsafe { p.as_mut() };
        let ours = t
            .deleter
            .is_some_and(|d| std::ptr::fn_addr_eq(d, delete_versioned as unsafe extern "C" fn(_)));
        if !ours {
            return Err(rejected(
                "only a tensor exported here can be given a layout",
            ));
        }
        // SAFETY: our deleter means `manager_ctx` is our ExportCtx, owned
        // by this value.
        let ctx = unsafe { &mut *t.manager_ctx.cast::<ExportCtx>() };
        let len = ctx.len;
        layout
            .check_within(len)
            .map_err(|e| rejected(format!("the layout does not fit the exported memory: {e}")))?;
        ctx.shape = layout.shape().iter().map(|&d| d as i64).collect();
        ctx.strides = layout.strides().iter().map(|&s| s as i64).collect();
        let t = &mut ctx.versioned.dl_tensor;
        t.ndim = layout.ndim() as i32;
        t.shape = ctx.shape.as_mut_ptr();
        t.strides = ctx.strides.as_mut_ptr();
        t.byte_offset = (layout.offset() * elem_bytes) as u64;
        Ok(())
    }

    /// Hands the tensor to a consumer as a `DLManagedTensorVersioned`; the
    /// consumer calls its deleter. A legacy tensor from outside cannot be
    /// re-exported as versioned and is returned as the error.
    pub fn into_raw_versioned(self) -> std::result::Result<*mut DLManagedTensorVersioned, Self> {
        match self.raw {
            Raw::Versioned(p) => {
                std::mem::forget(self);
                Ok(p.as_ptr())
            }
            Raw::Legacy(_) => Err(self),
        }
    }

    /// Hands the tensor to a consumer as a legacy `DLManagedTensor`. Only
    /// tensors made by [`Self::export`] (or imported as legacy) can be;
    /// others are returned as the error.
    pub fn into_raw_legacy(self) -> std::result::Result<*mut DLManagedTensor, Self> {
        match self.raw {
            Raw::Legacy(p) => {
                std::mem::forget(self);
                Ok(p.as_ptr())
            }
            Raw::Versioned(p) => {
                // SAFETY: live per the invariant; only read here.
                let deleter = unsafe { p.as_ref().deleter };
                let ours = deleter.is_some_and(|d| {
                    std::ptr::fn_addr_eq(d, delete_versioned as unsafe extern "C" fn(_))
                });
                if !ours {
                    return Err(self);
                }
                // SAFETY: our deleter means `manager_ctx` is our ExportCtx,
                // leaked by `export` and owned by this value.
                let ctx = unsafe { &mut *p.as_ref().manager_ctx.cast::<ExportCtx>() };
                let legacy = ctx.legacy.insert(DLManagedTensor {
                    dl_tensor: ctx.versioned.dl_tensor,
                    manager_ctx: ctx.versioned.manager_ctx,
                    deleter: Some(delete_legacy),
                });
                let legacy: *mut DLManagedTensor = legacy;
                std::mem::forget(self);
                Ok(legacy)
            }
        }
    }
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        match self.raw {
            // SAFETY: we own the tensor; its deleter is called exactly once,
            // here, with the pointer it was made for.
            Raw::Versioned(p) => unsafe {
                if let Some(deleter) = p.as_ref().deleter {
                    deleter(p.as_ptr());
                }
            },
            // SAFETY: as above.
            Raw::Legacy(p) => unsafe {
                if let Some(deleter) = p.as_ref().deleter {
                    deleter(p.as_ptr());
                }
            },
        }
    }
}

/// What [`ManagedTensor::export`] describes: a contiguous 1-D tensor.
#[derive(Debug, Clone, Copy)]
pub struct Export {
    pub data: u64,
    pub device: Device,
    pub dtype: DLDataType,
    pub len: usize,
    pub read_only: bool,
}

/// The allocation behind a tensor made by `export`; `manager_ctx` points here.
struct ExportCtx {
    versioned: DLManagedTensorVersioned,
    /// Made on demand by `into_raw_legacy`, sharing `shape`.
    legacy: Option<DLManagedTensor>,
    /// The extents and strides `dl_tensor` points at; never resized after
    /// they are handed out, so their addresses stay valid.
    shape: Vec<i64>,
    strides: Vec<i64>,
    /// How many elements the owner keeps alive from `data`.
    len: usize,
    /// Keeps the memory alive; dropped with the context by the deleter.
    _owner: Box<dyn Any + Send>,
}

/// Frees an ExportCtx; a panic in the owner's drop must not unwind into C.
///
/// # Safety
/// `manager_ctx` is an ExportCtx leaked by `export`, not freed yet.
unsafe fn free_ctx(manager_ctx: *mut c_void) {
    // SAFETY: per the function's contract.
    let ctx = unsafe { Box::from_raw(manager_ctx.cast::<ExportCtx>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(ctx)));
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if let Some(p) = NonNull::new(p) {
        // SAFETY: DLPack calls the deleter once with the tensor it belongs
        // to, whose `manager_ctx` is the ExportCtx that `export` leaked.
        unsafe { free_ctx(p.as_ref().manager_ctx) }
    }
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if let Some(p) = NonNull::new(p) {
        // SAFETY: as in `delete_versioned`; the legacy struct lives inside
        // the same ExportCtx.
        unsafe { free_ctx(p.as_ref().manager_ctx) }
    }
}

/// A validated tensor descriptor: the memory it spans, from its first
/// element on, and the layout of its elements there. Strided tensors are
/// accepted where every stride is non-negative (torch and CuPy make no
/// others; a numpy array with a negative step must be copied first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorView {
    /// The first element's address (`data + byte_offset`).
    pub data: u64,
    pub device: Device,
    pub dtype: DLDataType,
    /// The number of elements the memory spans from `data`: the product
    /// of the shape (1 for 0-D) for a contiguous tensor, one past the
    /// farthest element for a strided one (0 when there is no element).
    pub len: usize,
    /// The elements' shape and strides over those `len`, offset 0.
    pub layout: crate::Layout,
}

impl TensorView {
    fn of(t: &DLTensor) -> Result<TensorView> {
        if t.dtype.lanes != 1 {
            return Err(rejected(format!(
                "vector dtypes (lanes = {}) are not supported",
                t.dtype.lanes
            )));
        }
        let ndim = usize::try_from(t.ndim)
            .map_err(|_| rejected(format!("ndim is negative ({})", t.ndim)))?;
        if ndim > 64 {
            return Err(rejected(format!("ndim {ndim} is over 64")));
        }
        if ndim > 0 && t.shape.is_null() {
            return Err(rejected("the shape pointer is NULL"));
        }
        let shape: &[i64] = if ndim == 0 {
            &[]
        } else {
            // SAFETY: non-NULL, and DLPack promises `ndim` readable entries.
            unsafe { std::slice::from_raw_parts(t.shape, ndim) }
        };
        let mut len: usize = 1;
        for &d in shape {
            let d = usize::try_from(d).map_err(|_| rejected(format!("negative extent {d}")))?;
            len = len
                .checked_mul(d)
                .ok_or_else(|| rejected("the element count overflows"))?;
        }
        let extents: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let layout = if t.strides.is_null() || ndim == 0 {
            crate::Layout::contiguous(&extents)
        } else {
            // SAFETY: non-NULL, and DLPack promises `ndim` readable entries.
            let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
            if let Some(s) = strides.iter().find(|&&s| s < 0) {
                return Err(rejected(format!(
                    "negative strides cannot be imported (shape {shape:?}, strides {strides:?}, stride {s}); make a copy first"
                )));
            }
            let strides: Vec<isize> = strides
                .iter()
                .map(|&s| isize::try_from(s))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| rejected(format!("strides {strides:?} overflow")))?;
            crate::Layout::from_parts(&extents, &strides, 0).map_err(|e| rejected(e.0))?
        };
        // The memory the elements span (all of it for a contiguous tensor).
        let len = if layout.is_contiguous() {
            len
        } else {
            layout.extent().map_err(|e| rejected(e.0))?.1
        };
        let elem = usize::from(t.dtype.bits).div_ceil(8).max(1);
        // Both the memory and the elements (more than the memory when a
        // stride is 0) must have a byte size an allocation could have.
        let fits = |n: usize| n.checked_mul(elem).filter(|&b| b <= isize::MAX as usize);
        fits(layout.len()).ok_or_else(|| rejected("the tensor's byte size overflows"))?;
        let bytes = fits(len).ok_or_else(|| rejected("the tensor's byte size overflows"))?;
        let data = (t.data as u64)
            .checked_add(t.byte_offset)
            .ok_or_else(|| rejected("data + byte_offset overflows"))?;
        if len > 0 && data == 0 {
            return Err(rejected("the data pointer is NULL"));
        }
        if data.checked_add(bytes as u64).is_none() {
            return Err(rejected("the tensor's extent wraps the address space"));
        }
        if len > 0 && data % elem as u64 != 0 {
            return Err(rejected(format!(
                "the data address {data:#x} is not aligned to the element size {elem}"
            )));
        }
        Ok(TensorView {
            data,
            device: t.device,
            dtype: t.dtype,
            len,
            layout,
        })
    }

    /// Checks that the elements are `T`s.
    pub fn expect_dtype<T: Element>(&self) -> Result<()> {
        if self.dtype == T::DLPACK {
            Ok(())
        } else {
            Err(rejected(format!(
                "dtype mismatch: the tensor holds {}, the array wants {}",
                dtype_name(self.dtype),
                dtype_name(T::DLPACK)
            )))
        }
    }
}

/// A readable name for a DLPack dtype, for error messages.
pub fn dtype_name(d: DLDataType) -> String {
    let kind = match d.code {
        ffi::kDLInt => "int",
        ffi::kDLUInt => "uint",
        ffi::kDLFloat => "float",
        ffi::kDLBfloat => "bfloat",
        ffi::kDLBool => "bool",
        5 => "complex",
        _ => "code",
    };
    if d.lanes == 1 {
        format!("{kind}{}", d.bits)
    } else {
        format!("{kind}{}x{}", d.bits, d.lanes)
    }
}
