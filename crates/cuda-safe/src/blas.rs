//! cuBLAS matrix products, row-major.

use std::sync::Mutex;

use cudarc::cublas::result::CublasError;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;

use crate::error::{Result, SafeError};
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};

mod sealed {
    pub trait Sealed {}
}

/// Element types cuBLAS multiplies: f32, f64, and f16/bf16 (accumulated in f32).
pub trait GemmElement: Element + sealed::Sealed {
    const ONE: Self;
    const ZERO: Self;

    /// # Safety
    /// The buffers must be large enough for `cfg`'s dimensions.
    #[doc(hidden)]
    unsafe fn gemm(
        blas: &CudaBlas,
        cfg: GemmConfig<Self>,
        a: &CudaSlice<Self>,
        b: &CudaSlice<Self>,
        c: &mut CudaSlice<Self>,
    ) -> std::result::Result<(), CublasError>;
}

macro_rules! gemm_element {
    ($($t:ty => $one:expr, $zero:expr);*) => {$(
        impl sealed::Sealed for $t {}
        impl GemmElement for $t {
            const ONE: Self = $one;
            const ZERO: Self = $zero;

            unsafe fn gemm(
                blas: &CudaBlas,
                cfg: GemmConfig<Self>,
                a: &CudaSlice<Self>,
                b: &CudaSlice<Self>,
                c: &mut CudaSlice<Self>,
            ) -> std::result::Result<(), CublasError> {
                // SAFETY: forwarded from this function's contract.
                unsafe { Gemm::<$t>::gemm(blas, cfg, a, b, c) }
            }
        }
    )*};
}
gemm_element!(
    f32 => 1.0, 0.0;
    f64 => 1.0, 0.0;
    half::f16 => half::f16::ONE, half::f16::ZERO;
    half::bf16 => half::bf16::ONE, half::bf16::ZERO
);

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

    /// `c = a · b` with row-major `a` (m×k), `b` (k×n), `c` (m×n), on `stream`.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_row_major<T: GemmElement>(
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
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n32,
            n: m32,
            k: k32,
            alpha: T::ONE,
            lda: n32.max(1),
            ldb: k32.max(1),
            beta: T::ZERO,
            ldc: n32.max(1),
        };
        // SAFETY: every buffer's length was checked against its dimensions
        // above, so cuBLAS reads and writes only inside them.
        unsafe { T::gemm(&blas, cfg, b.as_cudarc(), a.as_cudarc(), c.as_cudarc_mut()) }
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
