//! `AnyPinned`: a [`PinnedBuffer`] whose element type is known at run
//! time, for callers that choose the dtype from data (the C ABI, Python).

use crate::any_array::with_array;
use crate::element::PerDtype;
use crate::{AnyArray, Context, DType, Element, Error, PinnedBuffer, Result, Stream, bf16, f16};

/// A [`PinnedBuffer`] of any of the nine element types.
#[derive(Debug)]
#[non_exhaustive]
pub enum AnyPinned {
    F32(PinnedBuffer<f32>),
    F64(PinnedBuffer<f64>),
    F16(PinnedBuffer<f16>),
    BF16(PinnedBuffer<bf16>),
    I32(PinnedBuffer<i32>),
    U32(PinnedBuffer<u32>),
    I64(PinnedBuffer<i64>),
    U64(PinnedBuffer<u64>),
    U8(PinnedBuffer<u8>),
}

/// Runs `$body` with `$p` bound to the typed buffer inside `$any`.
macro_rules! with_pinned {
    ($any:expr, $p:ident => $body:expr) => {
        match $any {
            AnyPinned::F32($p) => $body,
            AnyPinned::F64($p) => $body,
            AnyPinned::F16($p) => $body,
            AnyPinned::BF16($p) => $body,
            AnyPinned::I32($p) => $body,
            AnyPinned::U32($p) => $body,
            AnyPinned::I64($p) => $body,
            AnyPinned::U64($p) => $body,
            AnyPinned::U8($p) => $body,
        }
    };
}

impl<T: Element> From<PinnedBuffer<T>> for AnyPinned {
    fn from(p: PinnedBuffer<T>) -> AnyPinned {
        T::pick::<IntoAny>(p)
    }
}

/// `AnyPinned::from`, per element type.
struct IntoAny;

impl PerDtype for IntoAny {
    type Of<T: Element> = PinnedBuffer<T>;
    type Out = AnyPinned;
    fn f32(x: PinnedBuffer<f32>) -> AnyPinned {
        AnyPinned::F32(x)
    }
    fn f64(x: PinnedBuffer<f64>) -> AnyPinned {
        AnyPinned::F64(x)
    }
    fn f16(x: PinnedBuffer<f16>) -> AnyPinned {
        AnyPinned::F16(x)
    }
    fn bf16(x: PinnedBuffer<bf16>) -> AnyPinned {
        AnyPinned::BF16(x)
    }
    fn i32(x: PinnedBuffer<i32>) -> AnyPinned {
        AnyPinned::I32(x)
    }
    fn u32(x: PinnedBuffer<u32>) -> AnyPinned {
        AnyPinned::U32(x)
    }
    fn i64(x: PinnedBuffer<i64>) -> AnyPinned {
        AnyPinned::I64(x)
    }
    fn u64(x: PinnedBuffer<u64>) -> AnyPinned {
        AnyPinned::U64(x)
    }
    fn u8(x: PinnedBuffer<u8>) -> AnyPinned {
        AnyPinned::U8(x)
    }
}

impl AnyPinned {
    /// `len` zeroed elements of `dtype` of pinned host memory for `ctx`'s
    /// device ([`Context::pinned`]).
    pub fn new(ctx: &Context, dtype: DType, len: usize) -> Result<AnyPinned> {
        crate::element::with_dtype!(dtype, T => ctx.pinned::<T>(len).map(AnyPinned::from))
    }

    pub fn dtype(&self) -> DType {
        with_pinned!(self, p => p.dtype())
    }

    pub fn len(&self) -> usize {
        with_pinned!(self, p => p.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn size_bytes(&self) -> usize {
        self.len() * self.dtype().size_bytes()
    }

    /// Runs `f` on the contents' bytes, once the downloads pending into
    /// the buffer are done ([`PinnedBuffer::as_slice`]).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        with_pinned!(self, p => Ok(f(bytemuck::cast_slice(p.as_slice()?))))
    }

    /// Runs `f` on the contents' bytes for writing, once every pending
    /// copy from or into the buffer is done ([`PinnedBuffer::as_mut_slice`]).
    pub fn with_bytes_mut<R>(&mut self, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        with_pinned!(self, p => Ok(f(bytemuck::cast_slice_mut(p.as_mut_slice()?))))
    }
}

fn dtype_mismatch(what: &'static str, expected: DType, actual: DType) -> Error {
    Error::DTypeMismatch {
        what,
        expected,
        actual,
    }
}

impl Stream {
    /// [`Stream::upload_pinned`] for buffers and arrays of a run-time
    /// dtype, which must be the same.
    pub fn upload_pinned_any(&self, src: &AnyPinned, dst: &mut AnyArray) -> Result<()> {
        const WHAT: &str = "Stream::upload_pinned (dst)";
        let dtype = src.dtype();
        with_pinned!(src, p => {
            let actual = dst.dtype();
            let dst = dst.get_mut().ok_or(dtype_mismatch(WHAT, dtype, actual))?;
            self.upload_pinned(p, dst)
        })
    }

    /// [`Stream::download_pinned`] for arrays and buffers of a run-time
    /// dtype, which must be the same.
    pub fn download_pinned_any(&self, src: &AnyArray, dst: &mut AnyPinned) -> Result<()> {
        const WHAT: &str = "Stream::download_pinned (dst)";
        let dtype = src.dtype();
        with_array!(src, a => {
            let actual = dst.dtype();
            let dst = dst.get_mut().ok_or(dtype_mismatch(WHAT, dtype, actual))?;
            self.download_pinned(a, dst)
        })
    }
}

impl AnyPinned {
    /// The typed buffer, mutably, if it holds `T`s.
    pub fn get_mut<T: Element>(&mut self) -> Option<&mut PinnedBuffer<T>> {
        with_pinned!(self, p => (p as &mut dyn std::any::Any).downcast_mut())
    }

    /// The typed buffer, if it holds `T`s.
    pub fn get<T: Element>(&self) -> Option<&PinnedBuffer<T>> {
        with_pinned!(self, p => (p as &dyn std::any::Any).downcast_ref())
    }
}
