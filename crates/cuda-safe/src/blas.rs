//! cuBLAS matrix products, row-major.

use std::any::Any;
use std::sync::Mutex;

use cudarc::cublas::CudaBlas;
use cudarc::cublas::result::{self as cublas_result, CublasError};
use cudarc::cublas::sys::{self as cublas_sys, cublasOperation_t};

use crate::error::{Result, SafeError};
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element};
use unigpu_core::{DType, GemmShape};

mod sealed {
    pub trait Sealed {}
}

/// The element types cuBLAS multiplies: f32 and f64 natively, f16 and
/// bf16 with f32 accumulation.
pub trait GemmElement: Element + sealed::Sealed {
    const ONE: Self;
    const ZERO: Self;

    /// `C = op(A)·op(B)` in cuBLAS's column-major terms, `cfg.batch`
    /// times, on raw device addresses.
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

/// The shape of one (batched) product, as cuBLAS takes it (column-major).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Gemm<T> {
    m: i32,
    n: i32,
    k: i32,
    alpha: T,
    beta: T,
    op_a: cublasOperation_t,
    op_b: cublasOperation_t,
    lda: i32,
    ldb: i32,
    ldc: i32,
    stride_a: i64,
    stride_b: i64,
    stride_c: i64,
    batch: i32,
}

macro_rules! native_gemm {
    ($($t:ty => $f:ident, $batched:ident);*) => {$(
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
                if g.batch == 1 {
                    // SAFETY: forwarded from this function's contract.
                    return unsafe {
                        cublas_result::$f(
                            handle, g.op_a, g.op_b, g.m, g.n, g.k, &g.alpha, a as *const $t, g.lda,
                            b as *const $t, g.ldb, &g.beta, c as *mut $t, g.ldc,
                        )
                    };
                }
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    cublas_result::$batched(
                        handle, g.op_a, g.op_b, g.m, g.n, g.k, &g.alpha, a as *const $t, g.lda,
                        g.stride_a, b as *const $t, g.ldb, g.stride_b, &g.beta, c as *mut $t,
                        g.ldc, g.stride_c, g.batch,
                    )
                }
            }
        }
    )*};
}
native_gemm!(f32 => sgemm, sgemm_strided_batched; f64 => dgemm, dgemm_strided_batched);

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
                let dtype = cublas_sys::cudaDataType_t::$dtype;
                // Scaling factors are in the f32 compute type.
                let (alpha, beta) = (g.alpha.to_f32(), g.beta.to_f32());
                let (alpha, beta) = ((&alpha as *const f32).cast(), (&beta as *const f32).cast());
                let compute = cublas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F;
                let algo = cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
                if g.batch == 1 {
                    // SAFETY: forwarded from this function's contract.
                    return unsafe {
                        cublas_result::gemm_ex(
                            handle, g.op_a, g.op_b, g.m, g.n, g.k,
                            alpha, a as *const _, dtype, g.lda,
                            b as *const _, dtype, g.ldb,
                            beta, c as *mut _, dtype, g.ldc,
                            compute, algo,
                        )
                    };
                }
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    cublas_result::gemm_strided_batched_ex(
                        handle, g.op_a, g.op_b, g.m, g.n, g.k,
                        alpha, a as *const _, dtype, g.lda, g.stride_a,
                        b as *const _, dtype, g.ldb, g.stride_b,
                        beta, c as *mut _, dtype, g.ldc, g.stride_c,
                        g.batch, compute, algo,
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

    /// `c[z] = a[z] · b[z]` for each product of `shape` (the operands
    /// where it places them: offsets, leading dimensions, batch strides,
    /// transposed storage; `c` dense row-major), on `stream`, for any
    /// element type (so that callers generic over `unigpu-core`'s elements
    /// need no cuBLAS bound): the ones cuBLAS multiplies ([`GemmElement`]:
    /// f32, f64, f16, bf16) run, the integer ones are `Unsupported`.
    pub fn gemm_row_major<T: Element>(
        &self,
        stream: &CudaStreamHandle,
        shape: &GemmShape,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let typed = match T::DTYPE {
            DType::F32 => self.gemm_as::<f32, T>(stream, shape, a, b, c),
            DType::F64 => self.gemm_as::<f64, T>(stream, shape, a, b, c),
            DType::F16 => self.gemm_as::<half::f16, T>(stream, shape, a, b, c),
            DType::BF16 => self.gemm_as::<half::bf16, T>(stream, shape, a, b, c),
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
    fn gemm_as<G: GemmElement, T: Element>(
        &self,
        stream: &CudaStreamHandle,
        shape: &GemmShape,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
    ) -> Option<Result<()>> {
        let a = (a as &dyn Any).downcast_ref::<DeviceBuffer<G>>()?;
        let b = (b as &dyn Any).downcast_ref::<DeviceBuffer<G>>()?;
        let c = (c as &mut dyn Any).downcast_mut::<DeviceBuffer<G>>()?;
        Some(self.gemm(stream, shape, a, b, c))
    }

    /// [`Self::gemm_row_major`] for one type cuBLAS multiplies.
    fn gemm<T: GemmElement>(
        &self,
        stream: &CudaStreamHandle,
        shape: &GemmShape,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        shape
            .check(a.len(), b.len(), c.len())
            .map_err(|what| SafeError::Unsupported { what })?;
        if stream.device() != &self.device
            || a.device() != &self.device
            || b.device() != &self.device
        {
            return Err(SafeError::DeviceMismatch { what: "matmul" });
        }
        let GemmShape { batch, m, k, n, .. } = *shape;
        if batch == 0 || m == 0 || n == 0 {
            return Ok(());
        }
        let dim = |v: usize| {
            i32::try_from(v).map_err(|_| SafeError::SizeMismatch {
                what: "matmul dimension, leading dimension or batch count (cuBLAS takes 32-bit sizes)",
                expected: i32::MAX as usize,
                actual: v,
            })
        };
        let stride = |v: usize| {
            i64::try_from(v).map_err(|_| SafeError::SizeMismatch {
                what: "matmul batch stride",
                expected: i64::MAX as usize,
                actual: v,
            })
        };
        let op = |transposed| {
            if transposed {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands.
        // A row-major matrix read column-major is its transpose already
        // (no op); a transposed (column-major) one needs op T.
        let (sa, sb) = (&shape.a, &shape.b);
        let cfg = Gemm {
            m: dim(n)?,
            n: dim(m)?,
            k: dim(k)?,
            alpha: T::ONE,
            beta: T::ZERO,
            op_a: op(sb.transposed),
            op_b: op(sa.transposed),
            lda: dim(sb.ld)?,
            ldb: dim(sa.ld)?,
            ldc: dim(n)?,
            stride_a: stride(sb.batch_stride)?,
            stride_b: stride(sa.batch_stride)?,
            stride_c: stride(m * n)?,
            batch: dim(batch)?,
        };
        let mut blas = self.blas.lock().unwrap_or_else(|e| e.into_inner());
        // cuBLAS runs in the thread's current context, which must be the
        // handle's: one thread driving several GPUs may have left another
        // device's bound (CUBLAS_STATUS_INTERNAL_ERROR otherwise).
        stream.bind()?;
        // SAFETY: the new stream belongs to this handle's device (checked
        // above) and outlives the call through its Arc.
        unsafe { blas.set_stream(stream.cudarc_stream().clone()) }
            .map_err(|e| cublas_error("cublasSetStream", e))?;
        let ((pa, _end_a), (pb, _end_b)) = (a.ptr_for_read(stream)?, b.ptr_for_read(stream)?);
        let (pc, _end_c) = c.ptr_for_write(stream)?;
        let at = |p: u64, offset: usize| p + (offset * std::mem::size_of::<T>()) as u64;
        let (pa, pb) = (at(pa, sa.offset), at(pb, sb.offset));
        // SAFETY: `shape.check` above put every element each operand's
        // offset, leading dimension and batch stride reach inside its
        // buffer, and `c` is exactly batch × m × n, so cuBLAS reads and
        // writes only inside them (with k = 0 it reads nothing); each is
        // ordered on the handle's stream (set above).
        unsafe { T::gemm(*blas.handle(), cfg, pb, pa, pc) }
            .map_err(|e| cublas_error("cublas gemm (strided batched)", e))
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
