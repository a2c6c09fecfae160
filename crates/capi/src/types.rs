//! The C enums (backend, dtype, argument kind, fallback outcome) and
//! scalars, with the checked conversions of values that come in from C.
//!
//! C can pass any integer where an enum is expected, and a Rust enum holding
//! an undeclared value is undefined behaviour, so enum *inputs* are taken as
//! `uint32_t` and converted here (`UG_INVALID_ARGUMENT` on unknown values);
//! only values that Rust writes out are typed as the enums.

use unigpu::{Backend, DType, Scalar};
use unigpu_capi_runtime::{self as runtime, Failure};

use crate::status::{Out, Result, ug_status};

/// A backend. Inputs are `uint32_t` holding one of these values.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_backend {
    /// libtorch's CUDA device (built with the `torch` feature).
    Torch = 0,
    /// The CUDA driver directly.
    Cuda = 1,
    /// Vulkan through wgpu (AMD, Intel and NVIDIA GPUs; lavapipe on the
    /// CPU); `UG_BACKEND_UNAVAILABLE` without a Vulkan loader or adapter.
    Vulkan = 2,
    /// The CPU backend, always available.
    Cpu = 3,
}

/// An element type. Inputs are `uint32_t` holding one of these values.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_dtype {
    F32 = 0,
    F64 = 1,
    /// IEEE half precision; C sees its bits as `uint16_t`.
    F16 = 2,
    /// bfloat16; C sees its bits as `uint16_t`.
    BF16 = 3,
    I32 = 4,
    U32 = 5,
    I64 = 6,
    U64 = 7,
    U8 = 8,
}

/// What one kernel argument is.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_arg_kind {
    /// A value (`ug_arg.scalar`).
    Scalar = 0,
    /// An array the kernel reads (`const T*` in the kernel).
    ArrayIn = 1,
    /// An array the kernel writes, and may read (`T*` in the kernel).
    ArrayOut = 2,
}

/// How one backend fared when a context was created.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ug_outcome {
    /// This backend was chosen.
    Chosen = 0,
    /// Skipped; the reason says why (excluded by the config, or failed to open).
    Skipped = 1,
    /// Not tried: an earlier backend was chosen.
    NotTried = 2,
}

/// The bits of one scalar; the field read is the one its `ug_dtype` names.
/// f16 and bf16 values are their IEEE / bfloat16 bit patterns.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ug_value {
    pub f32: f32,
    pub f64: f64,
    pub f16: u16,
    pub bf16: u16,
    pub i32: i32,
    pub u32: u32,
    pub i64: i64,
    pub u64: u64,
    pub u8: u8,
}

/// A value of one element type: a kernel argument, an op's scalar operand
/// or a reduction's result. Make one with `ug_scalar_f32()` etc. or
/// `ug_scalar_from_f64()`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ug_scalar {
    /// A `ug_dtype` value.
    pub dtype: u32,
    pub value: ug_value,
}

impl std::fmt::Debug for ug_value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ug_value")
    }
}

impl std::fmt::Debug for ug_scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ug_scalar {{ dtype: {} }}", self.dtype)
    }
}

impl ug_backend {
    pub(crate) fn from_facade(b: Backend) -> ug_backend {
        match b {
            Backend::Torch => ug_backend::Torch,
            Backend::Cuda => ug_backend::Cuda,
            Backend::Vulkan => ug_backend::Vulkan,
            Backend::Cpu => ug_backend::Cpu,
        }
    }
}

/// A backend value from C.
pub(crate) fn backend_arg(value: u32) -> Result<Backend> {
    match value {
        0 => Ok(Backend::Torch),
        1 => Ok(Backend::Cuda),
        2 => Ok(Backend::Vulkan),
        3 => Ok(Backend::Cpu),
        other => Err(Failure::invalid_argument(format!(
            "`backend` is {other}, not a ug_backend value (UG_BACKEND_TORCH 0, UG_BACKEND_CUDA 1, UG_BACKEND_VULKAN 2, UG_BACKEND_CPU 3)"
        ))),
    }
}

impl ug_dtype {
    pub(crate) fn from_facade(d: DType) -> ug_dtype {
        match d {
            DType::F32 => ug_dtype::F32,
            DType::F64 => ug_dtype::F64,
            DType::F16 => ug_dtype::F16,
            DType::BF16 => ug_dtype::BF16,
            DType::I32 => ug_dtype::I32,
            DType::U32 => ug_dtype::U32,
            DType::I64 => ug_dtype::I64,
            DType::U64 => ug_dtype::U64,
            DType::U8 => ug_dtype::U8,
        }
    }
}

/// A dtype value from C; `what` names the parameter.
pub(crate) fn dtype_arg(value: u32, what: &str) -> Result<DType> {
    usize::try_from(value)
        .ok()
        .and_then(|i| DType::ALL.get(i).copied())
        .ok_or_else(|| {
            Failure::invalid_argument(format!(
                "`{what}` is {value}, not a ug_dtype value (0 to 8: f32 f64 f16 bf16 i32 u32 i64 u64 u8)"
            ))
        })
}

/// A scalar from C as the facade's [`Scalar`]: reads the union field its
/// dtype names, and only that one.
pub(crate) fn scalar_arg(s: &ug_scalar, what: &str) -> Result<Scalar> {
    let dtype = dtype_arg(s.dtype, what)?;
    let v = s.value;
    // SAFETY: every field of `ug_value` is plain data; the field read is the
    // one the dtype names, which C set (reading only its bytes, so unset
    // bytes of the union are never read).
    let scalar = unsafe {
        match dtype {
            DType::F32 => Scalar::new(v.f32),
            DType::F64 => Scalar::new(v.f64),
            DType::F16 => Scalar::new(unigpu::f16::from_bits(v.f16)),
            DType::BF16 => Scalar::new(unigpu::bf16::from_bits(v.bf16)),
            DType::I32 => Scalar::new(v.i32),
            DType::U32 => Scalar::new(v.u32),
            DType::I64 => Scalar::new(v.i64),
            DType::U64 => Scalar::new(v.u64),
            DType::U8 => Scalar::new(v.u8),
        }
    };
    Ok(scalar)
}

/// The facade's scalar as a C scalar.
pub(crate) fn to_c_scalar(s: Scalar) -> ug_scalar {
    let b = s.bytes();
    let value = match s.dtype() {
        DType::F32 => ug_value {
            f32: f32::from_ne_bytes(arr(b)),
        },
        DType::F64 => ug_value {
            f64: f64::from_ne_bytes(arr(b)),
        },
        DType::F16 => ug_value {
            f16: u16::from_ne_bytes(arr(b)),
        },
        DType::BF16 => ug_value {
            bf16: u16::from_ne_bytes(arr(b)),
        },
        DType::I32 => ug_value {
            i32: i32::from_ne_bytes(arr(b)),
        },
        DType::U32 => ug_value {
            u32: u32::from_ne_bytes(arr(b)),
        },
        DType::I64 => ug_value {
            i64: i64::from_ne_bytes(arr(b)),
        },
        DType::U64 => ug_value {
            u64: u64::from_ne_bytes(arr(b)),
        },
        DType::U8 => ug_value { u8: b[0] },
    };
    let mut out = ug_scalar {
        dtype: ug_dtype::from_facade(s.dtype()) as u32,
        value: ug_value { u64: 0 },
    };
    out.value = value;
    out
}

/// The first `N` bytes of `b` (a scalar's bytes always have its size).
fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// A zeroed scalar of `dtype` with `set` applied to its value.
fn scalar_of(dtype: ug_dtype, value: ug_value) -> ug_scalar {
    let mut s = ug_scalar {
        dtype: dtype as u32,
        value: ug_value { u64: 0 },
    };
    s.value = value;
    s
}

/// An f32 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_f32(value: f32) -> ug_scalar {
    scalar_of(ug_dtype::F32, ug_value { f32: value })
}

/// An f64 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_f64(value: f64) -> ug_scalar {
    scalar_of(ug_dtype::F64, ug_value { f64: value })
}

/// An f16 scalar from its IEEE half-precision bits.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_f16_bits(bits: u16) -> ug_scalar {
    scalar_of(ug_dtype::F16, ug_value { f16: bits })
}

/// A bf16 scalar from its bfloat16 bits.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_bf16_bits(bits: u16) -> ug_scalar {
    scalar_of(ug_dtype::BF16, ug_value { bf16: bits })
}

/// An i32 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_i32(value: i32) -> ug_scalar {
    scalar_of(ug_dtype::I32, ug_value { i32: value })
}

/// A u32 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_u32(value: u32) -> ug_scalar {
    scalar_of(ug_dtype::U32, ug_value { u32: value })
}

/// An i64 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_i64(value: i64) -> ug_scalar {
    scalar_of(ug_dtype::I64, ug_value { i64: value })
}

/// A u64 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_u64(value: u64) -> ug_scalar {
    scalar_of(ug_dtype::U64, ug_value { u64: value })
}

/// A u8 scalar.
#[unsafe(no_mangle)]
pub extern "C" fn ug_scalar_u8(value: u8) -> ug_scalar {
    scalar_of(ug_dtype::U8, ug_value { u8: value })
}

/// `value` converted to `dtype` (a `ug_dtype`) as Rust's `as` would:
/// rounded to nearest for floats (f16 and bf16 included), truncated and
/// saturated for integers, NaN to 0. The way to make f16/bf16 values in C.
///
/// # Safety
///
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_scalar_from_f64(
    dtype: u32,
    value: f64,
    out: *mut ug_scalar,
) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        let dtype = dtype_arg(dtype, "dtype")?;
        out.write(to_c_scalar(Scalar::from_f64(dtype, value)));
        Ok(())
    })
}

/// The value of `scalar` as a double (exact for every dtype but 64-bit
/// integers past 2^53). The way to read f16/bf16 values in C.
///
/// # Safety
///
/// `scalar` is NULL or points to a `ug_scalar`; `out` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ug_scalar_to_f64(scalar: *const ug_scalar, out: *mut f64) -> ug_status {
    runtime::guard(|| {
        // SAFETY: NULL or valid for writes (see # Safety).
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: NULL or a live ug_scalar (see # Safety).
        let scalar = unsafe { runtime::handle_ref(scalar, "scalar") }?;
        let s = scalar_arg(scalar, "scalar.dtype")?;
        out.write(s.to_f64());
        Ok(())
    })
}

/// The size of one element of `dtype` in bytes, or 0 if `dtype` is not a
/// `ug_dtype` value.
#[unsafe(no_mangle)]
pub extern "C" fn ug_dtype_size(dtype: u32) -> usize {
    usize::try_from(dtype)
        .ok()
        .and_then(|i| DType::ALL.get(i))
        .map_or(0, |d| d.size_bytes())
}

/// Every facade backend has a `ug_backend` value that C can pass back
/// (`backend_arg`, by number, is not checked by the compiler) and that the
/// header names: a new backend fails here until the C API knows it.
#[cfg(test)]
mod every_backend {
    use super::{Backend, backend_arg, ug_backend};

    #[test]
    fn round_trips_through_c_and_is_in_the_header() {
        let header = include_str!("../../../include/unigpu.h");
        for b in Backend::ALL {
            let value = ug_backend::from_facade(b) as u32;
            assert_eq!(backend_arg(value).ok(), Some(b));
            let name = format!("UG_BACKEND_{} = {value},", b.name().to_uppercase());
            assert!(header.contains(&name), "include/unigpu.h lacks `{name}`");
        }
    }
}
