//! Arrays with shapes and views (issue 28, item 1; DLPack shapes, item 2):
//! every view's elements, read and written on every backend, against a
//! host reference that indexes the row-major host copy by hand (not
//! through `Layout`), and the ordering of a write through a view.

mod common;

use common::{GATE_TIMEOUT, Gate, WATCH, assert_same, random_vec};
use rand::Rng;
use unigpu::{Context, Error, GpuArray};

/// The host reference of a view: `shape` elements, element `idx` read at
/// `offset + sum(idx[a] * strides[a])` of the parent's row-major copy.
fn gather(parent: &[u32], offset: isize, shape: &[usize], strides: &[isize]) -> Vec<u32> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut k| {
            let mut at = offset;
            for a in (0..shape.len()).rev() {
                at += (k % shape[a]) as isize * strides[a];
                k /= shape[a];
            }
            parent[at as usize]
        })
        .collect()
}

/// A random 3-D array, its host copy and its shape.
fn random_3d(ctx: &Context) -> (GpuArray<u32>, Vec<u32>, [usize; 3]) {
    let mut rng = rand::rng();
    let shape = [
        rng.random_range(1..7usize),
        rng.random_range(1..9usize),
        rng.random_range(1..33usize),
    ];
    let host = random_vec::<u32>(shape.iter().product());
    let a = ctx.upload(&host).unwrap().reshape(shape).unwrap();
    (a, host, shape)
}

on_every_backend!(views_read_the_elements_their_layout_names, |ctx| {
    for _ in 0..4 {
        let (a, host, [d0, d1, d2]) = random_3d(ctx);
        assert_eq!(a.shape(), &[d0, d1, d2]);
        assert_eq!(a.ndim(), 3);
        assert_eq!(a.strides(), &[(d1 * d2) as isize, d2 as isize, 1]);
        // Row-major strides of the parent, in elements.
        let (s0, s1) = ((d1 * d2) as isize, d2 as isize);
        assert_same(&host, &a.download().unwrap());

        // Transposed: every axis reversed.
        let t = a.t();
        assert_eq!(t.shape(), &[d2, d1, d0]);
        assert_same(
            &gather(&host, 0, &[d2, d1, d0], &[1, s1, s0]),
            &t.download().unwrap(),
        );

        // Permuted (1, 2, 0), then made contiguous and read back.
        let p = a.view().permute(&[1, 2, 0]).unwrap();
        let want = gather(&host, 0, &[d1, d2, d0], &[s1, 1, s0]);
        let c = p.to_contiguous().unwrap();
        assert!(c.is_contiguous());
        assert_eq!(c.shape(), &[d1, d2, d0]);
        assert_same(&want, &c.download().unwrap());

        // A slice with a step of the last axis, then an index of the first.
        let (lo, hi) = (d2 / 3, d2);
        let s = a.view().slice_step(2, lo..hi, 2).unwrap();
        let n2 = (hi - lo).div_ceil(2);
        assert_eq!(s.shape(), &[d0, d1, n2]);
        assert_same(
            &gather(&host, lo as isize, &[d0, d1, n2], &[s0, s1, 2]),
            &s.download().unwrap(),
        );
        let i = d0 - 1;
        let row = a.view().index(0, i).unwrap();
        assert_same(
            &gather(&host, i as isize * s0, &[d1, d2], &[s1, 1]),
            &row.download().unwrap(),
        );

        // A negative step walks the axis backwards.
        let rev = a.view().slice_step(1, 1..d1, -1).unwrap();
        assert_eq!(rev.shape(), &[d0, d1 - 1, d2]);
        assert_same(
            &gather(
                &host,
                (d1 - 1) as isize * s1,
                &[d0, d1 - 1, d2],
                &[s0, -s1, 1],
            ),
            &rev.download().unwrap(),
        );

        // Broadcast: a column repeated along a new axis.
        let col = a.view().index(0, 0).unwrap().slice(1, 0..1).unwrap();
        let b = col.broadcast_to([3, d1, 5]).unwrap();
        assert_same(
            &gather(&host, 0, &[3, d1, 5], &[0, s1, 0]),
            &b.download().unwrap(),
        );
    }
});

on_every_backend!(reshape_keeps_the_order_or_names_both_shapes, |ctx| {
    let (a, host, [d0, d1, d2]) = random_3d(ctx);
    let flat = a.view().reshape([d0 * d1 * d2]).unwrap();
    assert_same(&host, &flat.download().unwrap());
    // A transposed view cannot be flattened without a copy.
    if d0 > 1 && d2 > 1 {
        match a.t().reshape([d0 * d1 * d2]) {
            Err(Error::Shape { message, .. }) => {
                assert!(
                    message.contains(&format!("[{d2}, {d1}, {d0}]")),
                    "{message}"
                );
            }
            other => panic!("flattening a transposed view: {other:?}"),
        }
    }
    match ctx.upload(&host).unwrap().reshape([d0 * d1 * d2 + 1]) {
        Err(Error::Shape { message, .. }) => assert!(message.contains("elements"), "{message}"),
        other => panic!("a reshape to another count: {other:?}"),
    }
    // Shapes from a creator.
    let z = ctx.zeros::<f32>([2, 3]).unwrap();
    assert_eq!(z.shape(), &[2, 3]);
    assert_same(&[0.0f32; 6], &z.download().unwrap());
    let one_d = ctx.zeros::<f32>(5).unwrap();
    assert_eq!(one_d.shape(), &[5]);
});

on_every_backend!(writes_through_views_land_where_the_layout_says, |ctx| {
    for _ in 0..4 {
        let (mut a, mut host, [d0, d1, d2]) = random_3d(ctx);
        let (s0, s1) = ((d1 * d2) as isize, d2 as isize);
        // Upload into the transposed view's elements.
        let fresh = random_vec::<u32>(host.len());
        a.view_mut().t().upload_from(&fresh).unwrap();
        // The reference: element k of the transposed shape goes where the
        // transposed strides put it.
        let (shape, strides) = ([d2, d1, d0], [1isize, s1, s0]);
        for (k, v) in fresh.iter().enumerate() {
            let mut rest = k;
            let mut at = 0isize;
            for ax in (0..3).rev() {
                at += (rest % shape[ax]) as isize * strides[ax];
                rest /= shape[ax];
            }
            host[at as usize] = *v;
        }
        assert_same(&host, &a.download().unwrap());

        // Assign a broadcast row into every row of a strided slice.
        let src_host = random_vec::<u32>(d2);
        let src = ctx.upload(&src_host).unwrap();
        let step = 2;
        {
            let mut dst = a.view_mut().slice_step(1, 0..d1, step).unwrap();
            dst.assign(&src.view()).unwrap();
        }
        for i in 0..d0 {
            for j in (0..d1).step_by(step as usize) {
                for k in 0..d2 {
                    host[i * d1 * d2 + j * d2 + k] = src_host[k];
                }
            }
        }
        assert_same(&host, &a.download().unwrap());
        // A source that does not broadcast is refused, nothing written.
        let wrong = ctx.upload(&random_vec::<u32>(d2 + 1)).unwrap();
        assert!(matches!(
            a.view_mut().assign(&wrong.view()),
            Err(Error::Shape { .. })
        ));
        assert_same(&host, &a.download().unwrap());
    }
});

on_every_backend!(every_element_type_goes_through_a_view, |ctx| {
    fn case<T: common::Random + unigpu::Element + PartialEq + std::fmt::Debug>(ctx: &Context) {
        let (r, c) = (7usize, 13usize);
        let host = random_vec::<T>(r * c);
        let a = ctx.upload(&host).unwrap().reshape([r, c]).unwrap();
        let want: Vec<T> = (0..c)
            .flat_map(|j| (0..r).map(move |i| (i, j)))
            .map(|(i, j)| host[i * c + j])
            .collect();
        let got = a.t().download().unwrap();
        // Bit-for-bit (a NaN's payload included) but on cuda's f16/bf16,
        // which pass through f32.
        assert_eq!(format!("{want:?}"), format!("{got:?}"), "{}", T::DTYPE);
    }
    case::<f32>(ctx);
    case::<f64>(ctx);
    case::<i32>(ctx);
    case::<u32>(ctx);
    case::<i64>(ctx);
    case::<u64>(ctx);
    case::<u8>(ctx);
    case::<unigpu::f16>(ctx);
    case::<unigpu::bf16>(ctx);
});

on_every_backend!(
    a_write_through_a_view_is_seen_by_a_read_on_another_stream,
    |ctx| {
        let _parked = common::park_lock();
        let (a, mut host, [d0, d1, d2]) = random_3d(ctx);
        let mut a = a;
        let s2 = ctx.create_stream().unwrap();
        let mut copy = ctx.zeros::<u32>([d0, d1, d2]).unwrap();
        let row = random_vec::<u32>(d1 * d2);
        // The view's write once ungated first: CUDA loads the copy kernel's
        // module on its first launch, and loading waits for every stream, the
        // gated one too (docs/testing.md, "Gates and lazy module loading").
        a.view_mut()
            .index(0, d0 - 1)
            .unwrap()
            .upload_from(&host[(d0 - 1) * d1 * d2..])
            .unwrap();
        ctx.sync().unwrap();
        // The write through the view goes on the default stream, held back by
        // the gate; the copy on s2 must wait for it.
        let gate = Gate::close(ctx.default_stream());
        a.view_mut()
            .index(0, d0 - 1)
            .unwrap()
            .upload_from(&row)
            .unwrap();
        s2.copy(&a, &mut copy).unwrap();
        std::thread::sleep(WATCH);
        assert!(
            !s2.is_idle().unwrap(),
            "the copy on s2 finished while a write through a view of its source was held back"
        );
        gate.open();
        host[(d0 - 1) * d1 * d2..].copy_from_slice(&row);
        assert_same(&host, &s2.download(&copy).unwrap());
        ctx.sync().unwrap();
        gate.assert_opened_by_the_test();
        let _ = GATE_TIMEOUT;
    }
);

on_every_backend!(dlpack_keeps_the_shape_both_ways, |ctx| {
    let (mut a, host, [d0, d1, d2]) = random_3d(ctx);
    if ctx.backend() == unigpu::Backend::Vulkan {
        // wgpu hands out no buffer address: vulkan arrays do not export.
        assert!(matches!(
            a.to_dlpack(unigpu::DlpackSync::Host),
            Err(Error::Dlpack { .. })
        ));
        return;
    }
    let tensor = a.to_dlpack(unigpu::DlpackSync::Host).unwrap();
    let view = tensor.view().unwrap();
    assert_eq!(view.layout.shape(), &[d0, d1, d2]);
    let back = ctx.from_dlpack(tensor).unwrap();
    assert_eq!(back.shape(), &[d0, d1, d2]);
    let back = back.get::<u32>().unwrap();
    assert_same(&host, &back.download().unwrap());
});

on_every_backend!(a_strided_dlpack_import_keeps_its_strides, |ctx| {
    let (mut a, host, [d0, d1, d2]) = random_3d(ctx);
    if ctx.backend() == unigpu::Backend::Vulkan {
        return; // no DLPack export to make a strided tensor from (above)
    }
    // A producer's transposed tensor: the export described with reversed
    // strides, as torch's `x.t()` would be.
    let mut tensor = a.to_dlpack(unigpu::DlpackSync::Host).unwrap();
    let transposed = unigpu::Layout::contiguous(&[d0, d1, d2]).transpose();
    tensor.set_layout(&transposed, 4).unwrap();
    let b = ctx.from_dlpack(tensor).unwrap();
    assert_eq!(b.shape(), &[d2, d1, d0]);
    assert_eq!(b.strides(), &[1, d2 as isize, (d1 * d2) as isize]);
    assert_eq!(
        b.is_contiguous(),
        d0 * d1 == 1 || (d0 == 1 && d2 == 1) || (d1 == 1 && d2 == 1) || (d0 == 1 && d1 == 1)
    );
    let b = b.get::<u32>().unwrap();
    let (s0, s1) = ((d1 * d2) as isize, d2 as isize);
    assert_same(
        &gather(&host, 0, &[d2, d1, d0], &[1, s1, s0]),
        &b.download().unwrap(),
    );
    // Whole-buffer work refuses it with a message, rather than reading
    // the memory in the wrong order.
    if !b.is_contiguous() {
        let mut out = ctx.zeros::<u32>(b.len()).unwrap();
        match ctx.ops().copy(b, &mut out) {
            Err(Error::Shape { .. }) => {}
            other => panic!("a copy of a strided import into a flat array: {other:?}"),
        }
        let c = b.to_contiguous().unwrap();
        assert_same(
            &gather(&host, 0, &[d2, d1, d0], &[1, s1, s0]),
            &c.download().unwrap(),
        );
    }
});

/// `shape`'s row-major elements of a random f32 array.
fn random_f32(ctx: &Context, shape: &[usize]) -> (GpuArray<f32>, Vec<f32>) {
    let host = random_vec::<f32>(shape.iter().product());
    (ctx.upload(&host).unwrap().reshape(shape).unwrap(), host)
}

on_every_backend!(ops_take_views_and_broadcast, |ctx| {
    let mut rng = rand::rng();
    let (d0, d1, d2) = (
        rng.random_range(1..6usize),
        rng.random_range(2..9usize),
        rng.random_range(1..40usize),
    );
    let ops = ctx.ops();
    let (a, ha) = random_f32(ctx, &[d0, d1, d2]);
    // A bias per (row, column) of the last two axes, and a column.
    let (bias, hb) = random_f32(ctx, &[d1, d2]);
    let (col, hc) = random_f32(ctx, &[d1, 1]);
    let at = |i: usize, j: usize, k: usize| ha[(i * d1 + j) * d2 + k];

    let mut out = ctx.zeros::<f32>([d0, d1, d2]).unwrap();
    ops.add(&a, &bias, &mut out).unwrap();
    let mut want = vec![0f32; d0 * d1 * d2];
    for i in 0..d0 {
        for j in 0..d1 {
            for k in 0..d2 {
                want[(i * d1 + j) * d2 + k] = at(i, j, k) + hb[j * d2 + k];
            }
        }
    }
    assert_same(&want, &out.download().unwrap());

    ops.mul(&a, &col, &mut out).unwrap();
    for i in 0..d0 {
        for j in 0..d1 {
            for k in 0..d2 {
                want[(i * d1 + j) * d2 + k] = at(i, j, k) * hc[j];
            }
        }
    }
    assert_same(&want, &out.download().unwrap());

    // A transposed input into a strided output: sub of the transpose of
    // `a` and itself-transposed-back, written into every other row.
    let mut big = ctx.zeros::<f32>([d2, 2 * d1, d0]).unwrap();
    {
        let mut rows = big.view_mut().slice_step(1, 0..2 * d1, 2).unwrap();
        ops.sub(
            &a.t(),
            &a.t().index(1, 0).unwrap().reshape([d2, 1, d0]).unwrap(),
            &mut rows,
        )
        .unwrap();
    }
    let mut want_big = vec![0f32; d2 * 2 * d1 * d0];
    for k in 0..d2 {
        for j in 0..d1 {
            for i in 0..d0 {
                want_big[(k * 2 * d1 + 2 * j) * d0 + i] = at(i, j, k) - at(i, 0, k);
            }
        }
    }
    assert_same(&want_big, &big.download().unwrap());

    // Unary on a view, in place ops on views.
    let mut r = ctx.zeros::<f32>([d2, d1, d0]).unwrap();
    ops.relu(&a.t(), &mut r).unwrap();
    let relu: Vec<f32> = (0..d2 * d1 * d0)
        .map(|n| {
            let (k, j, i) = (n / (d1 * d0), n / d0 % d1, n % d0);
            let v = at(i, j, k);
            if v.is_nan() { v } else { v.max(0.0) }
        })
        .collect();
    assert_same(&relu, &r.download().unwrap());

    let mut y = a.try_clone().unwrap();
    let alpha = 0.5f32;
    {
        let mut first = y.view_mut().index(0, 0).unwrap();
        ops.axpy(alpha, &bias, &mut first).unwrap();
        ops.scale(2.0, &mut first).unwrap();
    }
    ops.fill(&mut y.view_mut().slice(2, 0..1).unwrap(), 7.0)
        .unwrap();
    let mut want_y = ha.clone();
    for j in 0..d1 {
        for k in 0..d2 {
            want_y[j * d2 + k] = (alpha * hb[j * d2 + k] + at(0, j, k)) * 2.0;
        }
    }
    for i in 0..d0 {
        for j in 0..d1 {
            want_y[(i * d1 + j) * d2] = 7.0;
        }
    }
    assert_same(&want_y, &y.download().unwrap());

    // Reductions of views, against sums in f64.
    let s = ops.sum(&a.t().index(0, d2 - 1).unwrap()).unwrap() as f64;
    let want_s: f64 = (0..d0)
        .flat_map(|i| (0..d1).map(move |j| (i, j)))
        .map(|(i, j)| at(i, j, d2 - 1) as f64)
        .sum();
    let bound: f64 = (0..d0 * d1).map(|_| 1.0).sum::<f64>()
        * 1e-6
        * ha.iter().map(|v| v.abs() as f64).fold(1.0, f64::max);
    assert!(
        (s - want_s).abs() <= bound,
        "sum of a view: {s} vs {want_s}"
    );

    // Shapes that do not broadcast, or a wrong output shape: an error
    // naming them, nothing written.
    let before = out.download().unwrap();
    let (odd, _) = random_f32(ctx, &[d1 + 1, 1]);
    match ops.add(&a, &odd, &mut out) {
        Err(Error::Shape { message, .. }) => {
            assert!(message.contains(&format!("{:?}", [d1 + 1, 1])), "{message}")
        }
        other => panic!("shapes that do not broadcast: {other:?}"),
    }
    let mut small = ctx.zeros::<f32>([d1, d2]).unwrap();
    assert!(matches!(
        ops.add(&a, &bias, &mut small),
        Err(Error::Shape { .. })
    ));
    assert_same(&before, &out.download().unwrap());
});

on_every_backend!(
    mm_takes_its_sizes_from_the_shapes_and_transposed_views,
    |ctx| {
        let mut rng = rand::rng();
        let (m, k, n) = (
            rng.random_range(1..40usize),
            rng.random_range(1..40usize),
            rng.random_range(1..40usize),
        );
        let ops = ctx.ops();
        let (a, ha) = random_f32(ctx, &[m, k]);
        // `b` stored transposed (n×k), used as k×n through a view.
        let (bt, hbt) = random_f32(ctx, &[n, k]);
        let mut c = ctx.zeros::<f32>([m, n]).unwrap();
        ops.mm(&a, &bt.t(), &mut c).unwrap();
        let got = c.download().unwrap();
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|p| ha[i * k + p] as f64 * hbt[j * k + p] as f64)
                    .sum();
                let scale: f64 = (0..k)
                    .map(|p| (ha[i * k + p] as f64 * hbt[j * k + p] as f64).abs())
                    .sum();
                let g = got[i * n + j] as f64;
                assert!(
                    (g - want).abs() <= 1e-5 * scale + 1e-30,
                    "c[{i},{j}] = {g}, want {want}"
                );
            }
        }
        // Into a transposed output: c^T = (a b)^T.
        let mut ct = ctx.zeros::<f32>([n, m]).unwrap();
        ops.mm(&a, &bt.t(), &mut ct.view_mut().t()).unwrap();
        assert_same(&got, &ct.t().download().unwrap());
        // Without the transpose the inner sizes are k and n.
        match ops.mm(&a, &bt, &mut c) {
            Err(Error::Shape { message, .. }) if k != n => {
                assert!(message.contains(&format!("{:?}", [n, k])), "{message}")
            }
            Ok(()) if k == n => {}
            other => panic!("mm of [{m}, {k}] and [{n}, {k}]: {other:?}"),
        }
    }
);
