//! `astype`: every pair of the nine element types, on every backend, bit
//! for bit against the host's Rust `as` (and `half`'s `from_f32` for
//! f16/bf16 targets, of the value `as f32`: docs/guide.md, "Casts"),
//! written here without calling the library. Inputs: NaN, ±inf, ±0,
//! ties, values just outside each integer range, integers above 2^24 and
//! 2^53 whose f32/f64 rounding needs one correct rounding, and random bit
//! patterns.

mod common;

use rand::Rng;
use unigpu::{AnyArray, Context, DType, Element, GpuArray, bf16, f16};

/// The reference cast: Rust's `as`.
trait Cast<D> {
    fn cast(self) -> D;
}

macro_rules! prim_to {
    ($s:ty => $($d:ty),*) => {$(
        impl Cast<$d> for $s {
            fn cast(self) -> $d {
                self as $d
            }
        }
    )*
        impl Cast<f16> for $s {
            fn cast(self) -> f16 {
                f16::from_f32(self as f32)
            }
        }
        impl Cast<bf16> for $s {
            fn cast(self) -> bf16 {
                bf16::from_f32(self as f32)
            }
        }
    };
}
macro_rules! prims {
    ($($s:ty),*) => {$( prim_to!($s => f32, f64, i32, u32, i64, u64, u8); )*};
}
prims!(f32, f64, i32, u32, i64, u64, u8);

macro_rules! half_to {
    ($h:ty => $($d:ty),*) => {$(
        impl Cast<$d> for $h {
            fn cast(self) -> $d {
                self.to_f32() as $d
            }
        }
    )*
        impl Cast<f16> for $h {
            fn cast(self) -> f16 {
                f16::from_f32(self.to_f32())
            }
        }
        impl Cast<bf16> for $h {
            fn cast(self) -> bf16 {
                bf16::from_f32(self.to_f32())
            }
        }
    };
}
half_to!(f16 => f32, f64, i32, u32, i64, u64, u8);
half_to!(bf16 => f32, f64, i32, u32, i64, u64, u8);

/// Bits to compare, `None` for a NaN (any NaN matches any: payloads are
/// not promised).
trait Key: Element {
    fn key(self) -> Option<u64>;
}
macro_rules! key_float {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn key(self) -> Option<u64> {
                if self.is_nan() { None } else { Some(self.to_bits() as u64) }
            }
        }
    )*};
}
key_float!(f32, f64, f16, bf16);
macro_rules! key_int {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn key(self) -> Option<u64> {
                Some(self as u64)
            }
        }
    )*};
}
key_int!(i32, u32, i64, u64, u8);

/// Inputs of a type: the special values, then random ones.
trait Inputs: Element {
    fn inputs(rng: &mut impl Rng) -> Vec<Self>;
}

/// Float values that exercise every rule, as f64.
fn float_specials() -> Vec<f64> {
    let p = |e: i32| 2f64.powi(e);
    let mut v = vec![
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.99,
        -0.99,
        1.5,
        -1.5,
        2.5,
        -2.5,
        255.0,
        255.9,
        256.0,
        -1.0,
        65504.0,
        65519.99,
        65520.0,
        p(24) + 1.0,
        p(24) + 3.0,
        p(31) - 1.0,
        p(31),
        p(31) + 1.0,
        -p(31),
        -p(31) - 1.0,
        -p(31) - 0.5,
        p(32) - 1.0,
        p(32) - 0.5,
        p(32),
        p(53) + 2.0,
        p(63),
        -p(63),
        -p(63) - 2048.0,
        p(64) - 2048.0,
        p(64),
        1e300,
        -1e300,
        f64::from_bits(1),
        1e-40,
        -1e-45,
        f32::MAX as f64,
        f32::MAX as f64 * (1.0 + p(-30)),
        // f64 → f32 → f16/bf16 rounds twice here (the documented rule).
        1.0 + p(-11) + p(-40),
        1.0 + p(-8) + p(-30),
        3.4e38,
    ];
    let more: Vec<f64> = v.iter().map(|x| -x).collect();
    v.extend(more);
    v
}

/// Integer values that exercise every rule, as i128 (cast to each type,
/// wrapping).
fn int_specials() -> Vec<i128> {
    let p = |e: u32| 1i128 << e;
    let mut v = vec![
        0,
        1,
        -1,
        255,
        256,
        p(24) + 1,
        p(24) + 3,
        p(25) + 2, // a tie for f32: to even, down
        p(25) + 6, // a tie: up
        p(31) - 1,
        p(31),
        p(32) - 1,
        p(40) + p(16),     // a tie for f32: down
        p(40) + p(16) + 1, // just above the tie: up (needs the sticky bit)
        p(40) + 3 * p(16), // a tie: up
        p(53) + 1,
        p(53) + 3,
        p(54) + 2,
        p(54) + 6,
        p(62) + p(38) + 1,
        p(63) - 1,
        p(63),
        p(64) - 1,
        p(64) - p(39),
        p(64) - p(39) - 1,
    ];
    let more: Vec<i128> = v.iter().map(|x| -x).collect();
    v.extend(more);
    v
}

macro_rules! inputs_int {
    ($($t:ty),*) => {$(
        impl Inputs for $t {
            fn inputs(rng: &mut impl Rng) -> Vec<Self> {
                let mut v: Vec<$t> = int_specials().into_iter().map(|x| x as $t).collect();
                v.extend((0..700).map(|_| rng.random::<$t>()));
                // Small and mid-sized values too, not only random bits.
                v.extend((0..300).map(|_| {
                    let bits = rng.random_range(0..(8 * std::mem::size_of::<$t>() as u32));
                    (rng.random::<u64>() >> (64 - bits.max(1))) as $t
                }));
                v
            }
        }
    )*};
}
inputs_int!(i32, u32, i64, u64, u8);

impl Inputs for f64 {
    fn inputs(rng: &mut impl Rng) -> Vec<Self> {
        let mut v = float_specials();
        v.extend((0..400).map(|_| f64::from_bits(rng.random())));
        v.extend((0..300).map(|_| rng.random_range(-1e20..1e20)));
        v.extend((0..300).map(|_| rng.random_range(-300.0..300.0)));
        v
    }
}
impl Inputs for f32 {
    fn inputs(rng: &mut impl Rng) -> Vec<Self> {
        let mut v: Vec<f32> = float_specials().into_iter().map(|x| x as f32).collect();
        v.extend((0..400).map(|_| f32::from_bits(rng.random())));
        v.extend((0..300).map(|_| rng.random_range(-1e20..1e20)));
        v.extend((0..300).map(|_| rng.random_range(-300.0..300.0)));
        v
    }
}
macro_rules! inputs_half {
    ($($t:ty),*) => {$(
        impl Inputs for $t {
            fn inputs(rng: &mut impl Rng) -> Vec<Self> {
                let mut v: Vec<$t> = float_specials().into_iter().map(<$t>::from_f64).collect();
                v.extend((0..700).map(|_| <$t>::from_bits(rng.random())));
                v.extend((0..300).map(|_| <$t>::from_f32(rng.random_range(-300.0..300.0))));
                v
            }
        }
    )*};
}
inputs_half!(f16, bf16);

/// Casts `src` to `D` on `ctx` and compares every element with the host.
fn check<S, D>(ctx: &Context, src: &[S])
where
    S: Element + Cast<D> + Copy,
    D: Key + Copy,
{
    // A shape with two axes: the result keeps it.
    let a = ctx.upload(src).unwrap().reshape([1, src.len()]).unwrap();
    let out: GpuArray<D> = a.astype::<D>().unwrap();
    assert_eq!(out.shape(), &[1, src.len()]);
    let got = out.download().unwrap();
    for (i, (&x, &y)) in src.iter().zip(&got).enumerate() {
        let want: D = x.cast();
        assert_eq!(
            want.key(),
            y.key(),
            "{:?} -> {:?}: element {i}, {x:?}: want {want:?}, got {y:?}",
            S::DTYPE,
            D::DTYPE
        );
    }
    // Through AnyArray, the type chosen at run time.
    let any = AnyArray::from(ctx.upload(src).unwrap());
    let cast = any.astype(D::DTYPE).unwrap();
    assert_eq!(cast.dtype(), D::DTYPE);
    let back = cast.get::<D>().unwrap().download().unwrap();
    for (&a, &b) in got.iter().zip(&back) {
        assert_eq!(a.key(), b.key());
    }
}

/// Every target type for one source type.
macro_rules! to_every_type {
    ($ctx:expr, $s:ty) => {{
        let src = <$s as Inputs>::inputs(&mut rand::rng());
        check::<$s, f32>($ctx, &src);
        check::<$s, f64>($ctx, &src);
        check::<$s, f16>($ctx, &src);
        check::<$s, bf16>($ctx, &src);
        check::<$s, i32>($ctx, &src);
        check::<$s, u32>($ctx, &src);
        check::<$s, i64>($ctx, &src);
        check::<$s, u64>($ctx, &src);
        check::<$s, u8>($ctx, &src);
    }};
}

on_every_backend!(from_f32_to_every_type, |ctx| to_every_type!(ctx, f32));
on_every_backend!(from_f64_to_every_type, |ctx| to_every_type!(ctx, f64));
on_every_backend!(from_f16_to_every_type, |ctx| to_every_type!(ctx, f16));
on_every_backend!(from_bf16_to_every_type, |ctx| to_every_type!(ctx, bf16));
on_every_backend!(from_i32_to_every_type, |ctx| to_every_type!(ctx, i32));
on_every_backend!(from_u32_to_every_type, |ctx| to_every_type!(ctx, u32));
on_every_backend!(from_i64_to_every_type, |ctx| to_every_type!(ctx, i64));
on_every_backend!(from_u64_to_every_type, |ctx| to_every_type!(ctx, u64));
on_every_backend!(from_u8_to_every_type, |ctx| to_every_type!(ctx, u8));

on_every_backend!(a_cast_to_the_same_type_keeps_every_bit, |ctx| {
    // NaN payloads included: it is a copy.
    let v: Vec<f32> = (0..999u32)
        .map(|i| f32::from_bits(0x7fc0_0000 | i.wrapping_mul(2_654_435_761) >> 10))
        .collect();
    let a = ctx.upload(&v).unwrap();
    let b = a.astype::<f32>().unwrap();
    let bits: Vec<u32> = b.download().unwrap().iter().map(|x| x.to_bits()).collect();
    assert_eq!(bits, v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    let any = AnyArray::from(a).astype(DType::F32).unwrap();
    assert_eq!(any.get::<f32>().unwrap().download().unwrap().len(), 999);
});

on_every_backend!(a_transposed_view_is_cast_in_its_own_order, |ctx| {
    let (r, c) = (23, 41);
    let v: Vec<i64> = <i64 as Inputs>::inputs(&mut rand::rng())[..r * c].to_vec();
    let a = ctx.upload(&v).unwrap().reshape([r, c]).unwrap();
    let t = a.t().astype::<f64>().unwrap();
    assert_eq!(t.shape(), &[c, r]);
    assert!(t.is_contiguous());
    let got = t.download().unwrap();
    for j in 0..c {
        for i in 0..r {
            let want: f64 = v[i * c + j].cast();
            assert_eq!(got[j * r + i].to_bits(), want.to_bits(), "[{j}, {i}]");
        }
    }
    // A u8 view too, in the view's order (the copy kernel's u8 form).
    let bytes: Vec<u8> = (0..r * c).map(|i| (i * 7) as u8).collect();
    let b = ctx.upload(&bytes).unwrap().reshape([r, c]).unwrap();
    let tb = b.t().astype::<f32>().unwrap();
    let got = tb.download().unwrap();
    for j in 0..c {
        for i in 0..r {
            assert_eq!(got[j * r + i], bytes[i * c + j] as f32);
        }
    }
    // And a GpuArray that is itself strided (a view's astype on the whole).
    let s = a
        .view()
        .slice_step(1, 0..c, 2)
        .unwrap()
        .astype::<i32>()
        .unwrap();
    assert_eq!(s.shape(), &[r, c.div_ceil(2)]);
    let got = s.download().unwrap();
    for i in 0..r {
        for (k, j) in (0..c).step_by(2).enumerate() {
            assert_eq!(got[i * c.div_ceil(2) + k], v[i * c + j] as i32);
        }
    }
});

on_every_backend!(an_empty_array_casts_to_an_empty_array, |ctx| {
    let a = ctx.zeros::<f64>([0, 4]).unwrap();
    let b = a.astype::<u32>().unwrap();
    assert_eq!(b.shape(), &[0, 4]);
    assert!(b.download().unwrap().is_empty());
    let c = a.astype::<u8>().unwrap();
    assert_eq!(c.shape(), &[0, 4]);
});
