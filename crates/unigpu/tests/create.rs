//! Arrays made with contents (`full`, `ones`, `eye`, `arange`,
//! `linspace`, the `*_like` family) on every backend: every element
//! against a host reference written here from the documented rules
//! (docs/guide.md, "Creating arrays"), and errors, not panics, for bad
//! arguments.

mod common;

use rand::Rng;
use unigpu::{Context, Element, Error, GpuArray, bf16, f16};

/// The host's value of `x` (an f64) as each type, by Rust's `as` (f16 and
/// bf16 through f32: the cast rule).
trait FromF64: Element {
    fn from_f64(x: f64) -> Self;
    fn bits(self) -> u64;
}
macro_rules! from_f64 {
    ($($t:ty),*) => {$(
        impl FromF64 for $t {
            fn from_f64(x: f64) -> Self { x as $t }
            fn bits(self) -> u64 { bytemuck_bits(&self) }
        }
    )*};
}
from_f64!(f32, f64, i32, u32, i64, u64, u8);
impl FromF64 for f16 {
    fn from_f64(x: f64) -> Self {
        f16::from_f32(x as f32)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl FromF64 for bf16 {
    fn from_f64(x: f64) -> Self {
        bf16::from_f32(x as f32)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

fn bytemuck_bits<T: Element>(x: &T) -> u64 {
    let mut b = [0u8; 8];
    let s = std::mem::size_of::<T>();
    b[..s].copy_from_slice(bytemuck::bytes_of(x));
    u64::from_le_bytes(b)
}

fn assert_bits<T: FromF64>(what: &str, want: &[T], got: &[T]) {
    assert_eq!(want.len(), got.len(), "{what}: lengths");
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        assert_eq!(
            w.bits(),
            g.bits(),
            "{what} {:?}: element {i}: want {w:?}, got {g:?}",
            T::DTYPE
        );
    }
}

fn arange_ref<T: FromF64>(start: f64, stop: f64, step: f64) -> Vec<T> {
    // numpy's float64 arange: element 1 is `start + step`, the others
    // `i * d + start` with `d` the difference of the first two.
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    let d = (start + step) - start;
    (0..n)
        .map(|i| {
            T::from_f64(if i == 1 {
                start + step
            } else {
                i as f64 * d + start
            })
        })
        .collect()
}

fn linspace_ref<T: FromF64>(start: f64, stop: f64, num: usize) -> Vec<T> {
    // numpy: one element is `0 * (stop - start) + start`.
    let step = if num > 1 {
        (stop - start) / (num as f64 - 1.0)
    } else {
        stop - start
    };
    (0..num)
        .map(|i| {
            let mut v = if i + 1 == num && num > 1 {
                stop
            } else {
                i as f64 * step + start
            };
            if T::DTYPE.is_integer() {
                v = v.floor();
            }
            T::from_f64(v)
        })
        .collect()
}

fn ranges<T: FromF64>(ctx: &Context) {
    let mut rng = rand::rng();
    let mut cases = vec![
        (0.0, 10.0, 1.0),
        (-3.0, 7.5, 0.5),
        (10.0, 0.0, -1.0),
        (0.0, 1.0, 0.1),
        (5.0, 5.0, 1.0),
        (5.0, 0.0, 1.0),
        (-1e3, 1e3, 3.7),
        (1e3, -1e3, -3.7),
        (0.1, 5e3, 1e3),
        (16_777_215.0, 16_777_230.0, 1.0),
    ];
    for _ in 0..4 {
        let a = rng.random_range(-1e4..1e4);
        cases.push((
            a,
            a + rng.random_range(0.0..2e4),
            rng.random_range(0.1..50.0),
        ));
    }
    for (start, stop, step) in cases {
        let a: GpuArray<T> = ctx.arange(start, stop, step).unwrap();
        let want = arange_ref::<T>(start, stop, step);
        assert_eq!(a.shape(), &[want.len()]);
        assert_bits(
            &format!("arange({start}, {stop}, {step})"),
            &want,
            &a.download().unwrap(),
        );
    }
    let mut cases = vec![
        (0.0, 1.0, 5),
        (-2.0, 2.0, 7),
        (1.0, -1.0, 11),
        (3.0, 9.0, 1),
        (0.0, 1.0, 0),
        (0.0, 0.1, 1000),
    ];
    for _ in 0..4 {
        cases.push((
            rng.random_range(-1e3..1e3),
            rng.random_range(-1e3..1e3),
            rng.random_range(2..3000),
        ));
    }
    for (start, stop, num) in cases {
        let a: GpuArray<T> = ctx.linspace(start, stop, num).unwrap();
        let want = linspace_ref::<T>(start, stop, num);
        assert_eq!(a.shape(), &[num]);
        let got = a.download().unwrap();
        assert_bits(&format!("linspace({start}, {stop}, {num})"), &want, &got);
        if num > 1 && T::DTYPE == unigpu::DType::F64 {
            assert_eq!(
                got[num - 1].bits(),
                T::from_f64(stop).bits(),
                "the last is stop"
            );
        }
    }
}

fn fills<T: FromF64>(ctx: &Context) {
    let mut rng = rand::rng();
    let shape = [rng.random_range(1..9), rng.random_range(1..300)];
    let n = shape[0] * shape[1];
    let ones = ctx.ones::<T>(shape).unwrap();
    assert_eq!(ones.shape(), &shape);
    assert_bits(
        "ones",
        &vec![T::from_f64(1.0); n],
        &ones.download().unwrap(),
    );
    let v = T::from_f64(rng.random_range(-100.0..100.0));
    let full = ctx.full(shape, v).unwrap();
    assert_bits("full", &vec![v; n], &full.download().unwrap());
    let like = full.ones_like().unwrap();
    assert_eq!(like.shape(), &shape);
    assert_bits(
        "ones_like",
        &vec![T::from_f64(1.0); n],
        &like.download().unwrap(),
    );
    let z = full.zeros_like().unwrap();
    assert_eq!(z.shape(), &shape);
    assert_bits(
        "zeros_like",
        &vec![T::from_f64(0.0); n],
        &z.download().unwrap(),
    );
    let e = full.empty_like().unwrap();
    assert_eq!(e.shape(), &shape);
    assert_eq!(e.context().backend(), ctx.backend());
    let w = T::from_f64(rng.random_range(-100.0..100.0));
    assert_bits(
        "full_like",
        &vec![w; n],
        &full.full_like(w).unwrap().download().unwrap(),
    );
    for (r, c) in [(1, 1), (4, 4), (3, 7), (9, 2), (0, 3), (33, 33)] {
        let a = ctx.eye_rect::<T>(r, c).unwrap();
        assert_eq!(a.shape(), &[r, c]);
        let want: Vec<T> = (0..r * c)
            .map(|k| T::from_f64(if k / c == k % c { 1.0 } else { 0.0 }))
            .collect();
        assert_bits(
            &format!("eye_rect({r}, {c})"),
            &want,
            &a.download().unwrap(),
        );
    }
    let a = ctx.eye::<T>(5).unwrap();
    assert_eq!(a.shape(), &[5, 5]);
    let want: Vec<T> = (0..25)
        .map(|k| T::from_f64(if k % 6 == 0 { 1.0 } else { 0.0 }))
        .collect();
    assert_bits("eye(5)", &want, &a.download().unwrap());
}

macro_rules! every_type {
    ($f:ident, $ctx:expr) => {{
        $f::<f32>($ctx);
        $f::<f64>($ctx);
        $f::<f16>($ctx);
        $f::<bf16>($ctx);
        $f::<i32>($ctx);
        $f::<u32>($ctx);
        $f::<i64>($ctx);
        $f::<u64>($ctx);
        $f::<u8>($ctx);
    }};
}

on_every_backend!(
    arange_and_linspace_are_the_host_reference,
    |ctx| every_type!(ranges, ctx)
);
on_every_backend!(
    full_ones_eye_and_likes_are_the_host_reference,
    |ctx| every_type!(fills, ctx)
);

on_every_backend!(full_keeps_a_nan_and_negative_zero, |ctx| {
    let a = ctx.full([3, 2], -0.0f64).unwrap();
    assert!(
        a.download()
            .unwrap()
            .iter()
            .all(|x| x.to_bits() == (-0.0f64).to_bits())
    );
    let a = ctx.full(4, f32::NAN).unwrap();
    assert!(a.download().unwrap().iter().all(|x| x.is_nan()));
});

on_every_backend!(bad_arguments_are_errors, |ctx| {
    let refused = |r: unigpu::Result<GpuArray<f32>>, what: &str| match r {
        Err(Error::KernelArgs { kernel, message }) => {
            assert!(kernel.starts_with("Context::"), "{what}: {kernel}");
            assert!(!message.is_empty());
        }
        other => panic!("{what}: expected an error, got {other:?}"),
    };
    refused(ctx.arange(0.0, 1.0, 0.0), "step 0");
    refused(ctx.arange(f64::NAN, 1.0, 1.0), "NaN start");
    refused(ctx.arange(0.0, f64::INFINITY, 1.0), "infinite stop");
    refused(ctx.arange(0.0, 1.0, f64::NAN), "NaN step");
    refused(ctx.arange(0.0, 1e12, 1.0), "too many");
    refused(ctx.linspace(f64::NAN, 1.0, 3), "NaN start");
    refused(ctx.linspace(0.0, f64::NEG_INFINITY, 3), "infinite stop");
    refused(ctx.linspace(0.0, 1.0, 1 << 33), "too many");
    // A shape whose element count overflows is an error too.
    assert!(ctx.ones::<f32>([usize::MAX, 2]).is_err());
    assert!(ctx.full([usize::MAX, 3], 1u8).is_err());
    assert!(ctx.eye_rect::<f32>(usize::MAX, 2).is_err());
});
