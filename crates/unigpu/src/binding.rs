//! The one policy of the language bindings (the C API in crates/capi, the
//! Python package in python/): how a call that names several shared
//! arrays locks them and treats an array named twice, which kinds of error
//! there are, and the built-in op kinds they dispatch on. Both bindings
//! call this module, so the same call behaves the same in C and Python.
//!
//! A binding's array is a [`SharedArray`] (`Arc<RwLock<AnyArray>>`):
//! reads share it, writes take it alone. [`lock`] locks each distinct
//! array of a call once, in address order (two threads naming the same
//! arrays in any order cannot deadlock), with one aliasing rule:
//!
//! - an array may be read several times in a call (`add(x, x, out)`);
//! - an array the call writes may also be one of its inputs
//!   (`add(x, y, out=x)`, a kernel's `const float*` and `float*` on the
//!   same array): the inputs that name it read a copy of it taken under
//!   the write lock before the call, so the call sees the array as it was
//!   before (what a Rust caller gets by copying the input first, the only
//!   way the borrow rules allow);
//! - an array may not be written twice in one call (two outputs of a
//!   kernel launch): there is no order in which both writes mean
//!   something, so the call is refused ([`ErrorKind::InvalidArgument`],
//!   [`CallError::Refused`]) before anything runs.

use std::sync::RwLock;

use crate::any_array::{AnyView, AnyViewMut};
use crate::{AnyArray, Ops, Scalar};

pub use crate::ops::kinds::{Binary, BinaryMath, Compare, Reduce, Unary, UnaryMath};

mod comm;
mod policy;
mod precompiled;

pub use comm::{SendRecvOp, all_reduce, broadcast, collective, send_recv};
use policy::write_guard;
pub use policy::{
    CallError, ErrorKind, Handle, Locked, Operand, SharedArray, Use, View, aliased_writes, lock,
    split, with_arrays,
};
pub use precompiled::{BoundModule, Declaration, ImageKind, load_module};
/// The first array a call writes, as its body sees it.
fn written(w: Vec<&mut AnyArray>) -> &mut AnyArray {
    w.into_iter()
        .next()
        .expect("every call below names one written array")
}

/// `out = a ∘ b` on `ops`, with `a`, `b` read and `out` written under the
/// module's rule; `a` and `b` broadcast to `out`'s shape.
pub fn binary<'a>(
    ops: Ops<'_>,
    op: Binary,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(out.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.binary_any(
                op,
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `out = op(x)` on `ops`.
pub fn unary<'a>(
    ops: Ops<'_>,
    op: Unary,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [x, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(out.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.unary_any(
                op,
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `out = op(x)` for the math ops of one input on `ops` (`params`: see
/// [`Ops::unary_math_any`]).
pub fn unary_math<'a>(
    ops: Ops<'_>,
    op: UnaryMath,
    params: [Scalar; 2],
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [x, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(out.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.unary_math_any(
                op,
                params,
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `out = op(a, b)` (`div`, `minimum`, `maximum`, `pow`) on `ops`,
/// broadcasting as [`binary`].
pub fn binary_math<'a>(
    ops: Ops<'_>,
    op: BinaryMath,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(out.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.binary_math_any(
                op,
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// `mask = a op b` (a u8 0/1 mask) on `ops`, broadcasting as [`binary`].
pub fn compare<'a>(
    ops: Ops<'_>,
    op: Compare,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, mask] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(mask.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.compare_any(
                op,
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: mask.layout,
                },
            )
        },
    )
}

/// `out = mask != 0 ? a : b` on `ops` (`mask` u8), the four broadcast to
/// `out`'s shape.
pub fn where_<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 4],
    names: [&str; 4],
) -> Result<(), CallError> {
    let [mask, a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(mask.array, names[0]),
            Operand::read(a.array, names[1]),
            Operand::read(b.array, names[2]),
            Operand::write(out.array, names[3]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.where_any(
                AnyView {
                    array: r[0],
                    layout: mask.layout,
                },
                AnyView {
                    array: r[1],
                    layout: a.layout,
                },
                AnyView {
                    array: r[2],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

/// A reduction on `ops`: `Sum` and `Max` of `x`, `Dot` of `x` and `y`
/// (`y` is ignored by the others).
pub fn reduce<'a>(
    ops: Ops<'_>,
    op: Reduce,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<Scalar, CallError> {
    let [x, y] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::read(y.array, names[1]),
        ],
        |v| {
            let (r, _) = split(v);
            let xv = AnyView {
                array: r[0],
                layout: x.layout,
            };
            match op {
                Reduce::Sum => ops.sum_any(xv),
                Reduce::Max => ops.max_any(xv),
                Reduce::Dot => ops.dot_any(
                    xv,
                    AnyView {
                        array: r[1],
                        layout: y.layout,
                    },
                ),
            }
        },
    )
}

/// `dst = src` on `ops` (`copy(x, x)` leaves `x` as it is).
pub fn copy<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [src, dst] = arrays.map(Into::into);
    if std::ptr::eq(src.array, dst.array) && src.layout == dst.layout {
        // The rule's result (the array as it was) without the copy it
        // would take.
        return with_arrays(&[Operand::read(src.array, names[0])], |_| Ok(()));
    }
    with_arrays(
        &[
            Operand::read(src.array, names[0]),
            Operand::write(dst.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.copy_any(
                AnyView {
                    array: r[0],
                    layout: src.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: dst.layout,
                },
            )
        },
    )
}

/// `dst = src` on `src`'s default stream ([`AnyArray::copy_to`];
/// `copy_to(x, x)` leaves `x` as it is).
pub fn copy_to([src, dst]: [&RwLock<AnyArray>; 2], names: [&str; 2]) -> Result<(), CallError> {
    if std::ptr::eq(src, dst) {
        return with_arrays(&[Operand::read(src, names[0])], |_| Ok(()));
    }
    with_arrays(
        &[Operand::read(src, names[0]), Operand::write(dst, names[1])],
        |v| {
            let (r, w) = split(v);
            r[0].copy_to(written(w))
        },
    )
}

/// Every element of `x` set to `value` on `ops`.
pub fn fill<'a>(ops: Ops<'_>, x: impl Into<Handle<'a>>, value: Scalar) -> Result<(), CallError> {
    let x = x.into();
    let mut g = write_guard(x.array);
    Ok(ops.fill_any(
        AnyViewMut {
            array: &mut g,
            layout: x.layout,
        },
        value,
    )?)
}

/// `x = alpha·x` on `ops`.
pub fn scale<'a>(ops: Ops<'_>, alpha: Scalar, x: impl Into<Handle<'a>>) -> Result<(), CallError> {
    let x = x.into();
    let mut g = write_guard(x.array);
    Ok(ops.scale_any(
        alpha,
        AnyViewMut {
            array: &mut g,
            layout: x.layout,
        },
    )?)
}

/// `y = alpha·x + y` on `ops`.
pub fn axpy<'a>(
    ops: Ops<'_>,
    alpha: Scalar,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
) -> Result<(), CallError> {
    let [x, y] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(y.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.axpy_any(
                alpha,
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: y.layout,
                },
            )
        },
    )
}

/// `c = a·b` (row-major `m×k`, `k×n`) on `ops`.
pub fn matmul<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
    mkn: (usize, usize, usize),
) -> Result<(), CallError> {
    let [a, b, c] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(c.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.matmul_any(
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: c.layout,
                },
                mkn,
            )
        },
    )
}

/// `out = softmax(x)` along `axis` (`log`: `log_softmax`), `out` of `x`'s
/// shape; `out` may not be `x` itself (a row is read after parts of it
/// are written).
pub fn softmax<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 2],
    names: [&str; 2],
    axis: usize,
    log: bool,
) -> Result<(), CallError> {
    let [x, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(x.array, names[0]),
            Operand::write(out.array, names[1]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.softmax_any(
                AnyView {
                    array: r[0],
                    layout: x.layout,
                },
                axis,
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
                log,
            )
        },
    )
}

/// `out = a·b` of 2-D arrays or views, the sizes from their shapes; when
/// any is 3-D, a batched product ([`Ops::bmm`](crate::Ops::bmm)).
pub fn mm<'a>(
    ops: Ops<'_>,
    arrays: [impl Into<Handle<'a>>; 3],
    names: [&str; 3],
) -> Result<(), CallError> {
    let [a, b, out] = arrays.map(Into::into);
    with_arrays(
        &[
            Operand::read(a.array, names[0]),
            Operand::read(b.array, names[1]),
            Operand::write(out.array, names[2]),
        ],
        |v| {
            let (r, w) = split(v);
            ops.mm_any(
                AnyView {
                    array: r[0],
                    layout: a.layout,
                },
                AnyView {
                    array: r[1],
                    layout: b.layout,
                },
                AnyViewMut {
                    array: written(w),
                    layout: out.layout,
                },
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::policy::{key, read_guard};
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::{Context, DType};

    fn array(ctx: &Context, values: &[f32]) -> RwLock<AnyArray> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        RwLock::new(AnyArray::from_bytes(ctx, DType::F32, &bytes).unwrap())
    }

    fn values(a: &RwLock<AnyArray>) -> Vec<f32> {
        let a = read_guard(a);
        let mut bytes = vec![0u8; a.len() * 4];
        a.download_bytes(&mut bytes).unwrap();
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.random_range(-4..=4) as f32).collect()
    }

    #[test]
    fn an_output_that_is_also_an_input_reads_the_input_as_it_was() {
        let ctx = Context::host().unwrap();
        let mut rng = StdRng::seed_from_u64(27);
        for n in [1, 7, 64, 1000] {
            let (xv, yv) = (random(&mut rng, n), random(&mut rng, n));
            let (x, y) = (array(&ctx, &xv), array(&ctx, &yv));
            // x = x + y
            binary(ctx.ops(), Binary::Add, [&x, &y, &x], ["a", "b", "out"]).unwrap();
            let want: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| a + b).collect();
            assert_eq!(values(&x), want);
            // y = y * y
            binary(ctx.ops(), Binary::Mul, [&y, &y, &y], ["a", "b", "out"]).unwrap();
            let want: Vec<f32> = yv.iter().map(|v| v * v).collect();
            assert_eq!(values(&y), want);
            // x = relu(x)
            let before = values(&x);
            unary(ctx.ops(), Unary::Relu, [&x, &x], ["x", "out"]).unwrap();
            let want: Vec<f32> = before.iter().map(|v| v.max(0.0)).collect();
            assert_eq!(values(&x), want);
            // y = 2·y + y
            let before = values(&y);
            axpy(ctx.ops(), Scalar::new(2.0f32), [&y, &y], ["x", "y"]).unwrap();
            let want: Vec<f32> = before.iter().map(|v| 3.0 * v).collect();
            assert_eq!(values(&y), want);
            // copy(x, x) leaves x as it is
            let before = values(&x);
            copy(ctx.ops(), [&x, &x], ["src", "dst"]).unwrap();
            assert_eq!(values(&x), before);
            ctx.default_stream().sync().unwrap();
        }
    }

    #[test]
    fn the_math_ops_comparisons_and_where_follow_the_same_rule() {
        let ctx = Context::host().unwrap();
        let mut rng = StdRng::seed_from_u64(28);
        for n in [1, 7, 64, 1000] {
            let (xv, yv) = (random(&mut rng, n), random(&mut rng, n));
            let (x, y) = (array(&ctx, &xv), array(&ctx, &yv));
            // x = clamp(x, -1, 2), in place
            let params = [Scalar::new(-1.0f32), Scalar::new(2.0f32)];
            unary_math(ctx.ops(), UnaryMath::Clamp, params, [&x, &x], ["x", "out"]).unwrap();
            let xc: Vec<f32> = xv.iter().map(|v| v.clamp(-1.0, 2.0)).collect();
            assert_eq!(values(&x), xc);
            // y = maximum(y, x), in place
            binary_math(
                ctx.ops(),
                BinaryMath::Maximum,
                [&y, &x, &y],
                ["a", "b", "out"],
            )
            .unwrap();
            let ym: Vec<f32> = yv.iter().zip(&xc).map(|(a, b)| a.max(*b)).collect();
            assert_eq!(values(&y), ym);
            // mask = x < y (u8), then x = mask ? x : y, in place
            let mask = RwLock::new(AnyArray::alloc(&ctx, DType::U8, n).unwrap());
            compare(ctx.ops(), Compare::Lt, [&x, &y, &mask], ["a", "b", "mask"]).unwrap();
            let mut m = vec![0u8; n];
            read_guard(&mask).download_bytes(&mut m).unwrap();
            let want: Vec<u8> = xc.iter().zip(&ym).map(|(a, b)| u8::from(a < b)).collect();
            assert_eq!(m, want);
            where_(ctx.ops(), [&mask, &x, &y, &x], ["mask", "a", "b", "out"]).unwrap();
            let want: Vec<f32> = (0..n)
                .map(|i| if m[i] != 0 { xc[i] } else { ym[i] })
                .collect();
            assert_eq!(values(&x), want);
            // A float mask is refused with the dtype error, not a panic.
            let e = where_(ctx.ops(), [&x, &x, &y, &y], ["mask", "a", "b", "out"]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::DTypeMismatch);
            ctx.default_stream().sync().unwrap();
        }
    }

    #[test]
    fn an_array_written_twice_is_refused_before_anything_is_locked() {
        let ctx = Context::host().unwrap();
        let (x, y) = (array(&ctx, &[1.0]), array(&ctx, &[2.0]));
        // Held for writing elsewhere: a refusal must not wait for it.
        let _held = write_guard(&y);
        let e = lock(&[
            Operand::read(&x, "args[0]"),
            Operand::write(&y, "args[1]"),
            Operand::read(&y, "args[2]"),
            Operand::write(&y, "args[3]"),
        ])
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            e.to_string(),
            "`args[1]` and `args[3]` are the same array, and both are written; pass separate arrays"
        );
    }

    #[test]
    fn each_distinct_array_is_locked_once_in_address_order() {
        let ctx = Context::host().unwrap();
        let mut rng = StdRng::seed_from_u64(4);
        let arrays: Vec<RwLock<AnyArray>> = (0..6).map(|i| array(&ctx, &[i as f32])).collect();
        for _ in 0..200 {
            // Random operands: each array read, written or both, any order.
            let mut ops = Vec::new();
            let mut written = vec![false; arrays.len()];
            for _ in 0..rng.random_range(1..10) {
                let i = rng.random_range(0..arrays.len());
                let write = !written[i] && rng.random_bool(0.3);
                written[i] |= write;
                ops.push(if write {
                    Operand::write(&arrays[i], "w")
                } else {
                    Operand::read(&arrays[i], "r")
                });
            }
            let mut locked = lock(&ops).unwrap();
            let distinct: std::collections::BTreeSet<usize> =
                ops.iter().map(|o| key(o.array)).collect();
            assert_eq!(locked.counts().0, distinct.len());
            let copies = locked.counts().1;
            let views = locked.views();
            assert_eq!(views.len(), ops.len());
            for (v, o) in views.iter().zip(&ops) {
                // Every view is its operand's array (or a copy of it) with
                // its use.
                assert_eq!(matches!(v, View::Write(_)), o.use_ == Use::Write);
                let i = arrays
                    .iter()
                    .position(|a| std::ptr::eq(a, o.array))
                    .unwrap();
                let mut b = [0u8; 4];
                v.get().download_bytes(&mut b).unwrap();
                assert_eq!(f32::from_ne_bytes(b), i as f32);
            }
            let read_and_written = (0..arrays.len())
                .filter(|&i| {
                    written[i]
                        && ops
                            .iter()
                            .any(|o| o.use_ == Use::Read && std::ptr::eq(o.array, &arrays[i]))
                })
                .count();
            assert_eq!(copies, read_and_written);
        }
        // Two threads locking the same arrays in opposite orders.
        let (a, b) = (&arrays[0], &arrays[1]);
        std::thread::scope(|s| {
            for flip in [false, true] {
                s.spawn(move || {
                    for _ in 0..500 {
                        let (p, q) = if flip { (b, a) } else { (a, b) };
                        let mut l = lock(&[Operand::read(p, "p"), Operand::write(q, "q")]).unwrap();
                        drop(l.views());
                    }
                });
            }
        });
    }
}
