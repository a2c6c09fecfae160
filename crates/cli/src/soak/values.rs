//! Random inputs for the soak's steps: lengths, element types and values,
//! all drawn from the step's seeded generator so that a seed replays them.

use std::fmt::Debug;

use rand::Rng;
use rand::rngs::StdRng;
use unigpu::{DType, Element, Float, bf16, f16};

/// An element type the soak moves and checks.
pub trait SoakElement: Element + Copy + Debug + Send + Sync {
    /// Any bit pattern (NaNs and infinities included for the float types):
    /// what a transfer must carry unchanged.
    fn any_bits(rng: &mut StdRng) -> Self {
        let mut value = Self::default();
        rng.fill(bytemuck::bytes_of_mut(&mut value));
        value
    }
}

impl SoakElement for f32 {}
impl SoakElement for f64 {}
impl SoakElement for f16 {}
impl SoakElement for bf16 {}
impl SoakElement for i32 {}
impl SoakElement for u32 {}
impl SoakElement for i64 {}
impl SoakElement for u64 {}
impl SoakElement for u8 {}

/// A float type the built-in ops take, with the precision constants the
/// facade's own op tests bound their results with (crates/unigpu/tests/ops.rs).
pub trait SoakFloat: SoakElement + Float {
    /// Machine epsilon of `Self`.
    const EPS: f64;
    /// Machine epsilon of `Self::Acc`, the type the ops compute in.
    const ACC_EPS: f64;
    /// Half the smallest subnormal of `Self`: the error of one rounding
    /// near zero.
    const TINY: f64;

    fn from_f64(v: f64) -> Self;

    fn to_f64(self) -> f64 {
        self.to_acc().into()
    }

    /// The relative error of rounding a `Self::Acc` result to `Self`.
    fn rounding() -> f64 {
        if Self::EPS > Self::ACC_EPS {
            Self::EPS / 2.0
        } else {
            0.0
        }
    }
}

impl SoakFloat for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    const ACC_EPS: f64 = f32::EPSILON as f64;
    const TINY: f64 = 7.006_492_321_624_085e-46; // 2^-150
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl SoakFloat for f64 {
    const EPS: f64 = f64::EPSILON;
    const ACC_EPS: f64 = f64::EPSILON;
    const TINY: f64 = 5e-324;
    fn from_f64(v: f64) -> Self {
        v
    }
}
impl SoakFloat for f16 {
    const EPS: f64 = 9.765_625e-4; // 2^-10
    const ACC_EPS: f64 = f32::EPSILON as f64;
    const TINY: f64 = 2.980_232_238_769_531_2e-8; // 2^-25
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}
impl SoakFloat for bf16 {
    const EPS: f64 = 7.812_5e-3; // 2^-7
    const ACC_EPS: f64 = f32::EPSILON as f64;
    const TINY: f64 = 4.591_774_807_899_561e-41; // 2^-134
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
}

/// `n` values in [-4, 4]: sums and products of a few stay inside f16's
/// range, as the op tests' inputs do.
pub fn small<T: SoakFloat>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64(rng.random_range(-4.0..=4.0)))
        .collect()
}

/// `n` values of any bit pattern.
pub fn any_bits<T: SoakElement>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::any_bits(rng)).collect()
}

/// A length for one array: empty and single arrays, small odd ones, the
/// edges of 256-thread blocks and of the vulkan backend's vec4 shaders
/// (counts that are not a multiple of 4), and now and then a large one.
pub fn length(rng: &mut StdRng) -> usize {
    match rng.random_range(0..100) {
        0..2 => 0,
        2..20 => rng.random_range(1..=9),
        20..40 => {
            let edge = [
                255usize, 256, 257, 1023, 1024, 1025, 4099, 4100, 65_535, 65_537,
            ];
            edge[rng.random_range(0..edge.len())]
        }
        40..95 => rng.random_range(1..=1 << 16),
        _ => rng.random_range(1 << 16..=MAX_LEN),
    }
}

/// The largest array a step makes: 1 Mi elements, 8 MiB of f64.
pub const MAX_LEN: usize = 1 << 20;
// The kernels take the length as a u32.
const _: () = assert!(MAX_LEN <= u32::MAX as usize);

/// One of the nine element types.
pub fn any_dtype(rng: &mut StdRng) -> DType {
    DType::ALL[rng.random_range(0..DType::ALL.len())]
}

/// One of the four float types the ops take.
pub fn float_dtype(rng: &mut StdRng) -> DType {
    const FLOATS: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];
    FLOATS[rng.random_range(0..FLOATS.len())]
}

/// Runs `$body` with `$T` as the element type named by `$dtype` (any of
/// the nine).
macro_rules! with_any_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            unigpu::DType::F32 => {
                type $T = f32;
                $body
            }
            unigpu::DType::F64 => {
                type $T = f64;
                $body
            }
            unigpu::DType::F16 => {
                type $T = unigpu::f16;
                $body
            }
            unigpu::DType::BF16 => {
                type $T = unigpu::bf16;
                $body
            }
            unigpu::DType::I32 => {
                type $T = i32;
                $body
            }
            unigpu::DType::U32 => {
                type $T = u32;
                $body
            }
            unigpu::DType::I64 => {
                type $T = i64;
                $body
            }
            unigpu::DType::U64 => {
                type $T = u64;
                $body
            }
            unigpu::DType::U8 => {
                type $T = u8;
                $body
            }
        }
    };
}
pub(crate) use with_any_dtype;

/// Runs `$body` with `$T` as the float type named by `$dtype`; an integer
/// type runs it as f32 (callers draw from [`float_dtype`]).
macro_rules! with_float_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            unigpu::DType::F64 => {
                type $T = f64;
                $body
            }
            unigpu::DType::F16 => {
                type $T = unigpu::f16;
                $body
            }
            unigpu::DType::BF16 => {
                type $T = unigpu::bf16;
                $body
            }
            _ => {
                type $T = f32;
                $body
            }
        }
    };
}
pub(crate) use with_float_dtype;
