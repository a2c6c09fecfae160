//! Casts between element types (`astype`), on the device, with one rule
//! on every backend: Rust's `as`.
//!
//! - float → integer: toward zero, saturating at the type's range, NaN → 0;
//! - integer → integer: wraps (two's complement), sign-extends from a
//!   signed type;
//! - integer → f32/f64: rounded to nearest, ties to even, once;
//! - f32/f16/bf16 → f64 and f16/bf16 → f32: exact; f64 → f32: rounded to
//!   nearest even;
//! - anything → f16/bf16: the value as f32 first (by the rules above),
//!   then rounded to nearest even (`half`'s `from_f32`; overflow to ±inf,
//!   NaN stays NaN). So f64, i64, u64 (and i32, u32 above 2^24) go
//!   through f32 and may round twice: `f16::from_f32(x as f32)`, not
//!   `f16::from_f64(x)`. That is what a kernel written in the kernel
//!   language does (it writes f16/bf16 from f32), and the same on every
//!   backend.
//!
//! NaN payloads are not kept (CUDA's conversions give one NaN); a cast to
//! the same type is a copy and keeps every bit.
//!
//! The kernels are written with `#[unigpu::kernel]`, so they run on every
//! backend that runs generated kernels. WGSL lets an integer → float
//! conversion round a value that is not representable either way, so the
//! integer → float kernels never convert one: they split the integer into
//! parts that convert exactly and add them, which rounds once, to nearest
//! even (below). A u8 element is read as a u32 and stored as its low 8
//! bits, so u8 casts are kernels too: to u8, an integer keeps its low
//! bits and a float is clamped to 0..=255 first.

use std::any::Any;

use crate::kernel::{Arg, Grid, Kernel, Scalar};
use crate::{AnyArray, ArrayView, Context, DType, Element, Error, GpuArray, Result, bf16, f16};

/// `v` (any u32) as f32, rounded once to nearest even on every backend:
/// both halves convert exactly (16 bits each), the product by 2^16 is
/// exact, and the add rounds once (an fma, where a driver contracts it,
/// gives the same).
#[crate::device]
fn u32_f32(v: u32) -> f32 {
    ((v >> 16u32) as f32) * 65536.0f32 + ((v & 0xffffu32) as f32)
}

/// As `u32_f32`, for an i32: the high half is signed (exact), the low
/// half 0..65535 (exact).
#[crate::device]
fn i32_f32(v: i32) -> f32 {
    ((v >> 16i32) as f32) * 65536.0f32 + ((v & 0xffffi32) as f32)
}

/// `m` (any u64) as f32, rounded once to nearest even. Below 2^32 it is
/// `u32_f32`. Above, `m` is shifted right to 32 bits with every bit
/// shifted out ORed into the last one kept ("round to odd"): rounding
/// that 32-bit value to f32's 24 bits gives the same as rounding `m`
/// (round to odd with two or more extra bits, then to nearest, is one
/// rounding to nearest; Boldo & Melquiond), and the power of two put back
/// is exact.
#[crate::device]
fn u64_f32(m: u64) -> f32 {
    if m < 4294967296u64 {
        return u32_f32(m as u32);
    }
    let mut v = m;
    let mut scale = 1.0f32;
    while v >= 4294967296u64 {
        v = (v >> 1u64) | (v & 1u64);
        scale = scale * 2.0f32;
    }
    u32_f32(v as u32) * scale
}

/// As `u64_f32`, for an i64: rounding to nearest even is symmetric, so
/// the magnitude is rounded and the sign put back (i64::MIN's magnitude,
/// 2^63, is a u64).
#[crate::device]
fn i64_f32(x: i64) -> f32 {
    if x < 0i64 {
        return -u64_f32(0u64 - (x as u64));
    }
    u64_f32(x as u64)
}

/// `x` (any u64) as f64, rounded once: both 32-bit halves convert
/// exactly, `hi * 2^32` is exact, and the add rounds once.
#[crate::device]
fn u64_f64(x: u64) -> f64 {
    ((x >> 32u64) as f64) * 4294967296.0f64 + ((x & 0xffffffffu64) as f64)
}

/// As `u64_f64`, for an i64 (the high half signed, by the arithmetic
/// shift).
#[crate::device]
fn i64_f64(x: i64) -> f64 {
    ((x >> 32i64) as f64) * 4294967296.0f64 + ((x & 0xffffffffi64) as f64)
}

#[crate::kernel(S = [f32, f64, f16, bf16], D = [i32, u32, i64, u64], workgroup_size = 256)]
fn cast_float_int<S, D>(src: &[S], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as D;
    }
}

#[crate::kernel(S = [i32, u32, i64, u64], D = [i32, u32, i64, u64], workgroup_size = 256)]
fn cast_int_int<S, D>(src: &[S], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as D;
    }
}

#[crate::kernel(S = [f32, f64, f16, bf16], workgroup_size = 256)]
fn cast_float_f64<S>(src: &[S], dst: &mut [f64], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as f64;
    }
}

/// To f32, f16 or bf16: the value as f32, written (rounded to nearest even
/// for f16/bf16).
#[crate::kernel(S = [f32, f64, f16, bf16], D = [f32, f16, bf16], workgroup_size = 256)]
fn cast_float_f32<S, D>(src: &[S], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as f32;
    }
}

#[crate::kernel(S = [i32, u32], workgroup_size = 256)]
fn cast_int32_f64<S>(src: &[S], dst: &mut [f64], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        // Exact: 32 bits fit f64's 53.
        dst[i] = src[i] as f64;
    }
}

#[crate::kernel(workgroup_size = 256)]
fn cast_i64_f64(src: &[i64], dst: &mut [f64], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = i64_f64(src[i]);
    }
}

#[crate::kernel(workgroup_size = 256)]
fn cast_u64_f64(src: &[u64], dst: &mut [f64], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = u64_f64(src[i]);
    }
}

#[crate::kernel(D = [f32, f16, bf16], workgroup_size = 256)]
fn cast_i32_f32<D>(src: &[i32], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = i32_f32(src[i]);
    }
}

#[crate::kernel(D = [f32, f16, bf16], workgroup_size = 256)]
fn cast_u32_f32<D>(src: &[u32], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = u32_f32(src[i]);
    }
}

#[crate::kernel(D = [f32, f16, bf16], workgroup_size = 256)]
fn cast_i64_f32<D>(src: &[i64], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = i64_f32(src[i]);
    }
}

#[crate::kernel(D = [f32, f16, bf16], workgroup_size = 256)]
fn cast_u64_f32<D>(src: &[u64], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = u64_f32(src[i]);
    }
}

/// Integer → u8: the low 8 bits (the store keeps them), as `as u8` wraps.
#[crate::kernel(S = [i32, u32, i64, u64], workgroup_size = 256)]
fn cast_int_u8<S>(src: &[S], dst: &mut [u8], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as u32;
    }
}

/// Float → u8: toward zero, saturating at 0 and 255, NaN → 0 (`as u8`).
/// A value at or above 255 is 255; below, `as u32` already gives 0 for a
/// NaN or a negative value.
#[crate::kernel(S = [f32, f64, f16, bf16], workgroup_size = 256)]
fn cast_float_u8<S>(src: &[S], dst: &mut [u8], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        let x = src[i];
        let mut v = 255u32;
        if !(x >= 255.0) {
            v = x as u32;
        }
        dst[i] = v;
    }
}

/// u8 → an integer or f64: the byte, read as u32, converted exactly.
#[crate::kernel(D = [i32, u32, i64, u64, f64], workgroup_size = 256)]
fn cast_u8<D>(src: &[u8], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as D;
    }
}

/// u8 → f32, f16 or bf16: exact (every byte is one of each).
#[crate::kernel(D = [f32, f16, bf16], workgroup_size = 256)]
fn cast_u8_f32<D>(src: &[u8], dst: &mut [D], n: u32) {
    let i = global_id().x;
    if i < n as usize {
        dst[i] = src[i] as f32;
    }
}

/// Returns the instance `$kern::<S, D>` for the first `(S, D)` of the
/// lists' product whose dtypes are `($from, $to)`.
macro_rules! pairs {
    ($ctx:ident, $from:ident, $to:ident, $kern:ident, [$($s:ty),*], $ds:tt) => {
        $( pairs!(@one $ctx, $from, $to, $kern, $s, $ds); )*
    };
    (@one $ctx:ident, $from:ident, $to:ident, $kern:ident, $s:ty, [$($d:ty),*]) => {
        $(
            if $from == <$s as Element>::DTYPE && $to == <$d as Element>::DTYPE {
                return Ok((*$kern::kernel::<$s, $d>($ctx)?).clone());
            }
        )*
    };
}

/// As `pairs!`, for kernels generic over one side only: `$fixed` is the
/// other side's type.
macro_rules! sources {
    ($ctx:ident, $from:ident, $to:ident, $kern:ident, [$($s:ty),*], $fixed:ty) => {
        $(
            if $from == <$s as Element>::DTYPE && $to == <$fixed as Element>::DTYPE {
                return Ok((*$kern::kernel::<$s>($ctx)?).clone());
            }
        )*
    };
}
macro_rules! dests {
    ($ctx:ident, $from:ident, $to:ident, $kern:ident, $fixed:ty, [$($d:ty),*]) => {
        $(
            if $from == <$fixed as Element>::DTYPE && $to == <$d as Element>::DTYPE {
                return Ok((*$kern::kernel::<$d>($ctx)?).clone());
            }
        )*
    };
}

/// The kernel casting `from` to `to` (not equal).
fn cast_kernel(ctx: &Context, from: DType, to: DType) -> Result<Kernel> {
    sources!(ctx, from, to, cast_int_u8, [i32, u32, i64, u64], u8);
    sources!(ctx, from, to, cast_float_u8, [f32, f64, f16, bf16], u8);
    dests!(ctx, from, to, cast_u8, u8, [i32, u32, i64, u64, f64]);
    dests!(ctx, from, to, cast_u8_f32, u8, [f32, f16, bf16]);
    pairs!(
        ctx,
        from,
        to,
        cast_float_int,
        [f32, f64, f16, bf16],
        [i32, u32, i64, u64]
    );
    pairs!(
        ctx,
        from,
        to,
        cast_int_int,
        [i32, u32, i64, u64],
        [i32, u32, i64, u64]
    );
    pairs!(
        ctx,
        from,
        to,
        cast_float_f32,
        [f32, f64, f16, bf16],
        [f32, f16, bf16]
    );
    sources!(ctx, from, to, cast_float_f64, [f32, f64, f16, bf16], f64);
    sources!(ctx, from, to, cast_int32_f64, [i32, u32], f64);
    if from == DType::I64 && to == DType::F64 {
        return Ok((*cast_i64_f64::kernel(ctx)?).clone());
    }
    if from == DType::U64 && to == DType::F64 {
        return Ok((*cast_u64_f64::kernel(ctx)?).clone());
    }
    dests!(ctx, from, to, cast_i32_f32, i32, [f32, f16, bf16]);
    dests!(ctx, from, to, cast_u32_f32, u32, [f32, f16, bf16]);
    dests!(ctx, from, to, cast_i64_f32, i64, [f32, f16, bf16]);
    dests!(ctx, from, to, cast_u64_f32, u64, [f32, f16, bf16]);
    // Every pair of the nine element types is listed above.
    Err(Error::Unsupported {
        backend: ctx.backend(),
        what: format!("a cast from {from} to {to}"),
    })
}

/// A number on the host, wide enough for every element type's value:
/// floats widened to f64 (exact), integers to i128 (exact).
#[derive(Clone, Copy)]
enum Num {
    F(f64),
    I(i128),
}

fn to_nums<S: Element>(v: &[S]) -> Vec<Num> {
    fn map<A: bytemuck::Pod, S: Element>(v: &[S], f: impl Fn(A) -> Num) -> Vec<Num> {
        bytemuck::cast_slice::<S, A>(v)
            .iter()
            .map(|&x| f(x))
            .collect()
    }
    match S::DTYPE {
        DType::F32 => map(v, |x: f32| Num::F(x as f64)),
        DType::F64 => map(v, Num::F),
        DType::F16 => map(v, |x: f16| Num::F(x.to_f64())),
        DType::BF16 => map(v, |x: bf16| Num::F(x.to_f64())),
        DType::I32 => map(v, |x: i32| Num::I(x as i128)),
        DType::U32 => map(v, |x: u32| Num::I(x as i128)),
        DType::I64 => map(v, |x: i64| Num::I(x as i128)),
        DType::U64 => map(v, |x: u64| Num::I(x as i128)),
        DType::U8 => map(v, |x: u8| Num::I(x as i128)),
    }
}

fn from_nums<D: Element>(v: &[Num]) -> Vec<D> {
    fn map<A: bytemuck::Pod, D: Element>(
        v: &[Num],
        f: impl Fn(f64) -> A,
        i: impl Fn(i128) -> A,
    ) -> Vec<D> {
        let out: Vec<A> = v
            .iter()
            .map(|&n| match n {
                Num::F(x) => f(x),
                Num::I(x) => i(x),
            })
            .collect();
        bytemuck::cast_slice::<A, D>(&out).to_vec()
    }
    // Rust's `as` throughout; a float source's f64 is its exact value, so
    // `x as i32` or `x as f32` of it is the same as from the narrower
    // float, and `i as f32` of an i128 is the one rounding of the value.
    match D::DTYPE {
        DType::F32 => map(v, |x| x as f32, |i| i as f32),
        DType::F64 => map(v, |x| x, |i| i as f64),
        DType::F16 => map(v, |x| f16::from_f32(x as f32), |i| f16::from_f32(i as f32)),
        DType::BF16 => map(
            v,
            |x| bf16::from_f32(x as f32),
            |i| bf16::from_f32(i as f32),
        ),
        DType::I32 => map(v, |x| x as i32, |i| i as i32),
        DType::U32 => map(v, |x| x as u32, |i| i as u32),
        DType::I64 => map(v, |x| x as i64, |i| i as i64),
        DType::U64 => map(v, |x| x as u64, |i| i as u64),
        DType::U8 => map(v, |x| x as u8, |i| i as u8),
    }
}

/// The cast rule on the host: what the kernels compute, for a scalar
/// (`Context::ones`).
pub(crate) fn cast_host<S: Element, D: Element>(v: &[S]) -> Vec<D> {
    from_nums(&to_nums(v))
}

/// `a` as a `GpuArray<U>`, where `T` is `U`.
fn same<T: Element, U: Element>(a: GpuArray<T>) -> GpuArray<U> {
    let any: Box<dyn Any> = Box::new(a);
    match any.downcast::<GpuArray<U>>() {
        Ok(a) => *a,
        // Only called with T::DTYPE == U::DTYPE, one Rust type per dtype.
        Err(_) => unreachable!("same dtype, same type"),
    }
}

impl<T: Element> ArrayView<'_, T> {
    /// A new contiguous array of the same shape with every element cast
    /// to `U` by Rust's `as` (the module's rule; docs/guide.md "Casts"),
    /// computed on the device.
    pub fn astype<U: Element>(&self) -> Result<GpuArray<U>> {
        let src = self.to_contiguous()?;
        cast_whole(&src)
    }
}

impl<T: Element> GpuArray<T> {
    /// A new contiguous array of the same shape with every element cast
    /// to `U` by Rust's `as`: float → integer truncates toward zero and
    /// saturates, NaN → 0; integer → integer wraps; integer → float and
    /// f64 → f32 round to nearest even; to f16/bf16 the value is made an
    /// f32 first, then rounded to nearest even. The same bits on every
    /// backend (docs/guide.md, "Casts").
    pub fn astype<U: Element>(&self) -> Result<GpuArray<U>> {
        if self.layout.is_whole(self.storage.len()) {
            cast_whole(self)
        } else {
            self.view().astype()
        }
    }
}

/// The cast of a whole (contiguous, all of its buffer) array.
fn cast_whole<T: Element, U: Element>(src: &GpuArray<T>) -> Result<GpuArray<U>> {
    let ctx = src.context();
    let shape = src.shape().to_vec();
    if T::DTYPE == U::DTYPE {
        return Ok(same(src.try_clone()?));
    }
    let mut dst = GpuArray::<U>::uninit_shaped(ctx, &shape)?;
    let n = src.len();
    if n == 0 {
        return Ok(dst);
    }
    let n32 = u32::try_from(n).map_err(|_| Error::Shape {
        what: "astype",
        message: format!(
            "{n} elements do not fit the 32-bit indices of generated kernels; cast it in parts"
        ),
    })?;
    let kernel = cast_kernel(ctx, T::DTYPE, U::DTYPE)?;
    let args = vec![
        Arg::Array(src),
        Arg::ArrayMut(&mut dst),
        Arg::Scalar(Scalar::new(n32)),
    ];
    ctx.default_stream()
        .launch(&kernel, Grid::for_elems_with_block(n, 256), args)?;
    Ok(dst)
}

/// `AnyArray::astype`, per target type.
macro_rules! any_astype {
    ($a:expr, $to:expr) => {
        match $to {
            DType::F32 => AnyArray::from($a.astype::<f32>()?),
            DType::F64 => AnyArray::from($a.astype::<f64>()?),
            DType::F16 => AnyArray::from($a.astype::<f16>()?),
            DType::BF16 => AnyArray::from($a.astype::<bf16>()?),
            DType::I32 => AnyArray::from($a.astype::<i32>()?),
            DType::U32 => AnyArray::from($a.astype::<u32>()?),
            DType::I64 => AnyArray::from($a.astype::<i64>()?),
            DType::U64 => AnyArray::from($a.astype::<u64>()?),
            DType::U8 => AnyArray::from($a.astype::<u8>()?),
        }
    };
}

impl AnyArray {
    /// [`GpuArray::astype`] with the target type chosen at run time.
    pub fn astype(&self, to: DType) -> Result<AnyArray> {
        Ok(crate::any_array::with_array!(self, a => any_astype!(a, to)))
    }
}

impl crate::AnyView<'_> {
    /// [`ArrayView::astype`] with the target type chosen at run time.
    pub fn astype(&self, to: DType) -> Result<AnyArray> {
        crate::any_array::with_dtype!(self.dtype(), T => {
            let v = self.typed::<T>("AnyView::astype")?;
            Ok(any_astype!(v, to))
        })
    }
}
