//! [`Scalar`]: a plain value passed to a kernel, with its element type.

use crate::element::{DType, Element};

/// A plain value passed to a kernel. Each backend passes it its own way
/// (the CUDA layer as a `KernelParam`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scalar {
    dtype: DType,
    bits: [u8; 8],
}

impl Scalar {
    pub fn new<T: Element>(value: T) -> Self {
        let mut bits = [0u8; 8];
        bits[..std::mem::size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&value));
        Scalar {
            dtype: T::DTYPE,
            bits,
        }
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// A value of `dtype` from its native-endian bytes (exactly
    /// `dtype.size_bytes()` of them), for callers that hold untyped data.
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> Option<Self> {
        (bytes.len() == dtype.size_bytes()).then(|| {
            let mut bits = [0u8; 8];
            bits[..bytes.len()].copy_from_slice(bytes);
            Scalar { dtype, bits }
        })
    }

    /// The value's native-endian bytes (`dtype().size_bytes()` of them).
    pub fn bytes(&self) -> &[u8] {
        &self.bits[..self.dtype.size_bytes()]
    }

    /// `value` converted to `dtype` as `as` would (saturating for integers,
    /// rounding to nearest for floats).
    pub fn from_f64(dtype: DType, value: f64) -> Self {
        crate::with_dtype!(dtype, T => Scalar::new(<T as num_traits::NumCast>::from(value).unwrap_or_else(|| saturate::<T>(value))))
    }

    /// The value as an f64 (exact for every dtype but the 64-bit integers
    /// past 2^53).
    pub fn to_f64(&self) -> f64 {
        crate::with_dtype!(self.dtype, T => self.get::<T>().and_then(|v| num_traits::ToPrimitive::to_f64(&v)).unwrap_or(f64::NAN))
    }

    /// The value, if it is a `T`.
    pub fn get<T: Element>(&self) -> Option<T> {
        (self.dtype == T::DTYPE)
            .then(|| bytemuck::pod_read_unaligned(&self.bits[..std::mem::size_of::<T>()]))
    }
}

/// An out-of-range or NaN `value` as the nearest `T` (NaN becomes 0), the
/// way Rust's `as` converts floats to integers.
fn saturate<T: Element + num_traits::Bounded + num_traits::NumCast>(value: f64) -> T {
    if value.is_nan() {
        T::default()
    } else if value > 0.0 {
        T::max_value()
    } else {
        T::min_value()
    }
}
