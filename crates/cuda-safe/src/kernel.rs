//! Loaded modules, their functions, and kernel launches.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};

use crate::error::{Context as _, Result, SafeError};
use crate::launch_limits::LaunchLimits;
use crate::uses::UseEnd;
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};

/// A module loaded on one device. Unloaded when the last function from it
/// and the handle itself are gone. Send + Sync: modules are read-only.
#[derive(Debug, Clone)]
pub struct CudaModuleHandle {
    module: Arc<CudaModule>,
    device: CudaDevice,
}

impl CudaModuleHandle {
    /// Loads a CUBIN (or PTX) image.
    pub fn load(device: &CudaDevice, image: &[u8]) -> Result<Self> {
        let module = device
            .cudarc_context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(image.to_vec()))
            .call("cuModuleLoadData")?;
        Ok(CudaModuleHandle {
            module,
            device: device.clone(),
        })
    }

    /// The kernel whose (lowered) symbol is `symbol`, loaded onto the
    /// device now. Under the driver's lazy module loading (the default
    /// since CUDA 12.2) a kernel is otherwise loaded at its first launch,
    /// which may wait for the whole context: a first launch would then
    /// block behind unrelated work on other streams, or deadlock with
    /// work that waits for it (a stream held back by a host function
    /// until the launch is enqueued). `cuFuncLoad` moves that load here.
    pub fn function(&self, symbol: &str) -> Result<CudaFunctionHandle> {
        let func = self
            .module
            .load_function(symbol)
            .call("cuModuleGetFunction")?;
        self.device
            .cudarc_context()
            .bind_to_thread()
            .call("cuCtxSetCurrent")?;
        // SAFETY: `func` is a live function of a loaded module, and its
        // context is current; loading changes no state a caller can see.
        unsafe { cudarc::driver::sys::cuFuncLoad(func.cu_function()) }
            .result()
            .call("cuFuncLoad")?;
        let limits = LaunchLimits::read(self.device.cudarc_context(), &func)?;
        Ok(CudaFunctionHandle {
            func,
            device: self.device.clone(),
            limits,
        })
    }
}

/// One kernel of a loaded module. Send + Sync: launching is thread-safe.
#[derive(Debug, Clone)]
pub struct CudaFunctionHandle {
    func: CudaFunction,
    device: CudaDevice,
    limits: LaunchLimits,
}

impl CudaFunctionHandle {
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    pub(crate) fn cu_function(&self) -> cudarc::driver::sys::CUfunction {
        self.func.cu_function()
    }

    /// Most threads a block of this kernel may have.
    pub fn max_threads_per_block(&self) -> Result<i32> {
        self.func.max_threads_per_block().call("cuFuncGetAttribute")
    }

    /// What this kernel may be launched with on its device.
    pub fn limits(&self) -> &LaunchLimits {
        &self.limits
    }

    /// A launch over [`CudaFunctionHandle::limits`], refused before the
    /// driver is called.
    pub(crate) fn check_dims(&self, dims: &LaunchDims) -> Result<()> {
        self.limits
            .check(dims.grid_dim, dims.block_dim, dims.shared_mem_bytes)
            .map_err(|message| SafeError::LaunchLimit { message })
    }
}

/// A buffer of any element type, as a kernel argument.
pub trait BufferArg: Send + Sync {
    /// The address for a read on `stream`, ordered after pending writes.
    #[doc(hidden)]
    fn read_ptr(&self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)>;
    /// The address for a write on `stream`, ordered after pending uses.
    #[doc(hidden)]
    fn write_ptr(&mut self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)>;
    fn buffer_device(&self) -> &CudaDevice;
}

impl<T: Element> BufferArg for DeviceBuffer<T> {
    fn read_ptr(&self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)> {
        self.ptr_for_read(stream)
    }
    fn write_ptr(&mut self, stream: &CudaStreamHandle) -> Result<(u64, UseEnd)> {
        self.ptr_for_write(stream)
    }
    fn buffer_device(&self) -> &CudaDevice {
        self.device()
    }
}

/// One kernel argument: a plain value, or a buffer read or written.
#[derive(Debug)]
pub enum KernelParam<'a> {
    F32(f32),
    F64(f64),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    U8(u8),
    F16(half::f16),
    BF16(half::bf16),
    Buffer(&'a dyn BufferArg),
    BufferMut(&'a mut dyn BufferArg),
}

impl std::fmt::Debug for dyn BufferArg + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<device buffer>")
    }
}

/// Grid, block and dynamic shared memory of one launch.
pub type LaunchDims = LaunchConfig;

/// Enqueues `func` on `stream`. Buffers are ordered against their other
/// uses on any stream (see `uses.rs`).
pub fn launch(
    stream: &CudaStreamHandle,
    func: &CudaFunctionHandle,
    dims: LaunchDims,
    params: &mut [KernelParam<'_>],
) -> Result<()> {
    func.check_dims(&dims)?;
    for p in params.iter() {
        let device = match p {
            KernelParam::Buffer(b) => b.buffer_device(),
            KernelParam::BufferMut(b) => b.buffer_device(),
            _ => continue,
        };
        if device != stream.device() {
            return Err(SafeError::DeviceMismatch { what: "launch" });
        }
    }
    // Buffers first: ordering them may enqueue waits, and the builder
    // below borrows their addresses.
    let mut addresses = Vec::with_capacity(params.len());
    // Dropped after the launch: they mark its end on buffers shared
    // across streams.
    let mut ends = Vec::with_capacity(params.len());
    for p in params.iter_mut() {
        let (address, end) = match p {
            KernelParam::Buffer(b) => b.read_ptr(stream)?,
            KernelParam::BufferMut(b) => b.write_ptr(stream)?,
            _ => continue,
        };
        addresses.push(address);
        ends.push(end);
    }
    let mut builder = stream.cudarc_stream().launch_builder(&func.func);
    let mut next = addresses.iter();
    for p in params.iter() {
        match p {
            KernelParam::F32(v) => builder.arg(v),
            KernelParam::F64(v) => builder.arg(v),
            KernelParam::I32(v) => builder.arg(v),
            KernelParam::U32(v) => builder.arg(v),
            KernelParam::I64(v) => builder.arg(v),
            KernelParam::U64(v) => builder.arg(v),
            KernelParam::U8(v) => builder.arg(v),
            KernelParam::F16(v) => builder.arg(v),
            KernelParam::BF16(v) => builder.arg(v),
            KernelParam::Buffer(_) | KernelParam::BufferMut(_) => {
                let Some(address) = next.next() else {
                    return Err(SafeError::SizeMismatch {
                        what: "launch buffer addresses",
                        expected: addresses.len() + 1,
                        actual: addresses.len(),
                    });
                };
                builder.arg(address)
            }
        };
    }
    // SAFETY: every parameter is a plain value or the device address of a
    // buffer borrowed for this call, ordered after its conflicting uses
    // (and kept from reuse by another stream past the kernel by the
    // caching allocator). A kernel only reaches device memory, which the
    // host sees only through copies into `Pod` element types, so a wrong
    // kernel can produce wrong numbers or a device fault (reported at the
    // next sync), never host memory unsafety.
    unsafe { builder.launch(dims) }.call("cuLaunchKernel")?;
    drop(ends);
    Ok(())
}
