//! The element types an array can hold, on every backend: the [`Element`]
//! trait and its runtime tag [`DType`].

use std::fmt::{self, Debug};
use std::str::FromStr;

use crate::dlpack::ffi::{self, DLDataType};

/// A runtime tag for an element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DType {
    #[default]
    F32,
    F64,
    F16,
    BF16,
    I32,
    U32,
    I64,
    U64,
    U8,
}

impl DType {
    pub const ALL: [DType; 9] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::U8,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::U8 => "u8",
        }
    }

    /// Whether this is an integer type (signed or not).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::U8
        )
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// The DLPack dtype of this element type.
    pub fn dlpack(self) -> DLDataType {
        crate::with_dtype!(self, T => T::DLPACK)
    }

    /// The element type of a DLPack dtype, if there is one.
    pub fn from_dlpack(d: DLDataType) -> Option<DType> {
        DType::ALL.into_iter().find(|t| t.dlpack() == d)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        DType::ALL.into_iter().find(|d| d.name() == s).ok_or(())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A plain number type that can live in an array: f32, f64, i32, u32,
/// i64, u64, u8, and `half::f16` / `half::bf16`. Sealed: every bit pattern
/// is a valid value (`Pod`), so reading memory a device wrote can never
/// produce an invalid Rust value. Backends implement their own traits for
/// these types (the CUDA layer its kernel parameters and cuBLAS types).
pub trait Element:
    bytemuck::Pod + Default + Debug + PartialEq + Send + Sync + 'static + sealed::Sealed
{
    const DTYPE: DType;
    /// The element's DLPack dtype.
    const DLPACK: DLDataType;
    /// `x` passed to the method of `F` for this type: how code generic
    /// over `T: Element` reaches per-type code without naming it here
    /// (`AnyArray::from` is one such).
    #[doc(hidden)]
    fn pick<F: PerDtype>(x: F::Of<Self>) -> F::Out;
}

/// Something done differently for each element type: one method per
/// type, reached from generic code through [`Element::pick`].
#[doc(hidden)]
pub trait PerDtype {
    type Of<T: Element>;
    type Out;
    fn f32(x: Self::Of<f32>) -> Self::Out;
    fn f64(x: Self::Of<f64>) -> Self::Out;
    fn f16(x: Self::Of<half::f16>) -> Self::Out;
    fn bf16(x: Self::Of<half::bf16>) -> Self::Out;
    fn i32(x: Self::Of<i32>) -> Self::Out;
    fn u32(x: Self::Of<u32>) -> Self::Out;
    fn i64(x: Self::Of<i64>) -> Self::Out;
    fn u64(x: Self::Of<u64>) -> Self::Out;
    fn u8(x: Self::Of<u8>) -> Self::Out;
}

macro_rules! element {
    ($($t:ty => $d:ident, $m:ident, $code:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            const DLPACK: DLDataType = DLDataType {
                code: ffi::$code,
                bits: (8 * std::mem::size_of::<$t>()) as u8,
                lanes: 1,
            };
            fn pick<F: PerDtype>(x: F::Of<Self>) -> F::Out {
                F::$m(x)
            }
        }
    )*};
}
element!(
    f32 => F32, f32, kDLFloat, f64 => F64, f64, kDLFloat,
    half::f16 => F16, f16, kDLFloat, half::bf16 => BF16, bf16, kDLBfloat,
    i32 => I32, i32, kDLInt, u32 => U32, u32, kDLUInt,
    i64 => I64, i64, kDLInt, u64 => U64, u64, kDLUInt, u8 => U8, u8, kDLUInt
);

/// Runs `$body` with `$T` as the element type named by `$dtype` (a
/// [`DType`]).
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_round_trip_through_names_and_dlpack() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
            assert_eq!(DType::from_dlpack(d.dlpack()), Some(d));
            assert_eq!(usize::from(d.dlpack().bits), 8 * d.size_bytes());
        }
        assert_eq!(f32::DLPACK.code, ffi::kDLFloat);
        assert_eq!(half::bf16::DLPACK.code, ffi::kDLBfloat);
        assert_eq!(u8::DLPACK.code, ffi::kDLUInt);
        assert_eq!(
            DType::from_dlpack(DLDataType {
                code: ffi::kDLFloat,
                bits: 32,
                lanes: 4
            }),
            None
        );
    }
}
