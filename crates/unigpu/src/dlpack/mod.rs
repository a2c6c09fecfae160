//! DLPack: arrays shared with numpy, torch, CuPy and C code without a copy.
//!
//! [`GpuArray::to_dlpack`] hands out a [`DlpackTensor`] that shares the
//! array's memory and keeps it alive until the consumer's deleter runs,
//! even after the array is dropped. [`Context::from_dlpack`] takes a tensor
//! from another library as an array of this context, again sharing the
//! memory; the producer's deleter runs when the array is dropped and its
//! work is done. Raw pointers become a [`DlpackTensor`] only in the FFI
//! crates (`unsafe` `DlpackTensor::from_raw_*`), which vouch for the
//! producer.

/// A consumer's CUDA stream by handle, for [`DlpackSync::Stream`] (made
/// with the `unsafe` `ForeignStream::from_raw`, whose caller vouches for the
/// handle).
pub use sync::ForeignStream;
pub(crate) mod sync;

pub use sync::DlpackSync;
use unigpu_core::dlpack::ffi;
pub use unigpu_core::dlpack::{ManagedTensor as DlpackTensor, TensorView};

use crate::backend::Storage;
use crate::element::with_dtype;
use crate::{AnyArray, ArrayViewMut, Backend, Context, DType, Element, Error, GpuArray, Result};

/// The DLPack `(device_type, device_id)` of a backend's device: CPU 1,
/// CUDA 2 (torch tensors here are CUDA tensors), Vulkan 7, as each backend
/// says (`Api::DLPACK_DEVICE_TYPE`). Host memory is device 0.
pub fn dlpack_device(backend: Backend, device_id: usize) -> (i32, i32) {
    match crate::backend::dlpack_device_type(backend) {
        ffi::kDLCPU => (ffi::kDLCPU, 0),
        other => (other, device_id as i32),
    }
}

/// The element type of a DLPack dtype, or an error naming it.
pub fn dtype_of(view: &TensorView) -> Result<DType> {
    let d = view.dtype;
    DType::from_dlpack(d).ok_or_else(|| Error::Dlpack {
            message: format!(
                "dtype {} has no unigpu element type (f32 f64 f16 bf16 i32 u32 i64 u64 u8 are supported)",
                unigpu_core::dlpack::dtype_name(d)
            ),
        })
}

impl<T: Element> GpuArray<T> {
    /// Exports the array as a DLPack tensor sharing its memory, ordered
    /// before the consumer as `sync` says. The tensor keeps the memory
    /// alive after the array is dropped. `&mut` because the consumer may
    /// write: until the consumer is done, ordering the array's other uses
    /// against it is the caller's duty, as in every DLPack exchange.
    pub fn to_dlpack(&mut self, sync: DlpackSync<'_>) -> Result<DlpackTensor> {
        self.view_mut().to_dlpack(sync)
    }

    /// Takes `tensor` as an array of `ctx` without copying. The tensor must
    /// be on the context's device (host memory for the CPU backend, the
    /// same CUDA device for cuda and torch), hold `T`s and be writable; the
    /// array keeps its shape and strides (a strided tensor stays strided:
    /// negative strides are refused). Work on the array is ordered after
    /// the producer's only as far as the producer arranged it (DLPack's
    /// rule: the consumer passes its stream to the producer), except for an
    /// array's own export coming back (cpu, cuda, torch): that shares the
    /// original's use tracking, so the two are ordered as one array.
    pub fn from_dlpack(ctx: &Context, tensor: DlpackTensor) -> Result<GpuArray<T>> {
        let layout = tensor.view()?.layout;
        let storage = Storage::from_dlpack(&ctx.default_stream().imp, tensor)?;
        let mut array = GpuArray::from_storage(ctx, storage);
        // The backend wrapped the memory the elements span, from the first.
        layout
            .check_within(array.storage.len())
            .map_err(|e| crate::array::shape_error("GpuArray::from_dlpack", e))?;
        array.layout = layout;
        Ok(array)
    }
}

impl<T: Element> ArrayViewMut<'_, T> {
    /// Exports the view's elements as a DLPack tensor with the view's
    /// shape and strides (its offset as the byte offset), sharing the
    /// array's memory; see [`GpuArray::to_dlpack`].
    pub fn to_dlpack(&mut self, sync: DlpackSync<'_>) -> Result<DlpackTensor> {
        let array = &mut *self.array;
        let stream = &array.ctx.default_stream().imp;
        let len = array.storage.len();
        let mut tensor = array.storage.export_dlpack(stream, sync)?;
        // Backends export their whole buffer as 1-D; the shape, strides
        // and offset are the facade's to describe.
        if self.layout != unigpu_core::Layout::contiguous(&[len]) {
            tensor.set_layout(&self.layout, std::mem::size_of::<T>())?;
        }
        Ok(tensor)
    }
}

impl AnyArray {
    /// [`GpuArray::to_dlpack`] for any dtype.
    pub fn to_dlpack(&mut self, sync: DlpackSync<'_>) -> Result<DlpackTensor> {
        crate::any_array::with_array!(self, a => a.to_dlpack(sync))
    }
}

impl Context {
    /// Takes a DLPack tensor as an array of this context, without copying;
    /// the element type comes from the tensor. See [`GpuArray::from_dlpack`].
    pub fn from_dlpack(&self, tensor: DlpackTensor) -> Result<AnyArray> {
        let dtype = dtype_of(&tensor.view()?)?;
        with_dtype!(dtype, T => GpuArray::<T>::from_dlpack(self, tensor).map(AnyArray::from))
    }

    /// This context's device in DLPack's numbering, as
    /// `__dlpack_device__` returns it.
    pub fn dlpack_device(&self) -> (i32, i32) {
        dlpack_device(self.backend(), self.device_id())
    }
}
