//! Reductions over axes and softmax (issue 28, item 5 in part), on every
//! backend, against host references computed in f64 by plain loops over
//! the row-major host copy.

mod common;

use common::random_vec;
use rand::Rng;
use unigpu::{Context, Error, GpuArray};

/// `v` made small (within ±8), a non-finite one 0.5.
fn small(v: f64) -> f64 {
    if v.is_finite() {
        (v % 8.0).clamp(-8.0, 8.0)
    } else {
        0.5
    }
}

/// A random array of `shape` whose elements are small, some negative.
fn random_f32(ctx: &Context, shape: &[usize]) -> (GpuArray<f32>, Vec<f32>) {
    let host: Vec<f32> = random_vec::<f32>(shape.iter().product())
        .into_iter()
        .map(|v| small(f64::from(v)) as f32)
        .collect();
    (ctx.upload(&host).unwrap().reshape(shape).unwrap(), host)
}

/// The host reference: for each output position (kept axes, row-major),
/// the elements over the reduced axes in row-major order of those axes.
fn groups(shape: &[usize], reduced: &[usize], host: &[f32]) -> Vec<Vec<(usize, f32)>> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !reduced.contains(a)).collect();
    let rows: usize = kept.iter().map(|&a| shape[a]).product();
    let len: usize = reduced.iter().map(|&a| shape[a]).product();
    let strides: Vec<usize> = (0..shape.len())
        .map(|a| shape[a + 1..].iter().product())
        .collect();
    (0..rows)
        .map(|r| {
            let mut at = 0;
            let mut rest = r;
            for &a in kept.iter().rev() {
                at += (rest % shape[a]) * strides[a];
                rest /= shape[a];
            }
            (0..len)
                .map(|k| {
                    let (mut off, mut rest) = (at, k);
                    for &a in reduced.iter().rev() {
                        off += (rest % shape[a]) * strides[a];
                        rest /= shape[a];
                    }
                    (k, host[off])
                })
                .collect()
        })
        .collect()
}

on_every_backend!(reductions_over_axes_match_the_host, |ctx| {
    let mut rng = rand::rng();
    let ops = ctx.ops();
    for _ in 0..6 {
        let shape = [
            rng.random_range(1..5usize),
            rng.random_range(1..7),
            rng.random_range(1..300),
        ];
        let (a, host) = random_f32(ctx, &shape);
        let mut reduced: Vec<usize> = (0..3).filter(|_| rng.random_bool(0.5)).collect();
        if reduced.is_empty() {
            reduced.push(rng.random_range(0..3));
        }
        let keepdims = rng.random_bool(0.5);
        let want_shape: Vec<usize> = (0..3)
            .filter_map(|i| match (reduced.contains(&i), keepdims) {
                (false, _) => Some(shape[i]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let g = groups(&shape, &reduced, &host);

        let sum = ops.sum_axes(&a, Some(&reduced), keepdims).unwrap();
        assert_eq!(sum.shape(), want_shape.as_slice());
        let got = sum.download().unwrap();
        let mean = ops
            .mean_axes(&a, Some(&reduced), keepdims)
            .unwrap()
            .download()
            .unwrap();
        for (r, row) in g.iter().enumerate() {
            let want: f64 = row.iter().map(|&(_, v)| v as f64).sum();
            let bound: f64 =
                row.iter().map(|&(_, v)| (v as f64).abs()).sum::<f64>() * row.len() as f64 * 6e-8;
            assert!(
                (got[r] as f64 - want).abs() <= bound + 1e-30,
                "sum {reduced:?} row {r}: {} vs {want}",
                got[r]
            );
            let wm = want / row.len() as f64;
            assert!(
                (mean[r] as f64 - wm).abs() <= bound / row.len() as f64 + wm.abs() * 1.2e-7 + 1e-30,
                "mean row {r}"
            );
        }
        let max = ops
            .max_axes(&a, Some(&reduced), keepdims)
            .unwrap()
            .download()
            .unwrap();
        let min = ops
            .min_axes(&a, Some(&reduced), keepdims)
            .unwrap()
            .download()
            .unwrap();
        for (r, row) in g.iter().enumerate() {
            let wmax = row
                .iter()
                .map(|&(_, v)| v)
                .fold(f32::NEG_INFINITY, f32::max);
            let wmin = row.iter().map(|&(_, v)| v).fold(f32::INFINITY, f32::min);
            assert_eq!(
                (max[r], min[r]),
                (wmax, wmin),
                "max/min {reduced:?} row {r}"
            );
        }
    }
});

on_every_backend!(argmax_takes_the_first_extreme_or_the_first_nan, |ctx| {
    let mut rng = rand::rng();
    let ops = ctx.ops();
    // Short rows and long ones: the GPU kernels take eight elements a
    // step past 512, the CPU's chunks are sixteen elements (a row shorter
    // than two of them has no chunk to get wrong).
    for len in [
        rng.random_range(1..32usize),
        rng.random_range(32..3000usize),
    ] {
        let rows = rng.random_range(1..9usize);
        // Few distinct values, so ties are common; some NaNs in some rows.
        let mut host: Vec<f32> = (0..rows * len)
            .map(|_| rng.random_range(0..5) as f32)
            .collect();
        for r in 0..rows {
            if r % 3 == 1 {
                let j = rng.random_range(0..len);
                host[r * len + j] = f32::NAN;
                let k = rng.random_range(0..len);
                host[r * len + k] = f32::NAN;
            }
        }
        let a = ctx.upload(&host).unwrap().reshape([rows, len]).unwrap();
        let am = ops.argmax(&a, Some(1), false).unwrap().download().unwrap();
        let an = ops.argmin(&a, Some(1), false).unwrap().download().unwrap();
        let mx = ops
            .max_axes(&a, Some(&[1]), false)
            .unwrap()
            .download()
            .unwrap();
        for r in 0..rows {
            let row = &host[r * len..(r + 1) * len];
            let first_nan = row.iter().position(|v| v.is_nan());
            let wmax = first_nan.unwrap_or_else(|| {
                let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                row.iter().position(|&v| v == m).unwrap()
            });
            let wmin = first_nan.unwrap_or_else(|| {
                let m = row.iter().copied().fold(f32::INFINITY, f32::min);
                row.iter().position(|&v| v == m).unwrap()
            });
            assert_eq!(
                (am[r] as usize, an[r] as usize),
                (wmax, wmin),
                "row {r}: {row:?}"
            );
            assert_eq!(
                mx[r].is_nan(),
                first_nan.is_some(),
                "max of row {r} propagates NaN"
            );
        }
        // Over the flattened array, and over a transposed view.
        let flat = ops.argmax(&a, None, false).unwrap();
        assert_eq!(flat.shape(), &[] as &[usize]);
        let fi = flat.download().unwrap()[0] as usize;
        let first_nan = host.iter().position(|v| v.is_nan());
        let m = host.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(
            fi,
            first_nan.unwrap_or_else(|| host.iter().position(|&v| v == m).unwrap())
        );
        let t = ops.argmax(&a.t(), Some(0), true).unwrap();
        assert_eq!(t.shape(), &[1, rows]);
        assert_eq!(t.download().unwrap(), am);
        match ops.argmax(&a, Some(2), false) {
            Err(Error::Shape { message, .. }) => assert!(message.contains("axis 2"), "{message}"),
            other => panic!("argmax over a missing axis: {other:?}"),
        }
    }
    let empty = ctx.zeros::<f32>([3, 0]).unwrap();
    assert!(matches!(
        ops.max_axes(&empty, Some(&[1]), false),
        Err(Error::Shape { .. })
    ));
    assert_eq!(
        ops.sum_axes(&empty, Some(&[1]), false)
            .unwrap()
            .download()
            .unwrap(),
        vec![0.0; 3]
    );
});

on_every_backend!(softmax_over_any_axis_matches_the_host, |ctx| {
    let mut rng = rand::rng();
    let ops = ctx.ops();
    for round in 0..4 {
        // Rows the kernel takes one element a step (up to 448) and longer
        // ones (eight elements a step past that), two of each.
        let len = if round % 2 == 0 {
            rng.random_range(1..=448usize)
        } else {
            rng.random_range(449..3000usize)
        };
        let shape = [rng.random_range(1..6usize), len];
        let (a, host) = random_f32(ctx, &shape);
        let axis = rng.random_range(0..2);
        let mut out = ctx.zeros::<f32>(shape).unwrap();
        let mut lout = ctx.zeros::<f32>(shape).unwrap();
        ops.softmax(&a, axis, &mut out).unwrap();
        ops.log_softmax(&a, axis, &mut lout).unwrap();
        let (got, lgot) = (out.download().unwrap(), lout.download().unwrap());
        let g = groups(&shape, &[axis], &host);
        for (r, row) in g.iter().enumerate() {
            let m = row
                .iter()
                .map(|&(_, v)| v as f64)
                .fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|&(_, v)| (v as f64 - m).exp()).sum();
            for &(k, v) in row {
                let (i, j) = if axis == 1 { (r, k) } else { (k, r) };
                let at = i * shape[1] + j;
                let want = (v as f64 - m).exp() / s;
                let lwant = (v as f64 - m) - s.ln();
                assert!(
                    (got[at] as f64 - want).abs() <= 1e-5 * want + 1e-7,
                    "softmax [{i},{j}]: {} vs {want}",
                    got[at]
                );
                assert!(
                    (lgot[at] as f64 - lwant).abs() <= 1e-5 * lwant.abs() + 2e-6,
                    "log_softmax [{i},{j}]: {} vs {lwant}",
                    lgot[at]
                );
            }
        }
        // Into a transposed output view: the same values, transposed.
        let mut t = ctx.zeros::<f32>([shape[1], shape[0]]).unwrap();
        ops.softmax(&a, axis, &mut t.view_mut().t()).unwrap();
        let tt = t.t().download().unwrap();
        assert_eq!(tt, got);
    }
});

// Rows with -inf in them, as a causal attention mask makes: row r keeps
// its first k_r elements and the rest are -inf, so most of the kernel's
// 64 invocations see nothing but -inf (an online softmax that took
// exp(-inf - (-inf)) there gave NaNs). Also a row of -inf alone, one
// with a +inf and one with a NaN: NaNs, as the two-pass formula (the
// host's, in f64) gives them.
on_every_backend!(
    softmax_of_masked_and_non_finite_rows_matches_the_host,
    |ctx| {
        let mut rng = rand::rng();
        let ops = ctx.ops();
        // A row of single steps (up to 448) and one of steps of eight.
        let rows = 8usize;
        for len in [
            rng.random_range(64..=448usize),
            rng.random_range(449..1200usize),
        ] {
            let mut host: Vec<f32> = random_vec::<f32>(rows * len)
                .into_iter()
                .map(|v| small(f64::from(v)) as f32)
                .collect();
            for r in 0..5 {
                let keep = rng.random_range(1..4usize) + r * rng.random_range(0..30usize);
                for v in &mut host[r * len + keep.min(len)..(r + 1) * len] {
                    *v = f32::NEG_INFINITY;
                }
            }
            host[5 * len..6 * len].fill(f32::NEG_INFINITY);
            host[6 * len + rng.random_range(0..len)] = f32::INFINITY;
            host[7 * len + rng.random_range(0..len)] = f32::NAN;
            let a = ctx.upload(&host).unwrap().reshape([rows, len]).unwrap();
            let mut out = ctx.zeros::<f32>([rows, len]).unwrap();
            let mut lout = ctx.zeros::<f32>([rows, len]).unwrap();
            ops.softmax(&a, 1, &mut out).unwrap();
            ops.log_softmax(&a, 1, &mut lout).unwrap();
            let (got, lgot) = (out.download().unwrap(), lout.download().unwrap());
            for r in 0..rows {
                let row: Vec<f64> = host[r * len..(r + 1) * len]
                    .iter()
                    .map(|&v| f64::from(v))
                    .collect();
                let m = row.iter().copied().fold(f64::NEG_INFINITY, |m, v| {
                    if m.is_nan() || v.is_nan() {
                        f64::NAN
                    } else {
                        m.max(v)
                    }
                });
                let s: f64 = row.iter().map(|&v| (v - m).exp()).sum();
                for (j, &v) in row.iter().enumerate() {
                    let (g, lg) = (f64::from(got[r * len + j]), f64::from(lgot[r * len + j]));
                    let (want, lwant) = ((v - m).exp() / s, (v - m) - s.ln());
                    if want.is_nan() {
                        assert!(g.is_nan(), "softmax [{r},{j}] of {len}: {g}, want NaN");
                    } else {
                        assert!(
                            (g - want).abs() <= 1e-5 * want + 1e-7,
                            "softmax [{r},{j}] of {len}: {g} vs {want}"
                        );
                    }
                    if lwant.is_nan() {
                        assert!(
                            lg.is_nan(),
                            "log_softmax [{r},{j}] of {len}: {lg}, want NaN"
                        );
                    } else if lwant.is_infinite() {
                        assert_eq!(lg, lwant, "log_softmax [{r},{j}] of {len}");
                    } else {
                        assert!(
                            (lg - lwant).abs() <= 1e-5 * lwant.abs() + 2e-6,
                            "log_softmax [{r},{j}] of {len}: {lg} vs {lwant}"
                        );
                    }
                }
            }
        }
    }
);

// f64 and f16 rows (f16 computed in f32): sum, max, min, argmax and
// argmin over the last axis, and softmax, against the host in f64, with
// row lengths around the CPU form's 16 lanes (1, 15, 16, 17 and long
// ones), a NaN in some rows, and ties of +0 and -0.
on_every_backend!(row_ops_in_f64_and_f16_match_the_host, |ctx| {
    let ops = ctx.ops();
    let mut rng = rand::rng();
    for len in [1usize, 15, 16, 17, rng.random_range(18..300)] {
        let rows = rng.random_range(1..40);
        let mut host: Vec<f64> = random_vec::<f64>(rows * len)
            .into_iter()
            .map(small)
            .collect();
        // Row 0: a NaN somewhere; row 1 (when there): zeros of both signs
        // as its extreme.
        host[rng.random_range(0..len)] = f64::NAN;
        if rows > 1 {
            for v in &mut host[len..2 * len] {
                *v = -v.abs() - 1.0;
            }
            host[len + len / 2] = -0.0;
            host[len + len - 1] = 0.0;
        }
        let halfs: Vec<half::f16> = host.iter().map(|&v| half::f16::from_f64(v)).collect();
        let a64 = ctx.upload(&host).unwrap().reshape([rows, len]).unwrap();
        let a16 = ctx.upload(&halfs).unwrap().reshape([rows, len]).unwrap();
        // Over the last axis, downloaded.
        let row_op = |r: unigpu::Result<GpuArray<f64>>| r.unwrap().download().unwrap();
        let row_op16 = |r: unigpu::Result<GpuArray<half::f16>>| r.unwrap().download().unwrap();
        let row_idx = |r: unigpu::Result<GpuArray<u32>>| r.unwrap().download().unwrap();
        let got64 = (
            row_op(ops.sum_axes(&a64, Some(&[1]), false)),
            row_op(ops.max_axes(&a64, Some(&[1]), false)),
            row_op(ops.min_axes(&a64, Some(&[1]), false)),
            row_idx(ops.argmax(&a64, Some(1), false)),
            row_idx(ops.argmin(&a64, Some(1), false)),
        );
        let got16 = (
            row_op16(ops.sum_axes(&a16, Some(&[1]), false)),
            row_op16(ops.max_axes(&a16, Some(&[1]), false)),
            row_idx(ops.argmax(&a16, Some(1), false)),
        );
        let mut sm = ctx
            .zeros::<f64>(rows * len)
            .unwrap()
            .reshape([rows, len])
            .unwrap();
        // Vulkan has no f64 `exp` (SPIR-V's GLSL.std.450 takes f32 only):
        // refused there, as the element-wise f64 math is.
        if ctx.backend() == unigpu::Backend::Vulkan {
            match ops.softmax(&a64, 1, &mut sm) {
                Err(Error::Unsupported { what, .. }) => assert!(what.contains("f64"), "{what}"),
                other => panic!("f64 softmax on vulkan: {other:?}"),
            }
        } else {
            ops.softmax(&a64, 1, &mut sm).unwrap();
        }
        let sm = sm.download().unwrap();
        for r in 0..rows {
            let row = &host[r * len..(r + 1) * len];
            let row16: Vec<f64> = halfs[r * len..(r + 1) * len]
                .iter()
                .map(|v| v.to_f64())
                .collect();
            // First NaN, else first extreme (of +0 and -0, the first).
            let pick = |row: &[f64], max: bool| -> usize {
                row.iter().position(|v| v.is_nan()).unwrap_or_else(|| {
                    let m = row.iter().copied().fold(row[0], |m, v| {
                        if (max && v > m) || (!max && v < m) {
                            v
                        } else {
                            m
                        }
                    });
                    row.iter().position(|&v| v == m).unwrap()
                })
            };
            let (imax, imin) = (pick(row, true), pick(row, false));
            assert_eq!(got64.3[r] as usize, imax, "argmax f64, row {r} of {len}");
            assert_eq!(got64.4[r] as usize, imin, "argmin f64, row {r} of {len}");
            for (got, want, what) in [
                (got64.1[r], row[imax], "max"),
                (got64.2[r], row[imin], "min"),
            ] {
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{what} f64, row {r} of {len}: {got} vs {want}"
                );
            }
            let i16 = pick(&row16, true);
            assert_eq!(got16.2[r] as usize, i16, "argmax f16, row {r} of {len}");
            let (g, w) = (got16.1[r].to_f64(), row16[i16]);
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "max f16, row {r} of {len}: {g} vs {w}"
            );
            let bound: f64 = row.iter().map(|v| v.abs()).sum::<f64>();
            let want: f64 = row.iter().sum();
            let s = got64.0[r];
            assert!(
                (s - want).abs() <= bound * len as f64 * 1.2e-16 || (s.is_nan() && want.is_nan()),
                "sum f64, row {r} of {len}: {s} vs {want}"
            );
            let want16: f64 = row16.iter().sum();
            let b16: f64 = row16.iter().map(|v| v.abs()).sum::<f64>() * len as f64 * 6e-8;
            let s16 = got16.0[r].to_f64();
            assert!(
                (s16 - want16).abs() <= b16 + want16.abs() * 1e-3
                    || (s16.is_nan() && want16.is_nan()),
                "sum f16, row {r} of {len}: {s16} vs {want16}"
            );
            if ctx.backend() == unigpu::Backend::Vulkan {
                continue;
            }
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let any_nan = row.iter().any(|v| v.is_nan());
            let total: f64 = row.iter().map(|&v| (v - m).exp()).sum();
            for (j, &v) in row.iter().enumerate() {
                let got = sm[r * len + j];
                if any_nan {
                    assert!(
                        got.is_nan(),
                        "softmax f64 of a row with a NaN, [{r},{j}]: {got}"
                    );
                } else {
                    let want = (v - m).exp() / total;
                    assert!(
                        (got - want).abs() <= 1e-13 * want + 1e-300,
                        "softmax f64 [{r},{j}] of {len}: {got} vs {want}"
                    );
                }
            }
        }
    }
});
