//! Typed kernel arguments: scalars, `&GpuArray` (read) and `&mut GpuArray`
//! (written), packed from a tuple.

use std::any::Any;
use std::sync::Arc;

use unigpu_cuda_safe::dlpack::{HostArray, HostRead, HostWrite};

use unigpu_cuda_safe::KernelParam;

use crate::array::Storage;
use crate::backend::cpu::Tracker;
use crate::{DType, Element, Error, GpuArray, Result};

/// A plain value passed to a kernel.
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
        crate::any_array::with_dtype!(dtype, T => Scalar::new(<T as num_traits::NumCast>::from(value).unwrap_or_else(|| saturate::<T>(value))))
    }

    /// The value as an f64 (exact for every dtype but the 64-bit integers
    /// past 2^53).
    pub fn to_f64(&self) -> f64 {
        crate::any_array::with_dtype!(self.dtype, T => self.get::<T>().and_then(|v| num_traits::ToPrimitive::to_f64(&v)).unwrap_or(f64::NAN))
    }

    /// The value, if it is a `T`.
    pub fn get<T: Element>(&self) -> Option<T> {
        (self.dtype == T::DTYPE)
            .then(|| bytemuck::pod_read_unaligned(&self.bits[..std::mem::size_of::<T>()]))
    }

    pub(crate) fn to_param<'p>(self) -> KernelParam<'p> {
        match self.dtype {
            DType::F32 => KernelParam::F32(self.get().unwrap_or_default()),
            DType::F64 => KernelParam::F64(self.get().unwrap_or_default()),
            DType::I32 => KernelParam::I32(self.get().unwrap_or_default()),
            DType::U32 => KernelParam::U32(self.get().unwrap_or_default()),
            DType::I64 => KernelParam::I64(self.get().unwrap_or_default()),
            DType::U64 => KernelParam::U64(self.get().unwrap_or_default()),
            DType::U8 => KernelParam::U8(self.get().unwrap_or_default()),
            DType::F16 => KernelParam::F16(self.get().unwrap_or_default()),
            DType::BF16 => KernelParam::BF16(self.get().unwrap_or_default()),
        }
    }
}

/// An array of any element type, as a kernel argument. Implemented by
/// `GpuArray<T>` only (sealed).
pub trait ArrayArg: Send + Sync + sealed::Storage {
    fn dtype(&self) -> DType;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub(crate) mod sealed {
    use super::*;

    /// How a launch reaches an array's memory on each backend.
    pub trait Storage {
        fn cuda_param(&self) -> Option<KernelParam<'_>>;
        fn cuda_param_mut(&mut self) -> Option<KernelParam<'_>>;
        fn cpu_slot(&self) -> Option<(Arc<dyn Any + Send + Sync>, Tracker)>;
        #[cfg(feature = "torch")]
        fn torch_buffer(&self) -> Option<&crate::backend::torch::TorchBuffer>;
    }
}

impl<T: Element> ArrayArg for GpuArray<T> {
    fn dtype(&self) -> DType {
        T::DTYPE
    }
    fn len(&self) -> usize {
        GpuArray::len(self)
    }
}

impl<T: Element> sealed::Storage for GpuArray<T> {
    fn cuda_param(&self) -> Option<KernelParam<'_>> {
        match &self.storage {
            Storage::Cuda(b) => Some(KernelParam::Buffer(b)),
            _ => None,
        }
    }
    fn cuda_param_mut(&mut self) -> Option<KernelParam<'_>> {
        match &mut self.storage {
            Storage::Cuda(b) => Some(KernelParam::BufferMut(b)),
            _ => None,
        }
    }
    fn cpu_slot(&self) -> Option<(Arc<dyn Any + Send + Sync>, Tracker)> {
        match &self.storage {
            Storage::Cpu(b) => Some((Arc::new(b.data.clone()), b.uses.clone())),
            _ => None,
        }
    }
    #[cfg(feature = "torch")]
    fn torch_buffer(&self) -> Option<&crate::backend::torch::TorchBuffer> {
        match &self.storage {
            Storage::Torch(b) => Some(b),
            _ => None,
        }
    }
}

/// One argument of a launch.
pub enum Arg<'a> {
    Scalar(Scalar),
    /// Read by the kernel.
    Array(&'a dyn ArrayArg),
    /// Written (and possibly read) by the kernel.
    ArrayMut(&'a mut dyn ArrayArg),
}

impl std::fmt::Debug for Arg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arg::Scalar(s) => write!(f, "Scalar({:?})", s.dtype()),
            Arg::Array(a) => write!(f, "Array({}, len {})", a.dtype(), a.len()),
            Arg::ArrayMut(a) => write!(f, "ArrayMut({}, len {})", a.dtype(), a.len()),
        }
    }
}

/// Anything that can be one kernel argument.
pub trait KernelArg<'a> {
    fn into_arg(self) -> Arg<'a>;
}

macro_rules! scalar_arg {
    ($($t:ty),*) => {$(
        impl<'a> KernelArg<'a> for $t {
            fn into_arg(self) -> Arg<'a> {
                Arg::Scalar(Scalar::new(self))
            }
        }
    )*};
}
scalar_arg!(f32, f64, i32, u32, i64, u64, u8, half::f16, half::bf16);

impl<'a, T: Element> KernelArg<'a> for &'a GpuArray<T> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Array(self)
    }
}

impl<'a, T: Element> KernelArg<'a> for &'a mut GpuArray<T> {
    fn into_arg(self) -> Arg<'a> {
        Arg::ArrayMut(self)
    }
}

impl<'a> KernelArg<'a> for Arg<'a> {
    fn into_arg(self) -> Arg<'a> {
        self
    }
}

/// A whole argument list: a tuple of [`KernelArg`]s (up to 12), or a
/// `Vec<Arg>` built at run time.
pub trait KernelArgs<'a> {
    fn into_args(self) -> Vec<Arg<'a>>;
}

impl<'a> KernelArgs<'a> for Vec<Arg<'a>> {
    fn into_args(self) -> Vec<Arg<'a>> {
        self
    }
}

macro_rules! tuple_args {
    ($($name:ident),*) => {
        impl<'a, $($name: KernelArg<'a>),*> KernelArgs<'a> for ($($name,)*) {
            #[allow(non_snake_case)]
            fn into_args(self) -> Vec<Arg<'a>> {
                let ($($name,)*) = self;
                vec![$($name.into_arg()),*]
            }
        }
    };
}
impl<'a> KernelArgs<'a> for () {
    fn into_args(self) -> Vec<Arg<'a>> {
        Vec::new()
    }
}
tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);
tuple_args!(A, B, C, D, E, F, G, H, I);
tuple_args!(A, B, C, D, E, F, G, H, I, J);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K, L);

/// What a CPU implementation of a kernel sees: the launch's arguments by
/// position, with arrays as locked host slices.
pub struct CpuArgs {
    pub(crate) values: Vec<CpuValue>,
    pub(crate) grid: crate::kernel::Grid,
}

pub(crate) enum CpuValue {
    Scalar(Scalar),
    Array {
        data: Arc<dyn Any + Send + Sync>,
        dtype: DType,
        writable: bool,
    },
}

impl std::fmt::Debug for CpuArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuArgs")
            .field("len", &self.values.len())
            .field("grid", &self.grid)
            .finish()
    }
}

impl CpuArgs {
    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The launch's grid, for implementations that use it.
    pub fn grid(&self) -> crate::kernel::Grid {
        self.grid
    }

    /// Argument `i` as a plain value of type `T`.
    pub fn scalar<T: Element>(&self, i: usize) -> Result<T> {
        match self.values.get(i) {
            Some(CpuValue::Scalar(s)) => s
                .get()
                .ok_or_else(|| arg_error(i, format!("is a {} value, not {}", s.dtype(), T::DTYPE))),
            Some(CpuValue::Array { dtype, .. }) => Err(arg_error(
                i,
                format!("is a GpuArray<{dtype}>, not a {} value", T::DTYPE),
            )),
            None => Err(arg_error(
                i,
                format!("does not exist ({} arguments)", self.len()),
            )),
        }
    }

    /// Argument `i`, an array, for reading.
    pub fn input<T: Element>(&self, i: usize) -> Result<HostRead<'_, T>> {
        Ok(self.array::<T>(i)?.read())
    }

    /// Argument `i`, an array passed as `&mut`, for writing.
    pub fn output<T: Element>(&self, i: usize) -> Result<HostWrite<'_, T>> {
        if let Some(CpuValue::Array {
            writable: false, ..
        }) = self.values.get(i)
        {
            return Err(arg_error(
                i,
                "was passed as &GpuArray; pass &mut to write it".into(),
            ));
        }
        Ok(self.array::<T>(i)?.write())
    }

    fn array<T: Element>(&self, i: usize) -> Result<&HostArray<T>> {
        match self.values.get(i) {
            Some(CpuValue::Array { data, dtype, .. }) => {
                data.downcast_ref::<HostArray<T>>().ok_or_else(|| {
                    arg_error(
                        i,
                        format!("is a GpuArray<{dtype}>, not GpuArray<{}>", T::DTYPE),
                    )
                })
            }
            Some(CpuValue::Scalar(s)) => Err(arg_error(
                i,
                format!("is a {} value, not an array", s.dtype()),
            )),
            None => Err(arg_error(
                i,
                format!("does not exist ({} arguments)", self.len()),
            )),
        }
    }
}

fn arg_error(i: usize, what: String) -> Error {
    Error::KernelArgs {
        kernel: "(CPU implementation)".into(),
        message: format!("argument {i} {what}"),
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
