//! `AnyArray`: a `GpuArray` whose element type is known at run time, for
//! callers that choose the dtype from data (the C ABI, Python).
//!
//! Each method checks dtypes and then calls the typed API, so an `AnyArray`
//! behaves exactly like the `GpuArray<T>` inside it.

use crate::element::PerDtype;
use crate::kernel::{Arg, Scalar};
use crate::ops::{Binary, BinaryMath, Compare, Unary, UnaryMath};
use crate::{
    ArrayView, ArrayViewMut, Context, DType, Element, Error, GpuArray, Layout, Location, Ops,
    Result, Stream, bf16, f16,
};

/// A [`GpuArray`] of any of the nine element types.
#[derive(Debug)]
#[non_exhaustive]
pub enum AnyArray {
    F32(GpuArray<f32>),
    F64(GpuArray<f64>),
    F16(GpuArray<f16>),
    BF16(GpuArray<bf16>),
    I32(GpuArray<i32>),
    U32(GpuArray<u32>),
    I64(GpuArray<i64>),
    U64(GpuArray<u64>),
    U8(GpuArray<u8>),
}

/// Runs `$body` with `$a` bound to the typed array inside `$any`.
macro_rules! with_array {
    ($any:expr, $a:ident => $body:expr) => {
        match $any {
            AnyArray::F32($a) => $body,
            AnyArray::F64($a) => $body,
            AnyArray::F16($a) => $body,
            AnyArray::BF16($a) => $body,
            AnyArray::I32($a) => $body,
            AnyArray::U32($a) => $body,
            AnyArray::I64($a) => $body,
            AnyArray::U64($a) => $body,
            AnyArray::U8($a) => $body,
        }
    };
}

pub(crate) use crate::element::with_dtype;
pub(crate) use with_array;

impl<T: Element> From<GpuArray<T>> for AnyArray {
    fn from(a: GpuArray<T>) -> AnyArray {
        T::pick::<IntoAny>(a)
    }
}

/// `AnyArray::from`, per element type.
struct IntoAny;

impl PerDtype for IntoAny {
    type Of<T: Element> = GpuArray<T>;
    type Out = AnyArray;
    fn f32(x: GpuArray<f32>) -> AnyArray {
        AnyArray::F32(x)
    }
    fn f64(x: GpuArray<f64>) -> AnyArray {
        AnyArray::F64(x)
    }
    fn f16(x: GpuArray<half::f16>) -> AnyArray {
        AnyArray::F16(x)
    }
    fn bf16(x: GpuArray<half::bf16>) -> AnyArray {
        AnyArray::BF16(x)
    }
    fn i32(x: GpuArray<i32>) -> AnyArray {
        AnyArray::I32(x)
    }
    fn u32(x: GpuArray<u32>) -> AnyArray {
        AnyArray::U32(x)
    }
    fn i64(x: GpuArray<i64>) -> AnyArray {
        AnyArray::I64(x)
    }
    fn u64(x: GpuArray<u64>) -> AnyArray {
        AnyArray::U64(x)
    }
    fn u8(x: GpuArray<u8>) -> AnyArray {
        AnyArray::U8(x)
    }
}

/// Reinterprets plain bytes as `T`s, copying only when `bytes` is not
/// aligned for `T`.
fn typed<T: Element>(bytes: &[u8]) -> std::borrow::Cow<'_, [T]> {
    match bytemuck::try_cast_slice(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => std::borrow::Cow::Owned(
            bytes
                .chunks_exact(size_of::<T>())
                .map(bytemuck::pod_read_unaligned)
                .collect(),
        ),
    }
}

fn elems_of(what: &'static str, dtype: DType, bytes: usize) -> Result<usize> {
    if !bytes.is_multiple_of(dtype.size_bytes()) {
        return Err(Error::SizeMismatch {
            what,
            expected: bytes.div_ceil(dtype.size_bytes()) * dtype.size_bytes(),
            actual: bytes,
        });
    }
    Ok(bytes / dtype.size_bytes())
}

impl AnyArray {
    /// `len` zeros of `dtype`.
    pub fn zeros(ctx: &Context, dtype: DType, len: usize) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.zeros::<T>(len).map(AnyArray::from))
    }

    /// `len` elements of `dtype` with unspecified contents.
    pub fn alloc(ctx: &Context, dtype: DType, len: usize) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.alloc::<T>(len).map(AnyArray::from))
    }

    /// An array of `dtype` holding `bytes` (native byte order), whose
    /// length must be a whole number of elements.
    pub fn from_bytes(ctx: &Context, dtype: DType, bytes: &[u8]) -> Result<AnyArray> {
        elems_of("AnyArray::from_bytes", dtype, bytes.len())?;
        with_dtype!(dtype, T => ctx.upload::<T>(&typed::<T>(bytes)).map(AnyArray::from))
    }

    pub fn dtype(&self) -> DType {
        with_array!(self, a => a.dtype())
    }

    pub fn len(&self) -> usize {
        with_array!(self, a => a.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The extent of each axis (see [`GpuArray::shape`]).
    pub fn shape(&self) -> &[usize] {
        with_array!(self, a => a.shape())
    }

    /// The step between neighbours along each axis, in elements.
    pub fn strides(&self) -> &[isize] {
        with_array!(self, a => a.strides())
    }

    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// Shape, strides and offset together.
    pub fn layout(&self) -> &Layout {
        with_array!(self, a => a.layout())
    }

    /// Whether the elements are one row-major run of the memory.
    pub fn is_contiguous(&self) -> bool {
        with_array!(self, a => a.is_contiguous())
    }

    /// [`GpuArray::reshape`] for any dtype.
    pub fn reshape(self, shape: impl crate::IntoShape) -> Result<AnyArray> {
        let shape = shape.into_shape();
        with_array!(self, a => a.reshape(shape).map(AnyArray::from))
    }

    /// [`GpuArray::to_contiguous`] for any dtype.
    pub fn to_contiguous(&self) -> Result<AnyArray> {
        with_array!(self, a => a.to_contiguous().map(AnyArray::from))
    }

    pub fn size_bytes(&self) -> usize {
        with_array!(self, a => a.size_bytes())
    }

    pub fn context(&self) -> &Context {
        with_array!(self, a => a.context())
    }

    /// The typed array, if it holds `T`s.
    pub fn get<T: Element>(&self) -> Option<&GpuArray<T>> {
        with_array!(self, a => (a as &dyn std::any::Any).downcast_ref())
    }

    /// The typed array, mutably, if it holds `T`s.
    pub fn get_mut<T: Element>(&mut self) -> Option<&mut GpuArray<T>> {
        with_array!(self, a => (a as &mut dyn std::any::Any).downcast_mut())
    }

    /// The typed array, or a `DTypeMismatch` naming `what`.
    pub fn typed<T: Element>(&self, what: &'static str) -> Result<&GpuArray<T>> {
        let dtype = self.dtype();
        self.get().ok_or(Error::DTypeMismatch {
            what,
            expected: T::DTYPE,
            actual: dtype,
        })
    }

    /// Like [`AnyArray::typed`], mutably.
    pub fn typed_mut<T: Element>(&mut self, what: &'static str) -> Result<&mut GpuArray<T>> {
        let dtype = self.dtype();
        self.get_mut().ok_or(Error::DTypeMismatch {
            what,
            expected: T::DTYPE,
            actual: dtype,
        })
    }

    /// Copies the elements out as bytes; `out` must be exactly
    /// [`AnyArray::size_bytes`] long. Blocks like [`GpuArray::download`].
    pub fn download_bytes(&self, out: &mut [u8]) -> Result<()> {
        if out.len() != self.size_bytes() {
            return Err(Error::SizeMismatch {
                what: "AnyArray::download_bytes (bytes)",
                expected: self.size_bytes(),
                actual: out.len(),
            });
        }
        with_array!(self, a => match bytemuck::try_cast_slice_mut(out) {
            Ok(typed) => a.download_into(typed),
            Err(_) => {
                out.copy_from_slice(bytemuck::cast_slice(&a.download()?));
                Ok(())
            }
        })
    }

    /// Overwrites the elements from bytes; `src` must be exactly
    /// [`AnyArray::size_bytes`] long.
    pub fn upload_bytes(&mut self, src: &[u8]) -> Result<()> {
        if src.len() != self.size_bytes() {
            return Err(Error::SizeMismatch {
                what: "AnyArray::upload_bytes (bytes)",
                expected: self.size_bytes(),
                actual: src.len(),
            });
        }
        with_array!(self, a => a.upload_from(&typed(src)))
    }

    /// Device-to-device copy into `dst`, which must have the same dtype and
    /// length.
    pub fn copy_to(&self, dst: &mut AnyArray) -> Result<()> {
        with_array!(self, a => a.copy_to(dst.typed_mut("AnyArray::copy_to (dst)")?))
    }

    /// A copy in `ctx` ([`GpuArray::to_context`]).
    pub fn to_context(&self, ctx: &Context) -> Result<AnyArray> {
        with_array!(self, a => a.to_context(ctx).map(AnyArray::from))
    }

    /// `len` zeros of `dtype` in unified memory ([`Context::alloc_unified`]).
    pub fn alloc_unified(ctx: &Context, dtype: DType, len: usize) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.alloc_unified::<T>(len).map(AnyArray::from))
    }

    /// Whether the array is unified memory ([`GpuArray::is_unified`]).
    pub fn is_unified(&self) -> bool {
        with_array!(self, a => a.is_unified())
    }

    /// Runs `f` on the elements' bytes seen from the host, once the pending
    /// writes are done ([`GpuArray::host_view`]).
    pub fn with_host_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        with_array!(self, a => Ok(f(bytemuck::cast_slice(&a.host_view()?))))
    }

    /// Runs `f` on the elements' bytes, writable from the host, once every
    /// pending use is done ([`GpuArray::host_view_mut`]).
    pub fn with_host_bytes_mut<R>(&mut self, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        with_array!(self, a => Ok(f(bytemuck::cast_slice_mut(&mut a.host_view_mut()?))))
    }

    /// Moves a unified array's memory to `to` on `stream`
    /// ([`Stream::prefetch`]).
    pub fn prefetch(&self, stream: &Stream, to: Location) -> Result<()> {
        with_array!(self, a => stream.prefetch(a, to))
    }

    /// This array as a read-only kernel argument.
    pub fn as_arg(&self) -> Arg<'_> {
        with_array!(self, a => Arg::Array(a))
    }

    /// This array as a written kernel argument.
    pub fn as_arg_mut(&mut self) -> Arg<'_> {
        with_array!(self, a => Arg::ArrayMut(a))
    }
}

/// Runs `$body` with `$T` as the float type of `$dtype`, or returns an
/// `Unsupported` error naming `$op` for the integer types.
macro_rules! with_float {
    ($ctx:expr, $op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = ::half::f16;
                $body
            }
            DType::BF16 => {
                type $T = ::half::bf16;
                $body
            }
            other => Err(Error::Unsupported {
                backend: $ctx.backend(),
                what: format!(
                    "{} on {other} arrays (the built-in math ops take f32, f64, f16 and bf16)",
                    $op
                ),
            }),
        }
    };
}

fn scalar_as<T: Element>(what: &'static str, s: Scalar) -> Result<T> {
    s.get().ok_or(Error::DTypeMismatch {
        what,
        expected: T::DTYPE,
        actual: s.dtype(),
    })
}

/// An [`AnyArray`], or a view of it: the layout of the elements in its
/// memory (`None`: the array as it is). What the bindings pass for an
/// array handle that is a view (`a.T`, `a[1:]` in Python).
#[derive(Debug, Clone, Copy)]
pub struct AnyView<'a> {
    pub array: &'a AnyArray,
    pub layout: Option<&'a Layout>,
}

/// As [`AnyView`], written.
#[derive(Debug)]
pub struct AnyViewMut<'a> {
    pub array: &'a mut AnyArray,
    pub layout: Option<&'a Layout>,
}

impl<'a> From<&'a AnyArray> for AnyView<'a> {
    fn from(array: &'a AnyArray) -> Self {
        AnyView {
            array,
            layout: None,
        }
    }
}

impl<'a> From<&'a mut AnyArray> for AnyViewMut<'a> {
    fn from(array: &'a mut AnyArray) -> Self {
        AnyViewMut {
            array,
            layout: None,
        }
    }
}

impl<'a> AnyView<'a> {
    pub fn dtype(&self) -> DType {
        self.array.dtype()
    }

    /// The typed view, or a dtype error naming `what`.
    pub fn typed<T: Element>(&self, what: &'static str) -> Result<ArrayView<'a, T>> {
        let a = self.array.typed::<T>(what)?;
        match self.layout {
            None => Ok(a.view()),
            Some(l) => a.view_as(l.clone()),
        }
    }
}

impl AnyView<'_> {
    /// The view's shape.
    pub fn shape(&self) -> &[usize] {
        match self.layout {
            Some(l) => l.shape(),
            None => self.array.shape(),
        }
    }

    /// The elements' bytes, in row-major order of the shape; `out` must be
    /// exactly as long. Blocks like [`GpuArray::download`].
    pub fn download_bytes(&self, out: &mut [u8]) -> Result<()> {
        let Some(layout) = self.layout else {
            return self.array.download_bytes(out);
        };
        let want = layout.len() * self.array.dtype().size_bytes();
        if out.len() != want {
            return Err(Error::SizeMismatch {
                what: "AnyView::download_bytes (bytes)",
                expected: want,
                actual: out.len(),
            });
        }
        with_array!(self.array, a => {
            let v = a.view_as(layout.clone())?.download()?;
            out.copy_from_slice(bytemuck::cast_slice(&v));
            Ok(())
        })
    }

    /// A new contiguous array with the view's elements and shape.
    pub fn to_contiguous(&self) -> Result<AnyArray> {
        match self.layout {
            None => self.array.to_contiguous(),
            Some(l) => {
                with_array!(self.array, a => a.view_as(l.clone())?.to_contiguous().map(AnyArray::from))
            }
        }
    }
}

impl AnyViewMut<'_> {
    /// Overwrites the elements from bytes in row-major order of the shape
    /// (exactly as many).
    pub fn upload_bytes(&mut self, src: &[u8]) -> Result<()> {
        let Some(layout) = self.layout else {
            return self.array.upload_bytes(src);
        };
        let want = layout.len() * self.array.dtype().size_bytes();
        if src.len() != want {
            return Err(Error::SizeMismatch {
                what: "AnyViewMut::upload_bytes (bytes)",
                expected: want,
                actual: src.len(),
            });
        }
        with_array!(&mut *self.array, a => a.view_mut_as(layout.clone())?.upload_from(&typed(src)))
    }

    /// [`ArrayViewMut::to_dlpack`] for any dtype.
    pub fn to_dlpack(&mut self, sync: crate::DlpackSync<'_>) -> Result<crate::DlpackTensor> {
        let layout = self.layout.cloned();
        with_array!(&mut *self.array, a => match layout {
            None => a.to_dlpack(sync),
            Some(l) => a.view_mut_as(l)?.to_dlpack(sync),
        })
    }

    /// The typed view, or a dtype error naming `what`.
    pub fn typed<T: Element>(&mut self, what: &'static str) -> Result<ArrayViewMut<'_, T>> {
        let layout = self.layout.cloned();
        let a = self.array.typed_mut::<T>(what)?;
        match layout {
            None => Ok(a.view_mut()),
            Some(l) => a.view_mut_as(l),
        }
    }
}

/// The built-in ops on [`AnyArray`]s: the same ops as [`Ops`], with the
/// dtypes checked at run time (every operand must have the first operand's
/// dtype, scalars included).
impl Ops<'_> {
    pub fn fill_any<'x>(&self, x: impl Into<AnyViewMut<'x>>, value: Scalar) -> Result<()> {
        let mut x = x.into();
        with_dtype!(x.array.dtype(), T => self.fill(&mut x.typed::<T>("fill")?, scalar_as("fill value", value)?))
    }

    pub fn copy_any<'x, 'y>(
        &self,
        src: impl Into<AnyView<'x>>,
        dst: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        let (src, mut dst) = (src.into(), dst.into());
        with_dtype!(src.dtype(), T => self.copy(&src.typed::<T>("copy (src)")?, &mut dst.typed::<T>("copy (dst)")?))
    }

    /// `out = a ∘ b` (`op`), broadcasting as [`Ops::add`].
    pub fn binary_any<'x, 'y, 'z>(
        &self,
        op: Binary,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        let (a, b, mut out) = (a.into(), b.into(), out.into());
        let [na, nb, nout, name] = op.operands();
        with_float!(self.context(), name, a.dtype(), T => {
            let (a, b) = (a.typed::<T>(na)?, b.typed::<T>(nb)?);
            self.binary(op, a, b, out.typed::<T>(nout)?)
        })
    }

    pub fn add_any<'x, 'y, 'z>(
        &self,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        self.binary_any(Binary::Add, a, b, out)
    }

    pub fn sub_any<'x, 'y, 'z>(
        &self,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        self.binary_any(Binary::Sub, a, b, out)
    }

    pub fn mul_any<'x, 'y, 'z>(
        &self,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        self.binary_any(Binary::Mul, a, b, out)
    }

    pub fn axpy_any<'x, 'y>(
        &self,
        alpha: Scalar,
        x: impl Into<AnyView<'x>>,
        y: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        let (x, mut y) = (x.into(), y.into());
        with_float!(self.context(), "axpy", x.dtype(), T =>
            self.axpy(scalar_as::<T>("axpy alpha", alpha)?, &x.typed::<T>("axpy (x)")?, &mut y.typed::<T>("axpy (y)")?))
    }

    pub fn scale_any<'x>(&self, alpha: Scalar, x: impl Into<AnyViewMut<'x>>) -> Result<()> {
        let mut x = x.into();
        with_float!(self.context(), "scale", x.array.dtype(), T =>
            self.scale(scalar_as::<T>("scale alpha", alpha)?, &mut x.typed::<T>("scale (x)")?))
    }

    /// `out = op(x)`.
    pub fn unary_any<'x, 'y>(
        &self,
        op: Unary,
        x: impl Into<AnyView<'x>>,
        out: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        let (x, mut out) = (x.into(), out.into());
        let [nx, nout, name] = op.operands();
        with_float!(self.context(), name, x.dtype(), T => {
            let x = x.typed::<T>(nx)?;
            self.unary(op, x, out.typed::<T>(nout)?)
        })
    }

    pub fn relu_any<'x, 'y>(
        &self,
        x: impl Into<AnyView<'x>>,
        out: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        self.unary_any(Unary::Relu, x, out)
    }

    pub fn sigmoid_any<'x, 'y>(
        &self,
        x: impl Into<AnyView<'x>>,
        out: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        self.unary_any(Unary::Sigmoid, x, out)
    }

    pub fn tanh_any<'x, 'y>(
        &self,
        x: impl Into<AnyView<'x>>,
        out: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        self.unary_any(Unary::Tanh, x, out)
    }

    /// The sum, as a scalar of the array's dtype.
    pub fn sum_any<'x>(&self, x: impl Into<AnyView<'x>>) -> Result<Scalar> {
        let x = x.into();
        with_float!(self.context(), "sum", x.dtype(), T =>
            self.sum(&x.typed::<T>("sum (x)")?).map(Scalar::new))
    }

    /// The largest element, as a scalar of the array's dtype.
    pub fn max_any<'x>(&self, x: impl Into<AnyView<'x>>) -> Result<Scalar> {
        let x = x.into();
        with_float!(self.context(), "max", x.dtype(), T =>
            self.max(&x.typed::<T>("max (x)")?).map(Scalar::new))
    }

    /// `out = op(x)` for the math ops of one input (`neg`, `exp`, ...);
    /// `params` are `Clamp`'s `[lo, hi]` and `PowScalar`'s `[p, _]`, each
    /// a scalar of `x`'s dtype (ignored by the other ops).
    pub fn unary_math_any<'x, 'y>(
        &self,
        op: UnaryMath,
        params: [Scalar; 2],
        x: impl Into<AnyView<'x>>,
        out: impl Into<AnyViewMut<'y>>,
    ) -> Result<()> {
        let (x, mut out) = (x.into(), out.into());
        let name = op.name();
        with_float!(self.context(), name, x.dtype(), T => {
            let x = x.typed::<T>(name)?;
            let out = &mut out.typed::<T>(name)?;
            match op {
                UnaryMath::Neg => self.neg(&x, out),
                UnaryMath::Abs => self.abs(&x, out),
                UnaryMath::Floor => self.floor(&x, out),
                UnaryMath::Ceil => self.ceil(&x, out),
                UnaryMath::Round => self.round(&x, out),
                UnaryMath::Clamp => self.clamp(
                    &x,
                    scalar_as::<T>("clamp lo", params[0])?,
                    scalar_as::<T>("clamp hi", params[1])?,
                    out,
                ),
                UnaryMath::Exp => self.exp(&x, out),
                UnaryMath::Log => self.log(&x, out),
                UnaryMath::Sqrt => self.sqrt(&x, out),
                UnaryMath::Rsqrt => self.rsqrt(&x, out),
                UnaryMath::Sin => self.sin(&x, out),
                UnaryMath::Cos => self.cos(&x, out),
                UnaryMath::Gelu => self.gelu(&x, out),
                UnaryMath::Silu => self.silu(&x, out),
                UnaryMath::PowScalar => {
                    self.pow_scalar(&x, scalar_as::<T>("pow exponent", params[0])?, out)
                }
            }
        })
    }

    /// `out = op(a, b)` for `div`, `minimum`, `maximum` and `pow`,
    /// broadcasting as [`Ops::add`].
    pub fn binary_math_any<'x, 'y, 'z>(
        &self,
        op: BinaryMath,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        let (a, b, mut out) = (a.into(), b.into(), out.into());
        let name = op.name();
        with_float!(self.context(), name, a.dtype(), T => {
            let (a, b) = (a.typed::<T>(name)?, b.typed::<T>(name)?);
            let out = &mut out.typed::<T>(name)?;
            match op {
                BinaryMath::Div => self.div(&a, &b, out),
                BinaryMath::Minimum => self.minimum(&a, &b, out),
                BinaryMath::Maximum => self.maximum(&a, &b, out),
                BinaryMath::Pow => self.pow(&a, &b, out),
            }
        })
    }

    /// `mask = a op b` as a u8 0/1 mask, broadcasting as [`Ops::add`].
    pub fn compare_any<'x, 'y, 'z>(
        &self,
        op: Compare,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        mask: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        let (a, b, mut mask) = (a.into(), b.into(), mask.into());
        let name = op.name();
        with_float!(self.context(), name, a.dtype(), T => {
            let (a, b) = (a.typed::<T>(name)?, b.typed::<T>(name)?);
            let mask = &mut mask.typed::<u8>("comparison mask")?;
            match op {
                Compare::Lt => self.lt(&a, &b, mask),
                Compare::Le => self.le(&a, &b, mask),
                Compare::Gt => self.gt(&a, &b, mask),
                Compare::Ge => self.ge(&a, &b, mask),
                Compare::Eq => self.eq(&a, &b, mask),
                Compare::Ne => self.ne(&a, &b, mask),
            }
        })
    }

    /// `out = mask != 0 ? a : b` (`mask` u8), as [`Ops::where_`].
    pub fn where_any<'w, 'x, 'y, 'z>(
        &self,
        mask: impl Into<AnyView<'w>>,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        let (mask, a, b, mut out) = (mask.into(), a.into(), b.into(), out.into());
        with_float!(self.context(), "where", a.dtype(), T => {
            let mask = mask.typed::<u8>("where (mask)")?;
            let (a, b) = (a.typed::<T>("where (a)")?, b.typed::<T>("where (b)")?);
            self.where_(&mask, &a, &b, &mut out.typed::<T>("where (out)")?)
        })
    }

    /// The dot product, as a scalar of the arrays' dtype.
    pub fn dot_any<'x, 'y>(
        &self,
        x: impl Into<AnyView<'x>>,
        y: impl Into<AnyView<'y>>,
    ) -> Result<Scalar> {
        let (x, y) = (x.into(), y.into());
        with_float!(self.context(), "dot", x.dtype(), T =>
            self.dot(&x.typed::<T>("dot (x)")?, &y.typed::<T>("dot (y)")?).map(Scalar::new))
    }

    /// `c = a · b` with the sizes given (flat arrays), as [`Ops::matmul`].
    pub fn matmul_any<'x, 'y, 'z>(
        &self,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        c: impl Into<AnyViewMut<'z>>,
        mkn: (usize, usize, usize),
    ) -> Result<()> {
        let (a, b, mut c) = (a.into(), b.into(), c.into());
        with_float!(self.context(), "matmul", a.dtype(), T =>
            self.matmul(&a.typed::<T>("matmul (a)")?, &b.typed::<T>("matmul (b)")?, &mut c.typed::<T>("matmul (c)")?, mkn))
    }

    /// A reduction over `axes` (`None`: all) of any float dtype, as
    /// [`Ops::sum_axes`] (`Reduce::Sum`), [`Ops::max_axes`] (`Max`); see
    /// also `mean_axes_any`, `min_axes_any`.
    pub fn sum_axes_any<'x>(
        &self,
        x: impl Into<AnyView<'x>>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<AnyArray> {
        let x = x.into();
        with_float!(self.context(), "sum", x.dtype(), T =>
            self.sum_axes(&x.typed::<T>("sum (x)")?, axes, keepdims).map(AnyArray::from))
    }

    /// [`Ops::mean_axes`] for any float dtype.
    pub fn mean_axes_any<'x>(
        &self,
        x: impl Into<AnyView<'x>>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<AnyArray> {
        let x = x.into();
        with_float!(self.context(), "mean", x.dtype(), T =>
            self.mean_axes(&x.typed::<T>("mean (x)")?, axes, keepdims).map(AnyArray::from))
    }

    /// [`Ops::max_axes`] for any float dtype.
    pub fn max_axes_any<'x>(
        &self,
        x: impl Into<AnyView<'x>>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<AnyArray> {
        let x = x.into();
        with_float!(self.context(), "max", x.dtype(), T =>
            self.max_axes(&x.typed::<T>("max (x)")?, axes, keepdims).map(AnyArray::from))
    }

    /// [`Ops::min_axes`] for any float dtype.
    pub fn min_axes_any<'x>(
        &self,
        x: impl Into<AnyView<'x>>,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<AnyArray> {
        let x = x.into();
        with_float!(self.context(), "min", x.dtype(), T =>
            self.min_axes(&x.typed::<T>("min (x)")?, axes, keepdims).map(AnyArray::from))
    }

    /// [`Ops::argmax`] (`max` true) or [`Ops::argmin`] for any float
    /// dtype: a u32 array of indices.
    pub fn arg_extreme_any<'x>(
        &self,
        x: impl Into<AnyView<'x>>,
        axis: Option<usize>,
        keepdims: bool,
        max: bool,
    ) -> Result<AnyArray> {
        let x = x.into();
        let what = if max { "argmax" } else { "argmin" };
        with_float!(self.context(), what, x.dtype(), T => {
            let v = x.typed::<T>(what)?;
            if max { self.argmax(&v, axis, keepdims) } else { self.argmin(&v, axis, keepdims) }.map(AnyArray::from)
        })
    }

    /// [`Ops::softmax`] (`log` false) or [`Ops::log_softmax`] for any
    /// float dtype.
    pub fn softmax_any<'x, 'y>(
        &self,
        x: impl Into<AnyView<'x>>,
        axis: usize,
        out: impl Into<AnyViewMut<'y>>,
        log: bool,
    ) -> Result<()> {
        let (x, mut out) = (x.into(), out.into());
        with_float!(self.context(), "softmax", x.dtype(), T => {
            let (v, mut o) = (x.typed::<T>("softmax (x)")?, out.typed::<T>("softmax (out)")?);
            if log { self.log_softmax(&v, axis, &mut o) } else { self.softmax(&v, axis, &mut o) }
        })
    }

    /// `out = a · b` of 2-D arrays or views, as [`Ops::mm`], or, when any
    /// of them is 3-D, batched as [`Ops::bmm`].
    pub fn mm_any<'x, 'y, 'z>(
        &self,
        a: impl Into<AnyView<'x>>,
        b: impl Into<AnyView<'y>>,
        out: impl Into<AnyViewMut<'z>>,
    ) -> Result<()> {
        let (a, b, mut out) = (a.into(), b.into(), out.into());
        with_float!(self.context(), "mm", a.dtype(), T => {
            let (a, b) = (a.typed::<T>("mm (a)")?, b.typed::<T>("mm (b)")?);
            let mut out = out.typed::<T>("mm (out)")?;
            if [a.ndim(), b.ndim(), out.ndim()].contains(&3) { self.bmm(&a, &b, &mut out) } else { self.mm(&a, &b, &mut out) }
        })
    }
}
