//! Loaded modules, their functions, and kernel launches.

use std::sync::Arc;

use std::ffi::c_void;

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaFunction, CudaModule, DriverError, LaunchConfig, result};
use smallvec::SmallVec;

use crate::error::{Context as _, Result, SafeError};
use crate::image::{self, ImageFormat};
use crate::launch_limits::LaunchLimits;
use crate::uses::UseEnd;
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};
use unigpu_core::{DType, Grid, Scalar};

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

    /// Loads precompiled code: PTX text (compiled for the device by the
    /// driver's JIT), a CUBIN or a fatbin. The bytes are checked first
    /// ([`image::check`]): a wrong label or a truncated file is an
    /// [`SafeError::Image`] before the driver reads anything, and so is an
    /// image the driver rejects (no code for this device's architecture,
    /// PTX too new for this driver), naming the device's architecture.
    pub fn load_image(device: &CudaDevice, format: ImageFormat, bytes: &[u8]) -> Result<Self> {
        image::check(format, bytes).map_err(|message| SafeError::Image { format, message })?;
        let loaded = device
            .cudarc_context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(image::terminated(
                format, bytes,
            )));
        match loaded {
            Ok(module) => Ok(CudaModuleHandle {
                module,
                device: device.clone(),
            }),
            Err(e) if is_image_error(e.0) => Err(SafeError::Image {
                format,
                message: load_failure(device, format, bytes, e),
            }),
            Err(e) => Err(SafeError::driver("cuModuleLoadData", e)),
        }
    }

    /// The kernel whose (lowered) symbol is `symbol`, loaded onto the
    /// device now. Under the driver's lazy module loading (the default
    /// since CUDA 12.2) a kernel is otherwise loaded at its first launch,
    /// which may wait for the whole context: a first launch would then
    /// block behind unrelated work on other streams, or deadlock with
    /// work that waits for it (a stream held back by a host function
    /// until the launch is enqueued). `cuFuncLoad` moves that load here.
    pub fn function(&self, symbol: &str) -> Result<CudaFunctionHandle> {
        // cudarc makes a C string of the name and panics on a NUL in it.
        if symbol.contains('\0') {
            return Err(SafeError::Driver {
                call: "cuModuleGetFunction",
                code: CUresult::CUDA_ERROR_NOT_FOUND as u32,
                name: "CUDA_ERROR_NOT_FOUND".into(),
                message: format!("{symbol:?} has a NUL byte: no kernel has such a name"),
            });
        }
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
    /// The offset and size in bytes of each of the kernel's parameters, as
    /// the driver has them (`cuFuncGetParamInfo`): the only parameter list
    /// a CUBIN has. `Unsupported` from a driver older than CUDA 12.4.
    pub fn param_layout(&self) -> Result<Vec<(usize, usize)>> {
        const SYMBOL: &str = "cuFuncGetParamInfo";
        if !unigpu_cuda_sys::probe().driver_has(SYMBOL) {
            return Err(SafeError::Unsupported {
                what: format!(
                    "reading a kernel's parameter list: this CUDA driver has no {SYMBOL} (CUDA 12.4 added it)"
                ),
            });
        }
        self.device
            .cudarc_context()
            .bind_to_thread()
            .call("cuCtxSetCurrent")?;
        // The parameter space holds at most 32764 bytes, so no kernel has
        // more parameters than that.
        let mut layout = Vec::new();
        for index in 0..32_768usize {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: `func` is a live function of a loaded module (the
            // handle keeps it), its context is current, and both
            // out-pointers are valid for writes. The probe said the driver
            // has the symbol, so cudarc's loader finds it.
            let status = unsafe {
                cudarc::driver::sys::cuFuncGetParamInfo(
                    self.func.cu_function(),
                    index,
                    &mut offset,
                    &mut size,
                )
            };
            match status {
                CUresult::CUDA_SUCCESS => layout.push((offset, size)),
                // An index past the last parameter.
                CUresult::CUDA_ERROR_INVALID_VALUE => break,
                other => return Err(SafeError::driver(SYMBOL, DriverError(other))),
            }
        }
        Ok(layout)
    }
}

/// The statuses with which `cuModuleLoadData` says the image itself is the
/// problem, rather than the device or the context.
fn is_image_error(status: CUresult) -> bool {
    matches!(
        status,
        CUresult::CUDA_ERROR_INVALID_IMAGE
            | CUresult::CUDA_ERROR_INVALID_PTX
            | CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUresult::CUDA_ERROR_JIT_COMPILER_NOT_FOUND
            | CUresult::CUDA_ERROR_JIT_COMPILATION_DISABLED
            | CUresult::CUDA_ERROR_INVALID_SOURCE
            | CUresult::CUDA_ERROR_SHARED_OBJECT_INIT_FAILED
    )
}

/// Why the driver refused an image, with what to do: the driver's status,
/// the device and its architecture, and for PTX its target and version.
fn load_failure(device: &CudaDevice, format: ImageFormat, bytes: &[u8], e: DriverError) -> String {
    let status = e.0;
    let what = match SafeError::driver("cuModuleLoadData", e) {
        SafeError::Driver {
            name,
            code,
            message,
            ..
        } => format!("{name} ({code}): {message}"),
        other => other.to_string(),
    };
    let (device_name, arch) = match device.properties() {
        Ok(p) => (
            p.name,
            format!("sm_{}{}", p.compute_capability.0, p.compute_capability.1),
        ),
        Err(_) => ("this device".into(), "an unknown architecture".into()),
    };
    let driver = unigpu_cuda_sys::probe().driver_version.map_or_else(
        || "unknown".into(),
        |v| format!("{}.{}", v / 1000, v % 1000 / 10),
    );
    let ptx = match format {
        ImageFormat::Ptx => std::str::from_utf8(bytes).ok(),
        _ => None,
    };
    let hint = match (status, ptx) {
        (CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU, _) => format!(
            "the {format} holds no code this {arch} device runs: build it for {arch} (nvcc -gencode arch=compute_XX,code={arch}) or add PTX the driver can compile (code=compute_XX)"
        ),
        (_, Some(text)) => format!(
            "the PTX is version {} for {}; this device is {arch} and this driver supports CUDA {driver}: PTX for a newer architecture or from a newer compiler than the driver does not load",
            image::ptx_version(text).unwrap_or("(none)"),
            image::ptx_target(text).unwrap_or("(no .target)"),
        ),
        _ => format!(
            "the device is {arch}; a {format} for another architecture, or made by a newer CUDA than this driver ({driver}), does not load"
        ),
    };
    format!("cuModuleLoadData failed on {device_name} ({arch}): {what}; {hint}")
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

impl KernelParam<'_> {
    /// Where a plain value lies, as `cuLaunchKernel`'s parameter list
    /// takes it; `None` for a buffer, whose address the caller supplies.
    pub(crate) fn value_ptr(&self) -> Option<*mut c_void> {
        let value: *const c_void = match self {
            KernelParam::F32(v) => std::ptr::from_ref(v).cast(),
            KernelParam::F64(v) => std::ptr::from_ref(v).cast(),
            KernelParam::I32(v) => std::ptr::from_ref(v).cast(),
            KernelParam::U32(v) => std::ptr::from_ref(v).cast(),
            KernelParam::I64(v) => std::ptr::from_ref(v).cast(),
            KernelParam::U64(v) => std::ptr::from_ref(v).cast(),
            KernelParam::U8(v) => std::ptr::from_ref(v).cast(),
            KernelParam::F16(v) => std::ptr::from_ref(v).cast(),
            KernelParam::BF16(v) => std::ptr::from_ref(v).cast(),
            KernelParam::Buffer(_) | KernelParam::BufferMut(_) => return None,
        };
        Some(value.cast_mut())
    }
}

impl std::fmt::Debug for dyn BufferArg + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<device buffer>")
    }
}

/// A kernel's plain value argument, from the scalar every backend shares.
impl From<Scalar> for KernelParam<'_> {
    fn from(s: Scalar) -> Self {
        match s.dtype() {
            DType::F32 => KernelParam::F32(s.get().unwrap_or_default()),
            DType::F64 => KernelParam::F64(s.get().unwrap_or_default()),
            DType::I32 => KernelParam::I32(s.get().unwrap_or_default()),
            DType::U32 => KernelParam::U32(s.get().unwrap_or_default()),
            DType::I64 => KernelParam::I64(s.get().unwrap_or_default()),
            DType::U64 => KernelParam::U64(s.get().unwrap_or_default()),
            DType::U8 => KernelParam::U8(s.get().unwrap_or_default()),
            DType::F16 => KernelParam::F16(s.get().unwrap_or_default()),
            DType::BF16 => KernelParam::BF16(s.get().unwrap_or_default()),
        }
    }
}

/// Parameters a launch keeps on the stack; more spill to the heap.
const INLINE_PARAMS: usize = 16;

/// Grid, block and dynamic shared memory of one launch.
pub type LaunchDims = LaunchConfig;

/// The launch dims of a grid every backend shares.
pub fn launch_dims(grid: Grid) -> LaunchDims {
    LaunchDims {
        grid_dim: grid.grid,
        block_dim: grid.block,
        shared_mem_bytes: grid.shared_mem_bytes,
    }
}

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
    // Buffers first: ordering them may enqueue waits, and the parameter
    // list below points at their addresses. Every list is on the stack up
    // to `INLINE_PARAMS` parameters: a launch allocates nothing.
    let mut addresses: SmallVec<[u64; INLINE_PARAMS]> = SmallVec::new();
    // Dropped after the launch: they mark its end on buffers shared
    // across streams.
    let mut ends: SmallVec<[UseEnd; INLINE_PARAMS]> = SmallVec::new();
    for p in params.iter_mut() {
        let (address, end) = match p {
            KernelParam::Buffer(b) => b.read_ptr(stream)?,
            KernelParam::BufferMut(b) => b.write_ptr(stream)?,
            _ => continue,
        };
        addresses.push(address);
        ends.push(end);
    }
    let mut next = addresses.iter();
    let mut pointers: SmallVec<[*mut c_void; INLINE_PARAMS]> = SmallVec::new();
    for p in params.iter() {
        let value = match p.value_ptr() {
            Some(value) => value,
            None => {
                let Some(address) = next.next() else {
                    return Err(SafeError::SizeMismatch {
                        what: "launch buffer addresses",
                        expected: addresses.len() + 1,
                        actual: addresses.len(),
                    });
                };
                std::ptr::from_ref(address).cast_mut().cast()
            }
        };
        pointers.push(value);
    }
    stream.bind()?;
    // SAFETY: every pointer is to a value alive until the call returns
    // (`params` and `addresses`, neither moved since), of the type the
    // kernel's parameter has as far as the caller declared it; the
    // function and the stream belong to the context just made current.
    // Each buffer's address is ordered after its conflicting uses (and
    // kept from reuse by another stream past the kernel by the caching
    // allocator). A kernel only reaches device memory, which the host
    // sees only through copies into `Pod` element types, so a wrong
    // kernel can produce wrong numbers or a device fault (reported at the
    // next sync), never host memory unsafety.
    unsafe { launch_raw(func, &dims, stream.cu_stream(), &mut pointers) }?;
    drop(ends);
    Ok(())
}

/// `cuLaunchKernel` of `func` with `dims` on `stream`, its status as a
/// `Result`.
///
/// # Safety
/// Each pointer in `params` points at a live value of the type of the
/// kernel's parameter at that place; `func` and `stream` belong to the
/// context current on this thread.
pub(crate) unsafe fn launch_raw(
    func: &CudaFunctionHandle,
    dims: &LaunchDims,
    stream: cudarc::driver::sys::CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: the caller's contract above.
    unsafe {
        result::launch_kernel(
            func.cu_function(),
            dims.grid_dim,
            dims.block_dim,
            dims.shared_mem_bytes,
            stream,
            params,
        )
    }
    .call("cuLaunchKernel")
}
