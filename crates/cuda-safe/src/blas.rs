//! cuBLAS matrix products, row-major.

use std::any::Any;
use std::sync::Mutex;

use cudarc::cublas::CudaBlas;
use cudarc::cublas::result::{self as cublas_result, CublasError};
use cudarc::cublas::sys::{self as cublas_sys, cublasOperation_t};

use crate::error::{Result, SafeError};
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};
use unigpu_core::DType;

mod sealed {
    pub trait Sealed {}
}

/// The element types cuBLAS multiplies: f32 and f64 natively, f16 and
/// bf16 with f32 accumulation.
pub trait GemmElement: Element + sealed::Sealed {
    const ONE: Self;
    const ZERO: Self;

    /// `C = A·B` in cuBLAS's column-major terms, on raw device addresses.
    ///
    /// # Safety
    /// `a`, `b` and `c` hold the elements `cfg` reaches, in the context of
    /// `blas`'s stream, ordered on it after their conflicting uses.
    #[doc(hidden)]
    unsafe fn gemm(
        handle: cublas_sys::cublasHandle_t,
        cfg: Gemm<Self>,
        a: u64,
        b: u64,
        c: u64,
    ) -> std::result::Result<(), CublasError>;
}

/// The shape of one product, as cuBLAS takes it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Gemm<T> {
    m: i32,
    n: i32,
    k: i32,
    alpha: T,
    beta: T,
}

macro_rules! native_gemm {
    ($($t:ty => $f:ident);*) => {$(
        impl sealed::Sealed for $t {}
        impl GemmElement for $t {
            const ONE: Self = 1.0;
            const ZERO: Self = 0.0;

            unsafe fn gemm(
                handle: cublas_sys::cublasHandle_t,
                g: Gemm<Self>,
                a: u64,
                b: u64,
                c: u64,
            ) -> std::result::Result<(), CublasError> {
                let n = cublasOperation_t::CUBLAS_OP_N;
                // SAFETY: forwarded from this function's contract; the
                // leading dimensions are those of contiguous matrices.
                unsafe {
                    cublas_result::$f(
                        handle, n, n, g.m, g.n, g.k, &g.alpha, a as *const $t, g.m.max(1),
                        b as *const $t, g.k.max(1), &g.beta, c as *mut $t, g.m.max(1),
                    )
                }
            }
        }
    )*};
}
native_gemm!(f32 => sgemm; f64 => dgemm);

macro_rules! half_gemm {
    ($($t:ty => $dtype:ident);*) => {$(
        impl sealed::Sealed for $t {}
        impl GemmElement for $t {
            const ONE: Self = <$t>::ONE;
            const ZERO: Self = <$t>::ZERO;

            unsafe fn gemm(
                handle: cublas_sys::cublasHandle_t,
                g: Gemm<Self>,
                a: u64,
                b: u64,
                c: u64,
            ) -> std::result::Result<(), CublasError> {
                let n = cublasOperation_t::CUBLAS_OP_N;
                let dtype = cublas_sys::cudaDataType_t::$dtype;
                // Scaling factors are in the f32 compute type.
                let (alpha, beta) = (g.alpha.to_f32(), g.beta.to_f32());
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    cublas_result::gemm_ex(
                        handle, n, n, g.m, g.n, g.k,
                        (&alpha as *const f32).cast(), a as *const _, dtype, g.m.max(1),
                        b as *const _, dtype, g.k.max(1),
                        (&beta as *const f32).cast(), c as *mut _, dtype, g.m.max(1),
                        cublas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                    )
                }
            }
        }
    )*};
}
half_gemm!(half::f16 => CUDA_R_16F; half::bf16 => CUDA_R_16BF);

/// A cuBLAS handle. Created lazily because `cublasCreate` costs
/// milliseconds. Send + Sync: calls are serialised by the mutex, since a
/// handle's bound stream is mutable state.
#[derive(Debug)]
pub struct BlasHandle {
    blas: Mutex<CudaBlas>,
    device: CudaDevice,
}

impl BlasHandle {
    pub fn new(stream: &CudaStreamHandle) -> Result<Self> {
        let status = unigpu_cuda_sys::probe::cublas_status();
        if let Some(reason) = &status.reason {
            return Err(SafeError::Unavailable {
                reason: format!("libcublas (needed for matmul): {reason}"),
            });
        }
        let blas = CudaBlas::new(stream.cudarc_stream().clone())
            .map_err(|e| cublas_error("cublasCreate", e))?;
        // f16/bf16 products accumulate in f32, as `GemmElement` promises:
        // by default cuBLAS may also reduce split-K partials in f16/bf16.
        let mode =
            cudarc::cublas::sys::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
        // SAFETY: the handle was just created and is not shared yet.
        unsafe { cudarc::cublas::sys::cublasSetMathMode(*blas.handle(), mode) }
            .result()
            .map_err(|e| cublas_error("cublasSetMathMode", e))?;
        Ok(BlasHandle {
            blas: Mutex::new(blas),
            device: stream.device().clone(),
        })
    }

    /// `c = a · b` with row-major `a` (m×k), `b` (k×n), `c` (m×n), on
    /// `stream`, for any element type (so that callers generic over
    /// `unigpu-core`'s elements need no cuBLAS bound): the ones cuBLAS
    /// multiplies ([`GemmElement`]: f32, f64, f16, bf16) run, the integer
    /// ones are `Unsupported`.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_row_major<T: Element>(
        &self,
        stream: &CudaStreamHandle,
        m: usize,
        n: usize,
        k: usize,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let typed = match T::DTYPE {
            DType::F32 => self.gemm_as::<f32, T>(stream, m, n, k, a, b, c),
            DType::F64 => self.gemm_as::<f64, T>(stream, m, n, k, a, b, c),
            DType::F16 => self.gemm_as::<half::f16, T>(stream, m, n, k, a, b, c),
            DType::BF16 => self.gemm_as::<half::bf16, T>(stream, m, n, k, a, b, c),
            DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::U8 => None,
        };
        typed.unwrap_or_else(|| {
            Err(SafeError::Unsupported {
                what: format!(
                    "matmul of {} (cuBLAS multiplies f32, f64, f16 and bf16)",
                    T::DTYPE
                ),
            })
        })
    }

    /// [`Self::gemm`] on buffers of `T` seen as buffers of `G`; `None`
    /// unless `T` is `G`.
    #[allow(clippy::too_many_arguments)]
    fn gemm_as<G: GemmElement, T: Element>(
        &self,
        stream: &CudaStreamHandle,
        m: usize,
        n: usize,
        k: usize,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
    ) -> Option<Result<()>> {
        let a = (a as &dyn Any).downcast_ref::<DeviceBuffer<G>>()?;
        let b = (b as &dyn Any).downcast_ref::<DeviceBuffer<G>>()?;
        let c = (c as &mut dyn Any).downcast_mut::<DeviceBuffer<G>>()?;
        Some(self.gemm(stream, m, n, k, a, b, c))
    }

    /// [`Self::gemm_row_major`] for one type cuBLAS multiplies.
    #[allow(clippy::too_many_arguments)]
    fn gemm<T: GemmElement>(
        &self,
        stream: &CudaStreamHandle,
        m: usize,
        n: usize,
        k: usize,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        for (what, buf, rows, cols) in [("matmul a", a.len(), m, k), ("matmul b", b.len(), k, n)] {
            check(what, rows.checked_mul(cols), buf)?;
        }
        check("matmul c", m.checked_mul(n), c.len())?;
        if stream.device() != &self.device
            || a.device() != &self.device
            || b.device() != &self.device
        {
            return Err(SafeError::DeviceMismatch { what: "matmul" });
        }
        let dim = |v: usize| {
            i32::try_from(v).map_err(|_| SafeError::SizeMismatch {
                what: "matmul dimension (cuBLAS takes 32-bit sizes)",
                expected: i32::MAX as usize,
                actual: v,
            })
        };
        let (m32, n32, k32) = (dim(m)?, dim(n)?, dim(k)?);
        if m == 0 || n == 0 {
            return Ok(());
        }
        let mut blas = self.blas.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the new stream belongs to this handle's device (checked
        // above) and outlives the call through its Arc.
        unsafe { blas.set_stream(stream.cudarc_stream().clone()) }
            .map_err(|e| cublas_error("cublasSetStream", e))?;
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands.
        let shape = Gemm {
            m: n32,
            n: m32,
            k: k32,
            alpha: T::ONE,
            beta: T::ZERO,
        };
        let ((pa, _end_a), (pb, _end_b)) = (a.ptr_for_read(stream)?, b.ptr_for_read(stream)?);
        let (pc, _end_c) = c.ptr_for_write(stream)?;
        // SAFETY: every buffer's length was checked against its dimensions
        // above, so cuBLAS reads and writes only inside them, and each is
        // ordered on the handle's stream (set above).
        unsafe { T::gemm(*blas.handle(), shape, pb, pa, pc) }
            .map_err(|e| cublas_error("cublasGemmEx", e))
    }
}

fn check(what: &'static str, expected: Option<usize>, actual: usize) -> Result<()> {
    match expected {
        Some(e) if e == actual => Ok(()),
        e => Err(SafeError::SizeMismatch {
            what,
            expected: e.unwrap_or(usize::MAX),
            actual,
        }),
    }
}

fn cublas_error(call: &'static str, e: CublasError) -> SafeError {
    SafeError::Driver {
        call,
        code: e.0 as u32,
        name: format!("{:?}", e.0),
        message: "cuBLAS call failed".into(),
    }
}
