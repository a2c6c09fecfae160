//! tch interop, hand-written over the generated `unsafe` entry points of
//! specs/torch.yaml: tch tensors go into the bridge without a copy and
//! without giving up ownership, and bridge results come back as tch tensors.

use crate::generated::safe::{Result, Tensor, tensor_from_tch};

impl Tensor {
    /// Borrows `t`: the handle shares `t`'s storage (no copy), and tch keeps
    /// ownership of `t` (dropping either side leaves the other valid).
    pub fn from_tch(t: &tch::Tensor) -> Result<Tensor> {
        // SAFETY: `as_ptr` is the at::Tensor* of `t`, which the borrow keeps
        // alive for the whole call.
        unsafe { tensor_from_tch(t.as_ptr() as u64) }
    }

    /// A tch tensor sharing this tensor's storage.
    pub fn to_tch(&self) -> Result<tch::Tensor> {
        // SAFETY: the pointer is a fresh heap at::Tensor made for exactly this
        // one call of `from_ptr`, which takes ownership of it.
        let raw = unsafe { self.new_tch_ptr()? };
        // SAFETY: `raw` is an owned at::Tensor* (tch's C_tensor), used once.
        Ok(unsafe {
            tch::Tensor::from_ptr(raw as usize as *mut unigpu_torch_sys::torch_sys::C_tensor)
        })
    }
}
