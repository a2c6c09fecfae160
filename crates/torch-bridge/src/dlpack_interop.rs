//! DLPack for torch tensors through unigpu-core's [`ManagedTensor`], so a
//! torch tensor and a unigpu buffer of any backend can share memory.
//! Hand-written over the spec's `Tensor::share` and `unsafe`
//! `dlpack_from_raw`.

use std::any::Any;

use unigpu_core::Element;
use unigpu_core::dlpack::{self, Export, ManagedTensor, ffi};

use crate::cuda_interop::{InteropError, dtype_code};
use crate::generated::safe::{Tensor, dlpack_from_raw, tensor_from_dlpack};

impl Tensor {
    /// Exports this tensor, a contiguous CUDA tensor of `T`s, as a DLPack
    /// tensor sharing its storage. The export holds its own reference to
    /// the tensor, so the storage lives until the consumer deletes it.
    pub fn to_managed<T: Element + 'static>(&self) -> Result<ManagedTensor, InteropError> {
        let owner = self.share()?;
        self.export_owned_by::<T>(Box::new(owner))
    }

    /// [`Self::to_managed`], with `with` kept beside the tensor reference
    /// for as long as the export lives: an import in this process finds
    /// both again through `ManagedTensor::owner::<TensorExport<X>>()` (the
    /// torch backend keeps a buffer's use record there, so that its own
    /// export imported again is ordered with the original).
    pub fn to_managed_with<T: Element + 'static, X: Any + Send>(
        &self,
        with: X,
    ) -> Result<ManagedTensor, InteropError> {
        let owner = TensorExport {
            tensor: self.share()?,
            with,
        };
        self.export_owned_by::<T>(Box::new(owner))
    }

    /// `owner` holds a reference to this tensor.
    fn export_owned_by<T: Element + 'static>(
        &self,
        owner: Box<dyn Any + Send>,
    ) -> Result<ManagedTensor, InteropError> {
        let index = self.device_index()?;
        if index < 0 {
            return Err(InteropError::Mismatch(
                "the tensor is not a CUDA tensor".into(),
            ));
        }
        if self.dtype_code()? != dtype_code::<T>() {
            return Err(InteropError::Mismatch(format!(
                "the tensor's dtype is not {}",
                std::any::type_name::<T>()
            )));
        }
        if !self.is_contiguous()? {
            return Err(InteropError::Mismatch(
                "the tensor is not contiguous".into(),
            ));
        }
        let len = usize::try_from(self.numel()?)
            .map_err(|_| InteropError::Mismatch("negative numel".into()))?;
        let desc = Export {
            data: self.data_address()?,
            device: ffi::DLDevice {
                device_type: ffi::kDLCUDA,
                device_id: index as i32,
            },
            dtype: dlpack::dtype_of::<T>(),
            len,
            read_only: false,
        };
        // SAFETY: the owner holds a reference to this tensor (its callers
        // pass one), which keeps its storage (and so `desc.len` elements at
        // `desc.data`) allocated.
        Ok(unsafe { ManagedTensor::export(owner, desc) })
    }

    /// A 1-D tensor sharing the memory of `tensor`, which must be a
    /// contiguous CUDA tensor (any shape; it is flattened). torch calls the
    /// producer's deleter when the last reference to the tensor goes.
    pub fn from_managed(tensor: ManagedTensor) -> Result<Tensor, InteropError> {
        let view = tensor.view()?;
        if view.device.device_type != ffi::kDLCUDA {
            return Err(InteropError::Mismatch(format!(
                "a tensor on DLPack device type {} is not CUDA memory",
                view.device.device_type
            )));
        }
        // Re-wrapped as a 1-D legacy tensor of our own, the form
        // at::fromDLPack takes; the original is its owner.
        let raw = tensor.flattened()?.into_raw_legacy().map_err(|_| {
            InteropError::Mismatch("a flattened tensor is always exportable as legacy".into())
        })?;
        // SAFETY: `raw` comes from `ManagedTensor::export` (valid until its
        // deleter runs) and is owned by nobody else after `into_raw_legacy`.
        let mut capsule = unsafe { dlpack_from_raw(raw as u64) }?;
        Ok(tensor_from_dlpack(&mut capsule)?)
    }
}

/// The owner of a tensor made by [`Tensor::to_managed_with`]: a reference
/// to the exported tensor and what the exporter attached to it.
#[derive(Debug)]
pub struct TensorExport<X> {
    pub tensor: Tensor,
    pub with: X,
}
