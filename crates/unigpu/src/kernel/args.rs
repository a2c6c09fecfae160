//! Typed kernel arguments: scalars, `&GpuArray` (read) and `&mut GpuArray`
//! (written), packed from a tuple.

use crate::backend::Storage;
use crate::{DType, Element, GpuArray};
use unigpu_core::Scalar;

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
    use crate::backend::ArgImpl;

    /// An array as a launch argument, on its backend (unnameable outside
    /// the crate).
    #[allow(missing_debug_implementations)]
    pub struct BufferArg<'a>(pub(crate) ArgImpl<'a>);

    /// How a launch reaches an array's memory, on its backend.
    pub trait Storage {
        /// The array as an argument the kernel reads.
        fn arg(&self) -> BufferArg<'_>;
        /// The array as an argument the kernel writes (and may read).
        fn arg_mut(&mut self) -> BufferArg<'_>;
        /// Whether the elements are all of the buffer, in order: a kernel
        /// indexes the buffer, so it takes no other array.
        fn is_whole(&self) -> bool {
            true
        }
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
    fn arg(&self) -> sealed::BufferArg<'_> {
        sealed::BufferArg(self.storage.arg())
    }
    fn arg_mut(&mut self) -> sealed::BufferArg<'_> {
        sealed::BufferArg(self.storage.arg_mut())
    }
    fn is_whole(&self) -> bool {
        self.layout.is_whole(self.storage.len())
    }
}

/// A backend buffer, whole, as an argument the kernel reads: the
/// built-in kernels written with `#[unigpu::kernel]` (strided copies,
/// row reductions, element-wise ops) index buffer positions, not a view's
/// elements, so they take the storage an operand was made whole into.
pub(crate) struct WholeBuffer<'a, T: Element>(pub(crate) &'a Storage<T>);

/// A backend buffer, whole, as an argument the kernel writes.
pub(crate) struct WholeBufferMut<'a, T: Element>(pub(crate) &'a mut Storage<T>);

impl<T: Element> ArrayArg for WholeBuffer<'_, T> {
    fn dtype(&self) -> DType {
        T::DTYPE
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl<T: Element> sealed::Storage for WholeBuffer<'_, T> {
    fn arg(&self) -> sealed::BufferArg<'_> {
        sealed::BufferArg(self.0.arg())
    }
    fn arg_mut(&mut self) -> sealed::BufferArg<'_> {
        // Only ever passed as read: the kernels' signatures say so.
        sealed::BufferArg(self.0.arg())
    }
}

impl<T: Element> ArrayArg for WholeBufferMut<'_, T> {
    fn dtype(&self) -> DType {
        T::DTYPE
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl<T: Element> sealed::Storage for WholeBufferMut<'_, T> {
    fn arg(&self) -> sealed::BufferArg<'_> {
        sealed::BufferArg(self.0.arg())
    }
    fn arg_mut(&mut self) -> sealed::BufferArg<'_> {
        sealed::BufferArg(self.0.arg_mut())
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
