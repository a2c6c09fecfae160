//! The element types a `GpuArray` can hold.

use std::fmt;
use std::str::FromStr;

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

    pub fn size_bytes(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
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

/// A plain number type that can live in a `GpuArray`: f32, f64, i32, u32,
/// i64, u64, u8, and `half::f16` / `half::bf16`. Sealed through
/// `unigpu_cuda_safe::Element`: every bit pattern is a valid value.
pub trait Element: unigpu_cuda_safe::Element + PartialEq + 'static {
    const DTYPE: DType;
    /// The array as an [`crate::AnyArray`] (use `AnyArray::from`).
    #[doc(hidden)]
    fn into_any(a: crate::GpuArray<Self>) -> crate::AnyArray;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn into_any(a: crate::GpuArray<Self>) -> crate::AnyArray {
                crate::AnyArray::$d(a)
            }
        }
    )*};
}
element!(
    f32 => F32, f64 => F64, half::f16 => F16, half::bf16 => BF16,
    i32 => I32, u32 => U32, i64 => I64, u64 => U64, u8 => U8
);

/// Runs `$body` with `$T` as the element type named by `$dtype`.
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::element::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::element::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::element::DType::F16 => {
                type $T = ::half::f16;
                $body
            }
            $crate::element::DType::BF16 => {
                type $T = ::half::bf16;
                $body
            }
            $crate::element::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::element::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::element::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::element::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::element::DType::U8 => {
                type $T = u8;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;
