//! Torch tensors and unigpu-cuda-safe device buffers on the same GPU, hand-written
//! over the raw-handle entry points of both sides: a c10 stream as a
//! [`ForeignStream`], and device-to-device copies between a tensor and a
//! [`DeviceBuffer`] ordered on both libraries' streams by CUDA events (no
//! data passes through the host); and a tensor's memory for NCCL work on
//! a c10 stream ([`tensor_memory`]).

use unigpu_cuda_safe::nccl::ForeignMemory;
use unigpu_cuda_safe::{
    CudaDevice, CudaEventHandle, CudaStreamHandle, DeviceBuffer, Element, ForeignStream, SafeError,
};

use crate::generated::safe::{Error as TorchError, Tensor, TorchStream};

/// Why a copy between torch and a CUDA buffer could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InteropError {
    #[error(transparent)]
    Torch(#[from] TorchError),
    #[error(transparent)]
    Cuda(#[from] SafeError),
    /// The tensor and buffer do not describe the same memory layout or GPU.
    #[error("{0}")]
    Mismatch(String),
}

/// A refused DLPack tensor, as the CUDA layer reports it (same message).
impl From<unigpu_core::dlpack::DlpackError> for InteropError {
    fn from(e: unigpu_core::dlpack::DlpackError) -> Self {
        InteropError::Cuda(e.into())
    }
}

/// The element type code `tensor_empty` and `Tensor::dtype_code` use for `T`
/// (the facade's DType order).
pub fn dtype_code<T: Element + 'static>() -> i32 {
    use std::any::TypeId;
    let id = TypeId::of::<T>();
    let order = [
        TypeId::of::<f32>(),
        TypeId::of::<f64>(),
        TypeId::of::<half::f16>(),
        TypeId::of::<half::bf16>(),
        TypeId::of::<i32>(),
        TypeId::of::<u32>(),
        TypeId::of::<i64>(),
        TypeId::of::<u64>(),
        TypeId::of::<u8>(),
    ];
    // Every `Element` is in the list (the trait is sealed to these nine).
    order.iter().position(|t| *t == id).map_or(-1, |i| i as i32)
}

impl TorchStream {
    /// This stream as seen by the CUDA driver on `device`, which must be the
    /// stream's GPU.
    pub fn as_foreign(&self, device: &CudaDevice) -> Result<ForeignStream, InteropError> {
        let index = self.device_index()?;
        if index != device.ordinal() as i64 {
            return Err(InteropError::Mismatch(format!(
                "a stream of cuda:{index} used with cuda:{}",
                device.ordinal()
            )));
        }
        let raw = self.native_handle()?;
        // SAFETY: c10 never destroys its CUDA streams (pool streams are
        // recycled, the default stream is the legacy NULL stream), so `raw`
        // stays valid for the process; torch uses the device's primary
        // context, which `CudaDevice` retains too.
        Ok(unsafe { ForeignStream::from_raw(device, raw) })
    }
}

/// Checks that `tensor` is a contiguous CUDA tensor of `len` elements of
/// `T` on `device`, and returns its device address.
fn matching_address<T: Element + 'static>(
    tensor: &Tensor,
    len: usize,
    device: &CudaDevice,
) -> Result<u64, InteropError> {
    let index = tensor.device_index()?;
    if index != device.ordinal() as i64 {
        let on = if index < 0 {
            "the CPU".to_string()
        } else {
            format!("cuda:{index}")
        };
        return Err(InteropError::Mismatch(format!(
            "the tensor is on {on}, the buffer on cuda:{}",
            device.ordinal()
        )));
    }
    if tensor.dtype_code()? != dtype_code::<T>() {
        return Err(InteropError::Mismatch(format!(
            "the tensor's dtype does not match the buffer's {}",
            std::any::type_name::<T>()
        )));
    }
    if !tensor.is_contiguous()? {
        return Err(InteropError::Mismatch(
            "the tensor is not contiguous".into(),
        ));
    }
    let numel = tensor.numel()?;
    if numel != len as i64 {
        return Err(InteropError::Mismatch(format!(
            "the tensor has {numel} elements, the buffer {len}"
        )));
    }
    Ok(tensor.data_address()?)
}

/// Makes `later` wait for the work enqueued on `earlier` so far.
fn order(earlier: &ForeignStream, later: &CudaStreamHandle) -> Result<(), InteropError> {
    let ev = CudaEventHandle::new(later.device())?;
    earlier.record(&ev)?;
    later.wait(&ev)?;
    Ok(())
}

/// Makes `later` wait for the work enqueued on `earlier` so far.
fn order_back(earlier: &CudaStreamHandle, later: &ForeignStream) -> Result<(), InteropError> {
    let ev = CudaEventHandle::new(earlier.device())?;
    ev.record(earlier)?;
    later.wait(&ev)?;
    Ok(())
}

/// Copies `src` into `dst` on the GPU. The copy runs on `cuda` after the
/// work enqueued on `torch` so far (where `src`'s pending writes must be),
/// and later work on `torch` waits for it.
pub fn copy_tensor_to_buffer<T: Element + 'static>(
    src: &Tensor,
    dst: &mut DeviceBuffer<T>,
    torch: &TorchStream,
    cuda: &CudaStreamHandle,
) -> Result<(), InteropError> {
    let device = cuda.device().clone();
    let address = matching_address::<T>(src, dst.len(), &device)?;
    let foreign = torch.as_foreign(&device)?;
    order(&foreign, cuda)?;
    // SAFETY: `address` is `dst.len()` elements of `T` on this GPU
    // (checked above). `src` cannot be freed or reused before the copy is
    // done: `torch` waits for the copy (`order_back`), and `record_stream`
    // keeps the caching allocator from handing the memory out before
    // `torch`'s work up to that wait has finished.
    unsafe { dst.copy_from_raw(cuda, address) }?;
    order_back(cuda, &foreign)?;
    src.record_stream(torch)?;
    Ok(())
}

/// Copies `src` into `dst` on the GPU: the copy runs on `cuda` after the
/// work enqueued on `torch` so far (`dst`'s pending uses must be there), and
/// later work on `torch` waits for it.
pub fn copy_buffer_to_tensor<T: Element + 'static>(
    src: &DeviceBuffer<T>,
    dst: &mut Tensor,
    torch: &TorchStream,
    cuda: &CudaStreamHandle,
) -> Result<(), InteropError> {
    let device = cuda.device().clone();
    let address = matching_address::<T>(dst, src.len(), &device)?;
    let foreign = torch.as_foreign(&device)?;
    order(&foreign, cuda)?;
    // SAFETY: as in `copy_tensor_to_buffer`, with `dst` as the tensor that
    // stays allocated until the copy is done.
    unsafe { src.copy_to_raw(cuda, address) }?;
    order_back(cuda, &foreign)?;
    dst.record_stream(torch)?;
    Ok(())
}

/// `tensor`, a contiguous CUDA tensor of `len` elements of `T` on
/// `device`, as the memory of NCCL work about to be enqueued on `torch`
/// (a stream of `device`). The tensor is recorded on `torch`, so torch's
/// caching allocator keeps its memory until that work is done even if the
/// tensor is freed first; ordering the work after the tensor's other uses
/// is the caller's, as for a kernel launched with the tensor's address.
pub fn tensor_memory<T: Element + 'static>(
    tensor: &Tensor,
    len: usize,
    torch: &TorchStream,
    device: &CudaDevice,
) -> Result<ForeignMemory<T>, InteropError> {
    let address = matching_address::<T>(tensor, len, device)?;
    tensor.record_stream(torch)?;
    // SAFETY: `address` starts `len` elements of `T` on `device` (checked
    // above). The tensor is borrowed until the caller has enqueued its
    // work, and once it is freed `record_stream` makes the allocator wait
    // for the work enqueued on `torch` before then; the caller orders the
    // work after the tensor's other uses.
    Ok(unsafe { ForeignMemory::from_raw(address, len) })
}
