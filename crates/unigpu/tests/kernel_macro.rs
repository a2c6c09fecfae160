//! `#[unigpu::kernel]`: one Rust function run on every backend, each
//! element checked against a host reference written without the macro.
// The references spell clamp as max-then-min on purpose: that is the
// language's clamp (a NaN gives the bound, never a panic).
// The references index like the kernels do, invocation by invocation.
#![allow(clippy::manual_clamp, clippy::needless_range_loop)]

mod common;

use common::{random_len, random_vec};
use unigpu::{ArrayAccess, Backend, Context, Error, Grid};

/// `r` is the out-of-bounds report of `kernel` indexing one of `arrays`
/// (the first of several faults may be any of them) at `line` of this file.
#[track_caller]
fn assert_oob(
    r: unigpu::Result<()>,
    kernel: &str,
    arrays: &[&str],
    line: u32,
    access: ArrayAccess,
) {
    match r {
        Err(Error::KernelOutOfBounds {
            kernel: k,
            array,
            file,
            line: l,
            access: a,
        }) => {
            assert_eq!(k, kernel);
            assert!(
                arrays.contains(&array.as_str()),
                "array `{array}`, not one of {arrays:?}"
            );
            assert_eq!((file.as_str(), l, a), (file!(), line, access));
        }
        other => panic!("expected kernel `{kernel}`'s out-of-bounds report, got {other:?}"),
    }
}

/// Whether `ctx` is a Vulkan adapter whose driver contracts `a * b + c`
/// into one fused operation (NVIDIA's: `unigpu info` says "fma f32:
/// fused") and where the backend cannot forbid it ("float contraction:
/// possible": the adapter offers no SPIR-V passthrough, so the WGSL goes
/// to the driver without `NoContraction`). There a result that mixes
/// products and sums may differ from the host's two roundings in its last
/// bits (docs/kernels.md, "Floats"); everywhere else (cpu, cuda, torch,
/// every Vulkan adapter with passthrough, and one that keeps the
/// roundings apart such as lavapipe) the test asks for the same bits.
fn contracts(ctx: &Context, ty: &str) -> bool {
    ctx.backend() == Backend::Vulkan
        && common::detail(ctx, &format!("fma {ty}")).is_some_and(|v| v == "fused")
        && !common::detail(ctx, "float contraction").is_some_and(|v| v.starts_with("forbidden"))
}

/// `got` is `want` to the bit, or where `ctx` contracts, within a few
/// roundings of `scale` (the largest magnitude the sum went through).
fn assert_same_or_contracted(ctx: &Context, got: f64, want: f64, eps: f64, scale: f64, what: &str) {
    same_or_within(ctx, got, want, eps, scale, what, false);
}

/// As [`assert_same_or_contracted`], for a result that went through `/`
/// or `sqrt`, which WGSL lets any Vulkan driver round within 2.5 and 1
/// ulp (NVIDIA's does: docs/kernels.md's ulp table): on vulkan it is
/// judged by the bound.
fn assert_same_or_wgsl_rounded(
    ctx: &Context,
    got: f64,
    want: f64,
    eps: f64,
    scale: f64,
    what: &str,
) {
    same_or_within(ctx, got, want, eps, scale, what, true);
}

fn same_or_within(
    ctx: &Context,
    got: f64,
    want: f64,
    eps: f64,
    scale: f64,
    what: &str,
    divides: bool,
) {
    let ty = if eps < 1e-10 { "f64" } else { "f32" };
    if contracts(ctx, ty) || (divides && ctx.backend() == Backend::Vulkan) {
        let bound = 4.0 * eps * scale.max(want.abs());
        assert!(
            (got - want).abs() <= bound,
            "{what}: {got} vs {want} (contracted, bound {bound})"
        );
    } else {
        assert_eq!(got.to_bits(), want.to_bits(), "{what}: {got} vs {want}");
    }
}

#[unigpu::kernel]
fn vector_add(a: &[f32], b: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < out.len() {
        out[i] = a[i] + b[i];
    }
}

on_every_backend!(vector_add_matches_the_host, |ctx| {
    let k = vector_add::kernel(ctx).unwrap();
    let n = random_len(1 << 16);
    let (ha, hb) = (random_vec::<f32>(n), random_vec::<f32>(n));
    let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
    let mut out = ctx.upload(&vec![f32::NAN; n]).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&a, &b, &mut out))
        .unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        assert_eq!(
            got[i].to_bits(),
            (ha[i] + hb[i]).to_bits(),
            "element {i} of {n}"
        );
    }
    // The untyped launch takes the same kernel (it derefs to unigpu::Kernel).
    let mut again = ctx.zeros::<f32>(n).unwrap();
    ctx.launch(&k, Grid::for_elems(n), (&a, &b, &mut again))
        .unwrap();
    assert_eq!(again.download().unwrap(), got);
});

/// Integer semantics the language defines: wrapping + - * and negation,
/// `x / 0 == x`, `x % 0 == 0`, `MIN / -1 == MIN`, shift amounts taken
/// modulo the width, saturating float-to-int casts with NaN to 0.
#[unigpu::kernel]
fn int_ops(a: &[i32], b: &[i32], f: &[f32], out: &mut [i32], uout: &mut [u32]) {
    let i = global_id().x;
    if i >= a.len() {
        return;
    }
    let x = a[i];
    let y = b[i];
    let k = i * 8;
    out[k] = x + y;
    out[k + 1] = x * y - x;
    out[k + 2] = x / y;
    out[k + 3] = x % y;
    out[k + 4] = (x << y) ^ (x >> (y as u32));
    out[k + 5] = f[i] as i32;
    out[k + 6] = -x & !y;
    out[k + 7] = (x as u32 / (y as u32)) as i32 + x.abs().min(y).max(-7).clamp(-100, 100);
    uout[2 * i] = (f[i] as u32) | ((x < y) as u32) << 31u32;
    let v = f[i];
    uout[2 * i + 1] = (v != v) as u32
        + 2 * (v < 1.0) as u32
        + 4 * (v.max(0.5) == 0.5) as u32
        + 8 * (v.min(-0.5) == -0.5) as u32
        + 16 * (v.clamp(-1.0, 1.0) >= 1.0) as u32;
}

fn div(x: i32, y: i32) -> i32 {
    if y == 0 { x } else { x.wrapping_div(y) }
}

fn rem(x: i32, y: i32) -> i32 {
    if y == 0 { 0 } else { x.wrapping_rem(y) }
}

on_every_backend!(integer_semantics_match_the_host, |ctx| {
    let k = int_ops::kernel(ctx).unwrap();
    let n = random_len(5000).max(16);
    let mut ha = random_vec::<i32>(n);
    let mut hb: Vec<i32> = random_vec::<i32>(n);
    // The edge cases, every run.
    let edges = [
        (i32::MIN, -1),
        (7, 0),
        (i32::MIN, 0),
        (-5, 33),
        (3, -1),
        (i32::MAX, 1),
        (0, 0),
        (-9, 4),
    ];
    for (j, (x, y)) in edges.iter().enumerate() {
        ha[j] = *x;
        hb[j] = *y;
    }
    for v in hb.iter_mut().skip(edges.len()).step_by(3) {
        *v %= 70;
    }
    let mut hf: Vec<f32> = random_vec::<f32>(n).iter().map(|v| v * 1e7).collect();
    hf[0] = f32::NAN;
    hf[1] = 3e9;
    hf[2] = -3e9;
    hf[3] = f32::INFINITY;
    hf[4] = -0.75;
    let (a, b, f) = (
        ctx.upload(&ha).unwrap(),
        ctx.upload(&hb).unwrap(),
        ctx.upload(&hf).unwrap(),
    );
    let mut out = ctx.zeros::<i32>(8 * n).unwrap();
    let mut uout = ctx.zeros::<u32>(2 * n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&a, &b, &f, &mut out, &mut uout))
        .unwrap();
    let (got, ugot) = (out.download().unwrap(), uout.download().unwrap());
    for i in 0..n {
        let (x, y) = (ha[i], hb[i]);
        let clamp = x.wrapping_abs().min(y).max(-7).max(-100).min(100);
        let want = [
            x.wrapping_add(y),
            x.wrapping_mul(y).wrapping_sub(x),
            div(x, y),
            rem(x, y),
            x.wrapping_shl(y as u32) ^ x.wrapping_shr(y as u32),
            hf[i] as i32,
            x.wrapping_neg() & !y,
            (if y == 0 {
                x as u32
            } else {
                x as u32 / y as u32
            } as i32)
                .wrapping_add(clamp),
        ];
        assert_eq!(
            &got[8 * i..8 * i + 8],
            &want,
            "element {i}: x {x}, y {y}, f {}",
            hf[i]
        );
        assert_eq!(
            ugot[2 * i],
            (hf[i] as u32) | (((x < y) as u32) << 31),
            "element {i}"
        );
        let v = hf[i];
        let flags = (v != v) as u32
            + 2 * (v < 1.0) as u32
            + 4 * (v.max(0.5) == 0.5) as u32
            + 8 * (v.min(-0.5) == -0.5) as u32
            + 16 * (v.max(-1.0).min(1.0) >= 1.0) as u32;
        assert_eq!(ugot[2 * i + 1], flags, "element {i}: f {v}");
    }
});

/// Control flow: for, while, loop, break, continue, early return, float
/// math and a 2-D grid with every thread index.
#[unigpu::kernel(workgroup_size = (8, 4))]
fn control(x: &[f32], w: u32, out: &mut [f32], ids: &mut [u32]) {
    let col = global_id().x;
    let row = global_id().y;
    if col >= w as usize {
        return;
    }
    let h = (x.len() as u32 / w) as usize;
    if row >= h {
        return;
    }
    let at = row * w as usize + col;
    let mut acc: f32 = 0.0;
    for j in 0..(col + 1) {
        if j % 2 == 1 {
            continue;
        }
        acc += x[row * w as usize + j] * 0.5;
    }
    let mut n = 0u32;
    while n < 3 {
        n += 1;
        acc = acc - 1.0;
    }
    let mut steps: i32 = 0;
    loop {
        steps += 1;
        if steps > row as i32 {
            break;
        }
    }
    out[at] = (acc * acc).sqrt() + steps as f32 + x[at].abs().max(2.0).floor();
    let k = at * 6;
    ids[k] = local_id().x as u32 + 100 * local_id().y as u32;
    ids[k + 1] = workgroup_id().x as u32 + 100 * workgroup_id().y as u32;
    ids[k + 2] = workgroup_size().x as u32 + 100 * workgroup_size().y as u32;
    ids[k + 3] = num_workgroups().x as u32 + 100 * num_workgroups().y as u32;
    ids[k + 4] = global_id().z as u32 + local_id().z as u32 + workgroup_id().z as u32;
    ids[k + 5] = (workgroup_size().z + num_workgroups().z) as u32;
}

on_every_backend!(control_flow_and_2d_indices_match_the_host, |ctx| {
    let k = control::kernel(ctx).unwrap();
    let w = random_len(70) as u32;
    let h = random_len(50) as u32;
    let hx = random_vec::<f32>((w * h) as usize);
    let x = ctx.upload(&hx).unwrap();
    let mut out = ctx.zeros::<f32>(hx.len()).unwrap();
    let mut ids = ctx.zeros::<u32>(6 * hx.len()).unwrap();
    let grid = Grid::new((w.div_ceil(8), h.div_ceil(4), 1), (8, 4, 1));
    k.launch(ctx, grid, (&x, w, &mut out, &mut ids)).unwrap();
    let (got, gids) = (out.download().unwrap(), ids.download().unwrap());
    for row in 0..h as usize {
        for col in 0..w as usize {
            let at = row * w as usize + col;
            let mut acc = 0.0f32;
            for j in (0..=col).step_by(2) {
                acc += hx[row * w as usize + j] * 0.5;
            }
            for _ in 0..3 {
                acc -= 1.0;
            }
            let steps = row as f32 + 1.0;
            let want = (acc * acc).sqrt() + steps + hx[at].abs().max(2.0).floor();
            let scale: f32 = (0..=col)
                .step_by(2)
                .map(|j| hx[row * w as usize + j].abs())
                .sum::<f32>()
                + 3.0
                + steps
                + hx[at].abs().max(2.0);
            assert_same_or_wgsl_rounded(
                ctx,
                f64::from(got[at]),
                f64::from(want),
                f64::from(f32::EPSILON),
                f64::from(scale),
                &format!("({row}, {col})"),
            );
            let (c, r) = (col as u32, row as u32);
            let want_ids = [
                c % 8 + 100 * (r % 4),
                c / 8 + 100 * (r / 4),
                8 + 100 * 4,
                w.div_ceil(8) + 100 * h.div_ceil(4),
                0,
                2,
            ];
            assert_eq!(&gids[6 * at..6 * at + 6], &want_ids, "({row}, {col})");
        }
    }
});

/// Out of bounds: a read gives zero, a write does nothing, on every
/// backend, and the first such access is reported at the next sync.
const OUT_OF_BOUNDS_LINE: u32 = line!() + 4;
#[unigpu::kernel(workgroup_size = 64)]
fn out_of_bounds(a: &[u32], shift: u32, out: &mut [u32]) {
    let i = global_id().x;
    out[i + shift as usize] = a[i + shift as usize] + 1;
}

on_every_backend!(out_of_bounds_reads_zero_and_drops_writes, |ctx| {
    let k = out_of_bounds::kernel(ctx).unwrap();
    let n = random_len(3000);
    let ha = random_vec::<u32>(n);
    let shift = (n / 2) as u32;
    let a = ctx.upload(&ha).unwrap();
    let mut out = ctx.upload(&vec![7u32; n]).unwrap();
    // More invocations than elements: half of them reach past the end.
    let grid = Grid::for_elems_with_block(n + 200, 64);
    k.launch(ctx, grid, (&a, shift, &mut out)).unwrap();
    // Every invocation reads before it writes, so the first fault is a read.
    let r = out.download().map(drop);
    assert_oob(
        r,
        "out_of_bounds",
        &["a"],
        OUT_OF_BOUNDS_LINE,
        ArrayAccess::Read,
    );
    // Reported once: the next download is clean.
    let got = out.download().unwrap();
    for (j, g) in got.iter().enumerate() {
        let want = if j >= shift as usize {
            ha[j].wrapping_add(1)
        } else {
            7
        };
        assert_eq!(*g, want, "element {j} of {n}");
    }
});

/// Reads one element past the end of `a` (the last invocation).
const READ_PAST_END_LINE: u32 = line!() + 5;
#[unigpu::kernel(workgroup_size = 64)]
fn read_past_end(a: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < out.len() {
        out[i] = a[i + 1] * 2.0;
    }
}

/// Writes one element past the end of `out` (the last invocation).
const WRITE_PAST_END_LINE: u32 = line!() + 5;
#[unigpu::kernel(workgroup_size = 64)]
fn write_past_end(a: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < a.len() {
        out[i + 1] = a[i] + 1.0;
    }
}

on_every_backend!(a_read_past_the_end_is_reported_at_the_next_sync, |ctx| {
    let k = read_past_end::kernel(ctx).unwrap();
    let n = random_len(5000).max(2);
    let ha = random_vec::<f32>(n);
    let a = ctx.upload(&ha).unwrap();
    let mut out = ctx.upload(&vec![f32::NAN; n]).unwrap();
    k.launch(ctx, Grid::for_elems_with_block(n, 64), (&a, &mut out))
        .unwrap();
    assert_oob(
        ctx.default_stream().sync(),
        "read_past_end",
        &["a"],
        READ_PAST_END_LINE,
        ArrayAccess::Read,
    );
    // Reported once, and the read gave 0 while every other element is right.
    ctx.sync().unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        let want = if i + 1 < n { ha[i + 1] * 2.0 } else { 0.0 };
        assert_eq!(got[i].to_bits(), want.to_bits(), "element {i} of {n}");
    }
    // The message names the kernel, the argument, the line and the access.
    k.launch(ctx, Grid::for_elems_with_block(n, 64), (&a, &mut out))
        .unwrap();
    let msg = ctx.sync().unwrap_err().to_string();
    let want = format!(
        "kernel `read_past_end` indexed `a` out of bounds at {}:{READ_PAST_END_LINE} (read); the read gave 0",
        file!()
    );
    assert_eq!(msg, want);
});

on_every_backend!(a_write_past_the_end_is_reported_and_skipped, |ctx| {
    let k = write_past_end::kernel(ctx).unwrap();
    let n = random_len(5000).max(2);
    let ha = random_vec::<f32>(n);
    let a = ctx.upload(&ha).unwrap();
    // Arrays made around `out`, so that a write past its end would land in
    // memory of this test (the allocators hand out neighbouring blocks).
    let before = ctx.upload(&vec![-1.0f32; n]).unwrap();
    let mut out = ctx.upload(&vec![f32::NAN; n]).unwrap();
    let after = ctx.upload(&vec![-2.0f32; n]).unwrap();
    k.launch(ctx, Grid::for_elems_with_block(n, 64), (&a, &mut out))
        .unwrap();
    // A download reports it (it waits as a sync does) ...
    assert_oob(
        out.download().map(drop),
        "write_past_end",
        &["out"],
        WRITE_PAST_END_LINE,
        ArrayAccess::Write,
    );
    // ... once.
    let got = out.download().unwrap();
    assert_eq!(
        got[0].to_bits(),
        f32::NAN.to_bits(),
        "element 0 was written"
    );
    for i in 1..n {
        assert_eq!(
            got[i].to_bits(),
            (ha[i - 1] + 1.0).to_bits(),
            "element {i} of {n}"
        );
    }
    assert!(before.download().unwrap().iter().all(|&v| v == -1.0));
    assert!(after.download().unwrap().iter().all(|&v| v == -2.0));
    ctx.sync().unwrap();
    assert!(
        write_past_end::CUDA.contains("ug_fault(") && write_past_end::WGSL.contains("ug_fault("),
        "both GPU forms record faults"
    );
});

on_every_backend!(
    faults_are_reported_per_stream_and_in_bounds_kernels_never_report,
    |ctx| {
        let (oob, add) = (
            write_past_end::kernel(ctx).unwrap(),
            vector_add::kernel(ctx).unwrap(),
        );
        let n = random_len(3000).max(2);
        let (ha, hb) = (random_vec::<f32>(n), random_vec::<f32>(n));
        let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
        let mut out = ctx.zeros::<f32>(n).unwrap();
        let s = ctx.stream().unwrap();
        // In bounds, many times, on both streams: every sync is clean.
        for _ in 0..3 {
            add.launch(ctx, Grid::for_elems(n), (&a, &b, &mut out))
                .unwrap();
            ctx.default_stream().sync().unwrap();
            add.launch_on(&s, Grid::for_elems(n), (&a, &b, &mut out))
                .unwrap();
            s.sync().unwrap();
            ctx.sync().unwrap();
        }
        let got = out.download().unwrap();
        for i in 0..n {
            assert_eq!(
                got[i].to_bits(),
                (ha[i] + hb[i]).to_bits(),
                "element {i} of {n}"
            );
        }
        // A fault on a user stream: the default stream's sync does not see it,
        // the context's sync reports it, and the stream's own is clean after.
        oob.launch_on(&s, Grid::for_elems_with_block(n, 64), (&a, &mut out))
            .unwrap();
        ctx.default_stream().sync().unwrap();
        assert_oob(
            ctx.sync(),
            "write_past_end",
            &["out"],
            WRITE_PAST_END_LINE,
            ArrayAccess::Write,
        );
        s.sync().unwrap();
        // Again, reported by the stream's own sync this time.
        oob.launch_on(&s, Grid::for_elems_with_block(n, 64), (&a, &mut out))
            .unwrap();
        assert_oob(
            s.sync(),
            "write_past_end",
            &["out"],
            WRITE_PAST_END_LINE,
            ArrayAccess::Write,
        );
        ctx.sync().unwrap();
        // A kernel in bounds after a fault: clean.
        add.launch_on(&s, Grid::for_elems(n), (&a, &b, &mut out))
            .unwrap();
        s.sync().unwrap();
    }
);

// The stream's first generated kernel is the captured one: its fault word
// is made by begin_capture, not inside the capture.
on_every_backend!(a_fault_in_a_graph_replay_is_reported, |ctx| {
    let oob = write_past_end::kernel(ctx).unwrap();
    let n = random_len(3000).max(2);
    let a = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    let s = ctx.stream().unwrap();
    let g = s
        .capture(|s| oob.launch_on(s, Grid::for_elems_with_block(n, 64), (&a, &mut out)))
        .unwrap();
    // Nothing ran yet.
    s.sync().unwrap();
    for _ in 0..2 {
        g.launch(&s).unwrap();
        assert_oob(
            s.sync(),
            "write_past_end",
            &["out"],
            WRITE_PAST_END_LINE,
            ArrayAccess::Write,
        );
        s.sync().unwrap();
    }
});

/// `launch_on` a stream of its own; an early `return` inside nested loops
/// ends only its invocation.
#[unigpu::kernel(workgroup_size = 32)]
fn first_match(hay: &[i32], needle: i32, out: &mut [i32]) {
    let i = global_id().x;
    if i >= out.len() {
        return;
    }
    let width = 16usize;
    for r in 0..width {
        let mut c = 0usize;
        while c < width {
            if hay[(i * width + r * 3 + c) % hay.len()] == needle {
                out[i] = (r * 100 + c) as i32;
                return;
            }
            c += 1;
        }
    }
    out[i] = -1;
}

on_every_backend!(early_return_from_nested_loops_on_a_stream, |ctx| {
    let k = first_match::kernel(ctx).unwrap();
    let n = random_len(2000);
    let hay: Vec<i32> = random_vec::<u32>(n * 16)
        .iter()
        .map(|v| (v % 40) as i32)
        .collect();
    let needle = 7;
    let stream = ctx.create_stream().unwrap();
    let h = ctx.upload(&hay).unwrap();
    let mut out = ctx.zeros::<i32>(n).unwrap();
    k.launch_on(
        &stream,
        Grid::for_elems_with_block(n, 32),
        (&h, needle, &mut out),
    )
    .unwrap();
    stream.sync().unwrap();
    let got = out.download().unwrap();
    for (i, g) in got.iter().enumerate() {
        let want = (0..16)
            .flat_map(|r| (0..16).map(move |c| (r, c)))
            .find(|(r, c)| hay[(i * 16 + r * 3 + c) % hay.len()] == needle)
            .map_or(-1, |(r, c)| (r * 100 + c) as i32);
        assert_eq!(*g, want, "element {i}");
    }
});

on_every_backend!(a_block_other_than_the_workgroup_size_is_refused, |ctx| {
    let k = vector_add::kernel(ctx).unwrap();
    let a = ctx.zeros::<f32>(10).unwrap();
    let mut out = ctx.zeros::<f32>(10).unwrap();
    let e = k
        .launch(ctx, Grid::for_elems_with_block(10, 32), (&a, &a, &mut out))
        .unwrap_err()
        .to_string();
    assert!(e.contains("workgroup_size is (256, 1, 1)"), "{e}");
});

/// A sum with a shared-memory tree and barriers: each workgroup reduces
/// its 256 elements in shared memory (a barrier inside a `while` whose
/// condition is uniform) and writes one partial sum.
#[unigpu::kernel(workgroup_size = 256)]
fn tree_sum(x: &[f32], partial: &mut [f32]) {
    let tile = shared::<f32, 256>();
    let l = local_id().x;
    let i = global_id().x;
    let mut v = 0.0f32;
    if i < x.len() {
        v = x[i];
    }
    tile[l] = v;
    barrier();
    let mut stride = tile.len() / 2;
    while stride > 0 {
        if l < stride {
            tile[l] = tile[l] + tile[l + stride];
        }
        barrier();
        stride = stride / 2;
    }
    if l == 0 {
        partial[workgroup_id().x] = tile[0];
    }
}

on_every_backend!(a_shared_memory_tree_sum_matches_the_host, |ctx| {
    let k = tree_sum::kernel(ctx).unwrap();
    // Not a multiple of the workgroup: the last group pads with zeros.
    let n = random_len(1 << 17).max(2) | 1;
    let hx = random_vec::<f32>(n);
    let groups = n.div_ceil(256);
    let x = ctx.upload(&hx).unwrap();
    let mut partial = ctx.upload(&vec![f32::NAN; groups]).unwrap();
    k.launch(ctx, Grid::for_elems_with_block(n, 256), (&x, &mut partial))
        .unwrap();
    let got = partial.download().unwrap();
    for g in 0..groups {
        // The same tree, in the same order: bit for bit.
        let mut t: Vec<f32> = (0..256)
            .map(|l| hx.get(g * 256 + l).copied().unwrap_or(0.0))
            .collect();
        let mut stride = 128;
        while stride > 0 {
            for l in 0..stride {
                t[l] += t[l + stride];
            }
            stride /= 2;
        }
        assert_eq!(got[g].to_bits(), t[0].to_bits(), "group {g} of {groups}");
    }
});

/// A tiled f32 matmul with shared memory: 16×16 tiles of `a` and `b`
/// loaded per step of a `for` loop with two barriers in it.
#[unigpu::kernel(workgroup_size = (16, 16))]
fn tiled_matmul(a: &[f32], b: &[f32], c: &mut [f32], m: u32, n: u32, k: u32) {
    let ta = shared::<f32, 256>();
    let tb = shared::<f32, 256>();
    let col = global_id().x;
    let row = global_id().y;
    let lx = local_id().x;
    let ly = local_id().y;
    let rows = m as usize;
    let cols = n as usize;
    let inner = k as usize;
    let mut acc = 0.0f32;
    for t in 0..(inner + 15) / 16 {
        let ac = t * 16 + lx;
        let mut av = 0.0f32;
        if row < rows && ac < inner {
            av = a[row * inner + ac];
        }
        ta[ly * 16 + lx] = av;
        let br = t * 16 + ly;
        let mut bv = 0.0f32;
        if br < inner && col < cols {
            bv = b[br * cols + col];
        }
        tb[ly * 16 + lx] = bv;
        barrier();
        for j in 0..16usize {
            acc = acc + ta[ly * 16 + j] * tb[j * 16 + lx];
        }
        barrier();
    }
    if row < rows && col < cols {
        c[row * cols + col] = acc;
    }
}

on_every_backend!(a_tiled_shared_memory_matmul_matches_the_host, |ctx| {
    let kern = tiled_matmul::kernel(ctx).unwrap();
    // Sizes that are not multiples of the tile.
    let (m, n, k) = (
        random_len(150).max(1),
        random_len(150).max(1),
        random_len(150).max(1),
    );
    let (ha, hb) = (random_vec::<f32>(m * k), random_vec::<f32>(k * n));
    let (a, b) = (ctx.upload(&ha).unwrap(), ctx.upload(&hb).unwrap());
    let mut c = ctx.upload(&vec![f32::NAN; m * n]).unwrap();
    let grid = Grid::new(
        (n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1),
        (16, 16, 1),
    );
    kern.launch(ctx, grid, (&a, &b, &mut c, m as u32, n as u32, k as u32))
        .unwrap();
    let got = c.download().unwrap();
    for r in 0..m {
        for col in 0..n {
            // The kernel's order, padding included (one rounding per op).
            let mut acc = 0.0f32;
            let mut scale = 0.0f32;
            for j in 0..k.div_ceil(16) * 16 {
                let (av, bv) = if j < k {
                    (ha[r * k + j], hb[j * n + col])
                } else {
                    (0.0, 0.0)
                };
                acc += av * bv;
                scale += (av * bv).abs();
            }
            assert_same_or_contracted(
                ctx,
                f64::from(got[r * n + col]),
                f64::from(acc),
                f64::from(f32::EPSILON) * k as f64,
                f64::from(scale),
                &format!("c[{r}][{col}] of {m}x{n} (k = {k})"),
            );
        }
    }
});

/// Values live across barriers (the CPU form holds them per invocation),
/// a barrier under a uniform `if` on a scalar argument, a `loop` with a
/// uniform `break` and barriers, and a thread-dependent `return` after
/// the last barrier.
const PHASES_READ_LINE: u32 = line!() + 5;
#[unigpu::kernel(workgroup_size = 64)]
fn phases(x: &[i32], mode: u32, out: &mut [i32]) {
    let buf = shared::<i32, 64>();
    let l = local_id().x;
    let mut v = x[global_id().x];
    buf[l] = v;
    if mode == 1 {
        barrier();
        v = buf[63 - l];
    }
    let mut round = 0u32;
    loop {
        if round == 3 {
            break;
        }
        barrier();
        // The left neighbour: run in order without the barriers, an
        // invocation would read the value its neighbour just wrote.
        let next = buf[(l + 63) % 64];
        barrier();
        buf[l] = next + v;
        round += 1;
    }
    barrier();
    if l >= 60 {
        return;
    }
    out[global_id().x] = buf[l] * 2;
}

on_every_backend!(
    values_live_across_barriers_in_uniform_branches_and_loops,
    |ctx| {
        let k = phases::kernel(ctx).unwrap();
        let n = random_len(5000).max(2);
        let hx = random_vec::<i32>(n);
        let x = ctx.upload(&hx).unwrap();
        for mode in [0u32, 1] {
            let mut out = ctx.upload(&vec![-7i32; n]).unwrap();
            k.launch(ctx, Grid::for_elems_with_block(n, 64), (&x, mode, &mut out))
                .unwrap();
            // The last workgroup's invocations past `n` read `x` past its end.
            let r = ctx.default_stream().sync();
            if n.is_multiple_of(64) {
                r.unwrap();
            } else {
                assert_oob(r, "phases", &["x"], PHASES_READ_LINE, ArrayAccess::Read);
            }
            let got = out.download().unwrap();
            for g in 0..n.div_ceil(64) {
                let mut buf: Vec<i32> = (0..64)
                    .map(|l| hx.get(g * 64 + l).copied().unwrap_or(0))
                    .collect();
                let v: Vec<i32> = if mode == 1 {
                    (0..64).map(|l| buf[63 - l]).collect()
                } else {
                    buf.clone()
                };
                for _ in 0..3 {
                    let next: Vec<i32> = (0..64).map(|l| buf[(l + 63) % 64]).collect();
                    for l in 0..64 {
                        buf[l] = next[l].wrapping_add(v[l]);
                    }
                }
                for l in 0..64 {
                    let i = g * 64 + l;
                    if i < n {
                        let want = if l >= 60 { -7 } else { buf[l].wrapping_mul(2) };
                        assert_eq!(got[i], want, "mode {mode}, element {i} of {n}");
                    }
                }
            }
        }
    }
);

/// Uniform exits around barriers, in a 3-D workgroup: a `return` on an
/// argument before any barrier, and a `continue` of a `for` loop that
/// holds barriers (the CPU form ends the phase, then the iteration).
#[unigpu::kernel(workgroup_size = (4, 4, 2))]
fn uniform_exits(x: &[u32], skip: u32, stop: u32, out: &mut [u32]) {
    let buf = shared::<u32, 32>();
    let l = local_id().x + 4 * local_id().y + 16 * local_id().z;
    let base = workgroup_id().x * 32;
    if stop == 1 {
        return;
    }
    let mut acc = x[base + l];
    for r in 0u32..6 {
        if r == skip {
            continue;
        }
        buf[l] = acc;
        barrier();
        acc += buf[(l + 1) % 32] * (r + 1);
        barrier();
    }
    out[base + l] = acc;
}

/// Phases whose whole work is one `if` on the local x id against a
/// per-workgroup value: the CPU form runs only the invocations it lets
/// through (docs/kernels.md, "Speed"), so every form of the condition and
/// every bound (0, inside, at and past the workgroup's width) is checked.
#[unigpu::kernel(workgroup_size = 64)]
fn local_x_phases(lim: u32, at: u32, out: &mut [u32]) {
    let tile = shared::<u32, 64>();
    let l = local_id().x;
    tile[l] = 1;
    barrier();
    if l < lim as usize {
        tile[l] += 10;
    }
    barrier();
    if at as usize > l {
        tile[l] += 100;
    }
    barrier();
    if l == at as usize {
        tile[l] += 1000;
    }
    barrier();
    if lim as usize == local_id().x {
        tile[l] += 10000;
    }
    barrier();
    let g = global_id().x;
    if g < out.len() {
        out[g] = tile[l];
    }
}

/// The same on a 2-D workgroup: the condition holds for the first `lim`
/// of every row.
#[unigpu::kernel(workgroup_size = (8, 4))]
fn local_x_rows(lim: u32, out: &mut [u32]) {
    let tile = shared::<u32, 32>();
    let l = local_id().x;
    let r = local_id().y;
    tile[r * 8 + l] = 1;
    barrier();
    if l < lim as usize {
        tile[r * 8 + l] += 10;
    }
    barrier();
    let w = workgroup_id().x * 32 + r * 8 + l;
    if w < out.len() {
        out[w] = tile[r * 8 + l];
    }
}

on_every_backend!(
    phases_bounded_by_the_local_id_run_the_invocations_they_should,
    |ctx| {
        let (k, rows) = (
            local_x_phases::kernel(ctx).unwrap(),
            local_x_rows::kernel(ctx).unwrap(),
        );
        let groups = random_len(200).max(1);
        let n = groups * 64;
        let r = random_vec::<u32>(4);
        let mut cases = vec![(0u32, 0u32), (64, 63), (200, 64), (r[0] % 64, r[1] % 64)];
        cases.push((r[2] % 80, r[3] % 80));
        for (lim, at) in cases {
            let mut out = ctx.zeros::<u32>(n).unwrap();
            k.launch(
                ctx,
                Grid::new((groups as u32, 1, 1), (64, 1, 1)),
                (lim, at, &mut out),
            )
            .unwrap();
            let got = out.download().unwrap();
            for g in 0..n {
                let l = (g % 64) as u32;
                let want = 1
                    + 10 * u32::from(l < lim)
                    + 100 * u32::from(l < at)
                    + 1000 * u32::from(l == at)
                    + 10000 * u32::from(l == lim);
                assert_eq!(got[g], want, "lim {lim} at {at}: invocation {g}");
            }
            let mut out = ctx.zeros::<u32>(groups * 32).unwrap();
            rows.launch(
                ctx,
                Grid::new((groups as u32, 1, 1), (8, 4, 1)),
                (lim % 10, &mut out),
            )
            .unwrap();
            let got = out.download().unwrap();
            for w in 0..groups * 32 {
                let l = (w % 8) as u32;
                let want = 1 + 10 * u32::from(l < lim % 10);
                assert_eq!(got[w], want, "rows, lim {}: invocation {w}", lim % 10);
            }
        }
    }
);

on_every_backend!(uniform_returns_and_continues_around_barriers, |ctx| {
    let k = uniform_exits::kernel(ctx).unwrap();
    let groups = random_len(300).max(1);
    let n = groups * 32;
    let hx = random_vec::<u32>(n);
    let x = ctx.upload(&hx).unwrap();
    for (skip, stop) in [(2u32, 0u32), (9, 0), (0, 1)] {
        let mut out = ctx.upload(&vec![7u32; n]).unwrap();
        k.launch(
            ctx,
            Grid::new((groups as u32, 1, 1), (4, 4, 2)),
            (&x, skip, stop, &mut out),
        )
        .unwrap();
        let got = out.download().unwrap();
        for g in 0..groups {
            let mut acc: Vec<u32> = hx[g * 32..g * 32 + 32].to_vec();
            for r in 0u32..6 {
                if r == skip {
                    continue;
                }
                let buf = acc.clone();
                for l in 0..32 {
                    acc[l] = acc[l].wrapping_add(buf[(l + 1) % 32].wrapping_mul(r + 1));
                }
            }
            for l in 0..32 {
                let want = if stop == 1 { 7 } else { acc[l] };
                assert_eq!(
                    got[g * 32 + l],
                    want,
                    "skip {skip} stop {stop}: group {g}, invocation {l}"
                );
            }
        }
    }
});

/// Shared and global elements read at a uniform index are uniform: a
/// `while` on a shared element and `if`s on array elements hold barriers
/// (one invocation changes the shared one between barriers).
#[unigpu::kernel(workgroup_size = 64)]
fn uniform_loads(x: &mut [u32], y: &[u32]) {
    let tile = shared::<u32, 4>();
    if local_id().x == 0 {
        tile[0] = 3;
    }
    barrier();
    while tile[0] > 0 {
        barrier();
        if local_id().x == 0 {
            tile[0] = tile[0] - 1;
            x[0] = x[0] + 1;
        }
        barrier();
    }
    if x[1] > 0 {
        barrier();
    }
    if y[1] > 0 {
        barrier();
    }
}

on_every_backend!(loop_conditions_on_shared_and_global_elements, |ctx| {
    let k = uniform_loads::kernel(ctx).unwrap();
    let mut x = ctx.upload(&[0u32, 1]).unwrap();
    let y = ctx.upload(&[0u32, 1]).unwrap();
    k.launch(ctx, Grid::new((1, 1, 1), (64, 1, 1)), (&mut x, &y))
        .unwrap();
    assert_eq!(x.download().unwrap(), vec![3, 1]);
});

/// A 256-bin histogram with atomics: each workgroup counts into a shared
/// array with `atomic_add`, then adds its counts to the global bins.
#[unigpu::kernel(workgroup_size = 256)]
fn histogram(data: &[u32], bins: &mut [u32]) {
    let local = shared::<u32, 256>();
    let l = local_id().x;
    let i = global_id().x;
    if i < data.len() {
        local.atomic_add((data[i] & 255) as usize, 1);
    }
    barrier();
    let c = local[l];
    if c > 0 {
        bins.atomic_add(l, c);
    }
}

on_every_backend!(a_256_bin_histogram_with_atomics_is_exact, |ctx| {
    let k = histogram::kernel(ctx).unwrap();
    let n = random_len(1 << 18).max(1);
    // Skewed, so many invocations hit the same bin at once.
    let hd: Vec<u32> = random_vec::<u32>(n)
        .iter()
        .map(|v| if v % 3 == 0 { 7 } else { *v })
        .collect();
    let d = ctx.upload(&hd).unwrap();
    let mut bins = ctx.zeros::<u32>(256).unwrap();
    k.launch(ctx, Grid::for_elems_with_block(n, 256), (&d, &mut bins))
        .unwrap();
    let mut want = vec![0u32; 256];
    for v in &hd {
        want[(v & 255) as usize] += 1;
    }
    assert_eq!(bins.download().unwrap(), want, "{n} values");
});

/// Every atomic on global i32 and u32 arrays and on a shared array: the
/// commutative ones give an exact total; `atomic_add`'s old values are a
/// permutation of 0..n; exchange hands each value on exactly once; a
/// compare-exchange loop counts every invocation once.
#[unigpu::kernel(workgroup_size = 64)]
fn atomics(x: &[i32], acc: &mut [i32], uacc: &mut [u32], olds: &mut [u32], swaps: &mut [i32]) {
    let counter = shared::<u32, 1>();
    let i = global_id().x;
    let inside = i < x.len();
    let mut v = 0;
    if inside {
        v = x[i];
        acc.atomic_add(0, v);
        acc.atomic_sub(1, v);
        acc.atomic_min(2, v);
        acc.atomic_max(3, v);
        acc.atomic_and(4, v);
        acc.atomic_or(5, v);
        acc.atomic_xor(6, v);
        let u = v as u32;
        uacc.atomic_min(0, u);
        uacc.atomic_max(1, u);
        uacc.atomic_add(2, u);
        olds[i] = uacc.atomic_add(3, 1);
        swaps[i] = acc.atomic_exchange(7, v);
        loop {
            let seen = uacc[4];
            if uacc.atomic_compare_exchange(4, seen, seen + 1) == seen {
                break;
            }
        }
        counter.atomic_add(0, 1);
    }
    // Out of bounds atomics do nothing and give 0 (and are reported).
    let none = acc.atomic_add(acc.len() + 3, 5) + counter.atomic_or(9, 5) as i32;
    barrier();
    if local_id().x == 0 {
        uacc.atomic_add(5, counter[0]);
    }
    if inside && none != 0 {
        acc[8] = 1;
    }
}

/// The line of the out-of-bounds atomics above.
const ATOMICS_OOB_LINE: u32 = line!() - 11;

on_every_backend!(every_integer_atomic_matches_the_host, |ctx| {
    let k = atomics::kernel(ctx).unwrap();
    let n = random_len(20000).max(2);
    let hx = random_vec::<i32>(n);
    let x = ctx.upload(&hx).unwrap();
    let start_i = [5i32, -3, i32::MAX, i32::MIN, -1, 0, 0x5a5a, -77, 0];
    let start_u = [u32::MAX, 0, 9, 0, 0, 0];
    let mut acc = ctx.upload(&start_i).unwrap();
    let mut uacc = ctx.upload(&start_u).unwrap();
    let mut olds = ctx.zeros::<u32>(n).unwrap();
    let mut swaps = ctx.zeros::<i32>(n).unwrap();
    k.launch(
        ctx,
        Grid::for_elems_with_block(n, 64),
        (&x, &mut acc, &mut uacc, &mut olds, &mut swaps),
    )
    .unwrap();
    // Two out-of-bounds atomics in one expression (evaluated in either
    // order on CUDA): either is the first fault.
    let r = ctx.sync();
    assert_oob(
        r,
        "atomics",
        &["acc", "counter"],
        ATOMICS_OOB_LINE,
        ArrayAccess::Atomic,
    );
    let (got, ugot) = (acc.download().unwrap(), uacc.download().unwrap());
    let mut want = start_i;
    for &v in &hx {
        want[0] = want[0].wrapping_add(v);
        want[1] = want[1].wrapping_sub(v);
        want[2] = want[2].min(v);
        want[3] = want[3].max(v);
        want[4] &= v;
        want[5] |= v;
        want[6] ^= v;
    }
    assert_eq!(&got[..7], &want[..7], "{n} values");
    assert_eq!(got[8], 0, "an out-of-bounds atomic gave a value");
    let mut uwant = start_u;
    for &v in &hx {
        let u = v as u32;
        uwant[0] = uwant[0].min(u);
        uwant[1] = uwant[1].max(u);
        uwant[2] = uwant[2].wrapping_add(u);
    }
    uwant[3] = n as u32;
    uwant[4] = n as u32;
    uwant[5] = n as u32;
    assert_eq!(ugot, uwant, "{n} values");
    let mut o = olds.download().unwrap();
    o.sort_unstable();
    assert!(
        o.iter().enumerate().all(|(i, v)| *v == i as u32),
        "old values of atomic_add are not 0..{n}"
    );
    // Exchange: the old values and the final one are the start value and
    // every x, each once.
    let mut handed = swaps.download().unwrap();
    handed.push(got[7]);
    handed.sort_unstable();
    let mut all = hx.clone();
    all.push(start_i[7]);
    all.sort_unstable();
    assert_eq!(handed, all);
});

/// Device functions: called from a kernel and from each other, with
/// early `return v;`, loops and their own locals.
#[unigpu::device]
fn smoothstep(lo: f32, hi: f32, x: f32) -> f32 {
    let t = ((x - lo) / (hi - lo)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

#[unigpu::device]
fn collatz_steps(n: u32) -> u32 {
    let mut x = n;
    let mut steps = 0u32;
    while x > 1 && steps < 500 {
        if x % 2 == 0 {
            x /= 2;
        } else {
            x = 3 * x + 1;
        }
        steps += 1;
    }
    steps
}

#[unigpu::device]
fn sign_of(v: i32) -> i32 {
    if v < 0 {
        return -1;
    }
    if v == 0 {
        return 0;
    }
    1
}

#[unigpu::device]
fn both_steps(n: u32) -> u32 {
    collatz_steps(n) * 1000 + collatz_steps(n + 1)
}

#[unigpu::kernel(workgroup_size = 64)]
fn with_helpers(x: &[f32], n: &[u32], out: &mut [f32], steps: &mut [u32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    out[i] = smoothstep(-0.5, 0.75, x[i]) + sign_of((x[i] * 4.0) as i32) as f32;
    steps[i] = both_steps(n[i] % 10000);
}

fn host_steps(n: u32) -> u32 {
    let (mut x, mut s) = (n, 0u32);
    while x > 1 && s < 500 {
        x = if x % 2 == 0 {
            x / 2
        } else {
            x.wrapping_mul(3).wrapping_add(1)
        };
        s += 1;
    }
    s
}

on_every_backend!(device_functions_match_the_host, |ctx| {
    let k = with_helpers::kernel(ctx).unwrap();
    let n = random_len(4000).max(1);
    let hx: Vec<f32> = random_vec::<f32>(n).iter().map(|v| v / 500.0).collect();
    let hn = random_vec::<u32>(n);
    let (x, nn) = (ctx.upload(&hx).unwrap(), ctx.upload(&hn).unwrap());
    let mut out = ctx.zeros::<f32>(n).unwrap();
    let mut steps = ctx.zeros::<u32>(n).unwrap();
    k.launch(
        ctx,
        Grid::for_elems_with_block(n, 64),
        (&x, &nn, &mut out, &mut steps),
    )
    .unwrap();
    let (got, gsteps) = (out.download().unwrap(), steps.download().unwrap());
    for i in 0..n {
        let t = ((hx[i] - -0.5) / (0.75 - -0.5)).max(0.0).min(1.0);
        let s = (hx[i] * 4.0) as i32;
        let sign: i32 = if s < 0 {
            -1
        } else if s == 0 {
            0
        } else {
            1
        };
        let want = t * t * (3.0 - 2.0 * t) + sign as f32;
        assert_same_or_wgsl_rounded(
            ctx,
            f64::from(got[i]),
            f64::from(want),
            f64::from(f32::EPSILON),
            3.0 + f64::from(sign.abs()),
            &format!("x[{i}] = {}", hx[i]),
        );
        let m = hn[i] % 10000;
        assert_eq!(
            gsteps[i],
            host_steps(m) * 1000 + host_steps(m + 1),
            "n = {m}"
        );
    }
});

/// Every emitted WGSL passes naga's validator (the vulkan backend's own
/// check, run here without an adapter), asking for 64-bit types only
/// where a kernel uses them.
#[cfg(feature = "vulkan")]
#[test]
fn every_emitted_wgsl_validates() {
    for (name, src) in [
        (vector_add::NAME, vector_add::WGSL),
        (int_ops::NAME, int_ops::WGSL),
        (control::NAME, control::WGSL),
        (out_of_bounds::NAME, out_of_bounds::WGSL),
        (read_past_end::NAME, read_past_end::WGSL),
        (write_past_end::NAME, write_past_end::WGSL),
        (wide::NAME, wide::WGSL),
        (math::NAME, math::WGSL),
        (first_match::NAME, first_match::WGSL),
        (tree_sum::NAME, tree_sum::WGSL),
        (tiled_matmul::NAME, tiled_matmul::WGSL),
        (phases::NAME, phases::WGSL),
        (histogram::NAME, histogram::WGSL),
        (atomics::NAME, atomics::WGSL),
        (with_helpers::NAME, with_helpers::WGSL),
        (uniform_exits::NAME, uniform_exits::WGSL),
        (uniform_loads::NAME, uniform_loads::WGSL),
        // Widened (widen.rs), left unwidened (its lanes would use `i`),
        // hoisted (wgsl.rs, `hoisted`).
        (gs_saxpy::NAME, gs_saxpy::WGSL),
        (gs_wide64::NAME, gs_wide64::WGSL),
        (gs_axpy::NAME, gs_axpy::WGSL),
        (rows_sum::NAME, rows_sum::WGSL),
        (group_rounds::NAME, group_rounds::WGSL),
    ] {
        let module = naga::front::wgsl::parse_str(src)
            .unwrap_or_else(|e| panic!("{name}: {}\n{src}", e.emit_to_string(src)));
        let caps = if name == wide::NAME || name == gs_wide64::NAME {
            naga::valid::Capabilities::FLOAT64 | naga::valid::Capabilities::SHADER_INT64
        } else {
            naga::valid::Capabilities::empty()
        };
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name}: {}\n{src}", e.emit_to_string(src)));
    }
}

/// Which GPU forms widen or hoist the test kernels above (the tests run
/// them on every backend; these say the fast forms are what ran).
#[test]
fn the_gpu_forms_widen_and_hoist_the_loops_they_should() {
    for (name, cuda, wgsl) in [
        (gs_saxpy::NAME, gs_saxpy::CUDA, gs_saxpy::WGSL),
        (gs_wide64::NAME, gs_wide64::CUDA, gs_wide64::WGSL),
    ] {
        assert!(
            cuda.contains("ug_vec<") && wgsl.contains("ug_vn"),
            "{name} is widened"
        );
    }
    assert!(
        gs_wide64::WGSL.contains("array<vec2<f64>>")
            && gs_wide64::WGSL.contains("array<vec2<i64>>")
    );
    // gs_axpy's lanes would use `i` as a value: CUDA only.
    assert!(gs_axpy::CUDA.contains("ug_vec<") && !gs_axpy::WGSL.contains("ug_vn"));
    assert!(rows_sum::WGSL.contains("ug_h3_x") && !rows_sum::CUDA.contains("ug_h"));
}

/// The CUDA form asks for each array's length after the declared
/// parameters, is compiled for its one block size, and never leans on
/// C++'s undefined cases (the cuda variants above compile and run it).
#[test]
fn the_cuda_form_declares_hidden_lengths() {
    assert!(
        vector_add::CUDA.contains(
            "extern \"C\" __global__ void __launch_bounds__(256) vector_add(const float* p_a, const float* p_b, float* p_out, unsigned int n_a, unsigned int n_b, unsigned int n_out, unsigned int* ug_status, unsigned int ug_kernel)"
        ),
        "{}",
        vector_add::CUDA
    );
}

/// Shared arrays are declared and zeroed in the CUDA form (CUDA leaves
/// them uninitialised), and barriers are `__syncthreads()`.
#[test]
fn the_cuda_form_zeroes_shared_arrays() {
    let src = tree_sum::CUDA;
    assert!(src.contains("__shared__ float s_tile_0[256];"), "{src}");
    assert!(
        src.contains(
            "for (unsigned int i = ug_tid; i < 256u; i += ug_threads) s_tile_0[i] = (float)0;"
        ),
        "{src}"
    );
    assert_eq!(src.matches("__syncthreads();").count(), 3, "{src}");
}

/// The 64-bit types: f64 arithmetic rounds like the host's (one rounding
/// per operation, no contraction of `a * s + b`), i64/u64 wrap, and the
/// defined division and shifts hold at 64 bits.
#[unigpu::kernel(workgroup_size = 128)]
fn wide(
    a: &[f64],
    b: &[i64],
    c: &[u64],
    s: f64,
    out_f: &mut [f64],
    out_i: &mut [i64],
    out_u: &mut [u64],
) {
    let i = global_id().x;
    if i >= a.len() {
        return;
    }
    out_f[2 * i] = a[i] * s + a[(i + 1) % a.len()];
    out_f[2 * i + 1] = (a[i] / (s - 1.0)).sqrt() + (b[i] as f64) + (c[i] >> 40u32) as f64;
    out_i[2 * i] = b[i] * b[i] + b[i] / (b[i] % 5) - (b[i] << 63i32);
    out_i[2 * i + 1] = a[i] as i64 + (c[i] as i64).min(3).max(-2);
    out_u[i] = c[i] * 3 + c[i] / (c[i] & 1) + (c[i] >> (i as u32 + 60u32)) + (i as u64);
}

on_every_backend!(sixty_four_bit_types_match_the_host, |ctx| {
    let k = wide::kernel(ctx).unwrap();
    let n = random_len(4000).max(2);
    let ha: Vec<f64> = random_vec::<f64>(n).iter().map(|v| v.abs() + 0.5).collect();
    let hb = random_vec::<i64>(n);
    let hc = random_vec::<u64>(n);
    let s = 1.0 + random_vec::<f64>(1)[0].abs() / 1e3;
    let (a, b, c) = (
        ctx.upload(&ha).unwrap(),
        ctx.upload(&hb).unwrap(),
        ctx.upload(&hc).unwrap(),
    );
    let mut of = ctx.zeros::<f64>(2 * n).unwrap();
    let mut oi = ctx.zeros::<i64>(2 * n).unwrap();
    let mut ou = ctx.zeros::<u64>(n).unwrap();
    k.launch(
        ctx,
        Grid::for_elems_with_block(n, 128),
        (&a, &b, &c, s, &mut of, &mut oi, &mut ou),
    )
    .unwrap();
    let (gf, gi, gu) = (
        of.download().unwrap(),
        oi.download().unwrap(),
        ou.download().unwrap(),
    );
    for i in 0..n {
        let (x, y, z) = (ha[i], hb[i], hc[i]);
        let f0 = x * s + ha[(i + 1) % n];
        let f1 = (x / (s - 1.0)).sqrt() + y as f64 + (z >> 40) as f64;
        assert_same_or_contracted(
            ctx,
            gf[2 * i],
            f0,
            f64::EPSILON,
            (x * s).abs() + ha[(i + 1) % n].abs(),
            &format!("f64 {i}"),
        );
        let close = (gf[2 * i + 1] - f1).abs() <= f1.abs() * 1e-15;
        assert!(close, "f64 {i}: {} vs {f1}", gf[2 * i + 1]);
        let r = if y % 5 == 0 { 0 } else { y % 5 };
        let q = if r == 0 { y } else { y.wrapping_div(r) };
        let i0 = y
            .wrapping_mul(y)
            .wrapping_add(q)
            .wrapping_sub(y.wrapping_shl(63));
        let i1 = (x as i64).wrapping_add((z as i64).min(3).max(-2));
        assert_eq!((gi[2 * i], gi[2 * i + 1]), (i0, i1), "i64 {i}");
        let d = z.checked_div(z & 1).unwrap_or(z);
        let u = z
            .wrapping_mul(3)
            .wrapping_add(d)
            .wrapping_add(z.wrapping_shr(i as u32 + 60))
            .wrapping_add(i as u64);
        assert_eq!(gu[i], u, "u64 {i}");
    }
});

/// The math functions: exact against the host's on the CPU backend (the
/// same Rust functions), within a loose bound elsewhere (the per-backend
/// ulp bounds are not measured yet: docs/kernels.md).
#[unigpu::kernel]
fn math(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    let v = x[i];
    let k = i * 14;
    out[k] = v.abs().sqrt();
    out[k + 1] = rsqrt(v.abs() + 1.0);
    out[k + 2] = v.exp();
    out[k + 3] = v.exp2();
    out[k + 4] = (v.abs() + 0.1).ln();
    out[k + 5] = (v.abs() + 0.1).log2();
    out[k + 6] = v.sin();
    out[k + 7] = v.cos();
    out[k + 8] = (v * 0.4).tan();
    out[k + 9] = v.tanh();
    out[k + 10] = (v * 10.0).floor() + (v * 10.0).ceil();
    out[k + 11] = v.powi(3) + v.powi(-2);
    out[k + 12] = v.min(0.25).max(-0.25);
    out[k + 13] = v.clamp(-0.5, 0.5);
}

on_every_backend!(math_functions_match_the_host, |ctx| {
    let k = math::kernel(ctx).unwrap();
    let n = random_len(3000);
    // Arguments in [-3, 3]: where WGSL's sin and cos bounds are absolute.
    let hx: Vec<f32> = random_vec::<f32>(n).iter().map(|v| v / 333.0).collect();
    let x = ctx.upload(&hx).unwrap();
    let mut out = ctx.zeros::<f32>(14 * n).unwrap();
    k.launch(ctx, Grid::for_elems(n), (&x, &mut out)).unwrap();
    let got = out.download().unwrap();
    let exact = ctx.backend() == unigpu::Backend::Cpu;
    for (i, &v) in hx.iter().enumerate() {
        let powi = |n: i32| {
            let (mut r, mut b, mut m) = (1.0f32, v, n.unsigned_abs());
            while m > 0 {
                if m & 1 == 1 {
                    r *= b;
                }
                b *= b;
                m >>= 1;
            }
            if n < 0 { 1.0 / r } else { r }
        };
        let want = [
            v.abs().sqrt(),
            1.0 / (v.abs() + 1.0).sqrt(),
            v.exp(),
            v.exp2(),
            (v.abs() + 0.1).ln(),
            (v.abs() + 0.1).log2(),
            v.sin(),
            v.cos(),
            (v * 0.4).tan(),
            v.tanh(),
            (v * 10.0).floor() + (v * 10.0).ceil(),
            powi(3) + powi(-2),
            v.min(0.25).max(-0.25),
            v.max(-0.5).min(0.5),
        ];
        for (j, w) in want.iter().enumerate() {
            let g = got[14 * i + j];
            // floor/ceil, min/max/clamp are exact everywhere.
            let ok = if exact || matches!(j, 10 | 12 | 13) {
                g.to_bits() == w.to_bits()
            } else {
                (g - w).abs() <= 1e-4 * w.abs().max(1.0)
            };
            assert!(ok, "function {j} of x[{i}] = {v}: {g} vs {w}");
        }
    }
});

/// Expressions of literals alone, whose results the language defines but
/// WGSL's constant evaluation refuses (a shader-creation error before the
/// emitter kept literals out of it; found by the property test).
#[unigpu::kernel(workgroup_size = 1)]
fn literal_edges(f: &mut [f32], u: &mut [u32], s: &mut [i32]) {
    f[0] = (-10.0f32).sqrt();
    f[1] = 3.0f32 / 0.0;
    f[2] = -3.0f32 / 0.0;
    u[0] = 255u32 << 33u32;
    u[1] = 4294967295u32 + 2;
    s[0] = 2147483647i32 + 1;
    s[1] = 7i32 / 0;
    s[2] = (-2147483647i32 - 1) / -1;
}

on_every_backend!(literal_expressions_give_the_defined_results, |ctx| {
    let k = literal_edges::kernel(ctx).unwrap();
    let mut f = ctx.upload(&[0.0f32; 3]).unwrap();
    let mut u = ctx.upload(&[0u32; 2]).unwrap();
    let mut s = ctx.upload(&[0i32; 3]).unwrap();
    k.launch(
        ctx,
        Grid::new((1, 1, 1), (1, 1, 1)),
        (&mut f, &mut u, &mut s),
    )
    .unwrap();
    let f = f.download().unwrap();
    assert!(f[0].is_nan(), "sqrt(-10) = {}", f[0]);
    assert_eq!((f[1], f[2]), (f32::INFINITY, f32::NEG_INFINITY));
    assert_eq!(u.download().unwrap(), [510, 1]);
    assert_eq!(s.download().unwrap(), [i32::MIN, 7, i32::MIN]);
});

#[unigpu::kernel]
fn mul_add(a: &[f32], b: &[f32], c: &[f32], sum: &mut [f32], diff: &mut [f32]) {
    let i = global_id().x;
    if i < sum.len() {
        sum[i] = a[i] * b[i] + c[i];
        diff[i] = c[i] - a[i] * b[i];
    }
}

// Issue 26, item 4: `a * b + c` rounds twice, as the host's does, on
// every backend: not contracted into one fma, which a Vulkan driver
// (NVIDIA's) does unless each operation says `NoContraction`. The inputs
// are chosen so that the two differ: c is minus the rounded product (the
// unrounded sum is then the product's rounding error, 0 when rounded
// twice), or near it.
on_every_backend!(mul_add_rounds_twice, |ctx| {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(26);
    let n = 4096usize;
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let x: f32 = rng.random_range(-4.0..4.0);
        let y: f32 = rng.random_range(-4.0..4.0);
        let p = x * y;
        let z = match i % 4 {
            0 | 1 => -p,
            2 => -p * (1.0 + f32::EPSILON * rng.random_range(-8.0f32..8.0).round()),
            _ => p,
        };
        a.push(x);
        b.push(y);
        c.push(z);
    }
    let fused = |x: f32, y: f32, z: f32| (f64::from(x) * f64::from(y) + f64::from(z)) as f32;
    let differ = (0..n)
        .filter(|&i| fused(a[i], b[i], c[i]).to_bits() != (a[i] * b[i] + c[i]).to_bits())
        .count();
    assert!(
        differ > n / 4,
        "only {differ} of {n} inputs tell fused from unfused"
    );
    let k = mul_add::kernel(ctx).unwrap();
    let (da, db, dc) = (
        ctx.upload(&a).unwrap(),
        ctx.upload(&b).unwrap(),
        ctx.upload(&c).unwrap(),
    );
    let mut sum = ctx.upload(&vec![0.0f32; n]).unwrap();
    let mut diff = ctx.upload(&vec![0.0f32; n]).unwrap();
    k.launch(
        ctx,
        Grid::for_elems(n),
        (&da, &db, &dc, &mut sum, &mut diff),
    )
    .unwrap();
    let (sum, diff) = (sum.download().unwrap(), diff.download().unwrap());
    if contracts(ctx, "f32") {
        eprintln!(
            "mul_add_rounds_twice: this adapter contracts and the backend cannot forbid it; not checked"
        );
        return;
    }
    for i in 0..n {
        let (x, y, z) = (a[i], b[i], c[i]);
        assert_eq!(
            (sum[i].to_bits(), diff[i].to_bits()),
            ((x * y + z).to_bits(), (z - x * y).to_bits()),
            "{x} * {y} + {z} = {} and {z} - {x} * {y} = {}, want {} and {} (fused: {})",
            sum[i],
            diff[i],
            x * y + z,
            z - x * y,
            fused(x, y, z),
        );
    }
});

// ---- The CPU form's grid-stride fast path (docs/kernels.md, "Speed"):
// an independent grid-stride loop runs as chunks of its index range with
// plain slices. One kernel it takes and two it must not, each checked
// element by element against the host, in grids of one workgroup, a few,
// and more invocations than elements.

/// Taken: `x`, `y` and `z` are indexed only at `i`; `w` elsewhere (a
/// view); `z` may be longer than the loop's end (its tail untouched).
#[unigpu::kernel]
fn gs_axpy(a: f32, x: &[f32], w: &[f32], y: &mut [f32], z: &mut [u32]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let n = y.len();
    let mut i = global_id().x;
    while i < n {
        let mut t = a * x[i] + y[i];
        if i > 0 {
            t += w[i - 1];
        }
        y[i] = t;
        z[i] = (i as u32) * 3 + 1;
        i += stride;
    }
}
const GS_AXPY_X_LINE: u32 = line!() - 9;

/// Not taken: a `break` of the loop itself ends one invocation's
/// sequence, which no chunking of the index range can reproduce.
#[unigpu::kernel]
fn gs_until_negative(x: &[f32], y: &mut [f32]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < x.len() {
        if x[i] < 0.0 {
            break;
        }
        y[i] = x[i];
        i += stride;
    }
}

/// Not taken: `last` is written at `i % stride`, where each invocation's
/// last iteration must win.
#[unigpu::kernel]
fn gs_last(x: &[f32], last: &mut [f32]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < x.len() {
        last[i % stride] = x[i];
        i += stride;
    }
}

/// The grids the grid-stride tests launch for `n` elements: one
/// workgroup, three, and more invocations than elements.
fn gs_grids(n: usize) -> [u32; 3] {
    [1, 3, (n / 256 + 3) as u32]
}

// Constants, asserted in a test so the report names what changed.
#[allow(clippy::assertions_on_constants)]
#[test]
fn grid_stride_fast_path_takes_only_independent_loops() {
    assert!(gs_axpy::CPU_GRID_STRIDE);
    assert!(!gs_until_negative::CPU_GRID_STRIDE);
    assert!(!gs_last::CPU_GRID_STRIDE);
    // Barriers, shared arrays and atomics are never taken.
    assert!(!vector_add::CPU_GRID_STRIDE);
}

on_every_backend!(grid_stride_axpy_matches_the_host, |ctx| {
    let k = gs_axpy::kernel(ctx).unwrap();
    for groups in gs_grids(random_len(70_000)) {
        let n = random_len(70_000);
        let (hx, hw, hy) = (
            random_vec::<f32>(n),
            random_vec::<f32>(n),
            random_vec::<f32>(n),
        );
        let tail = random_len(300);
        let a = 1.5f32;
        let (x, w) = (ctx.upload(&hx).unwrap(), ctx.upload(&hw).unwrap());
        let mut y = ctx.upload(&hy).unwrap();
        let mut z = ctx.upload(&vec![7u32; n + tail]).unwrap();
        k.launch(
            ctx,
            Grid::new((groups, 1, 1), (256, 1, 1)),
            (a, &x, &w, &mut y, &mut z),
        )
        .unwrap();
        let (gy, gz) = (y.download().unwrap(), z.download().unwrap());
        for i in 0..n {
            let mut t = a * hx[i] + hy[i];
            if i > 0 {
                t += hw[i - 1];
            }
            let what = format!("y[{i}] of {n}, {groups} workgroups");
            assert_same_or_contracted(ctx, gy[i] as f64, t as f64, 1e-6, 2e3, &what);
            assert_eq!(
                gz[i],
                i as u32 * 3 + 1,
                "z[{i}] of {n}, {groups} workgroups"
            );
        }
        assert!(gz[n..].iter().all(|&v| v == 7), "z past the loop's end");
    }
});

// A read past `x`'s end: the launch takes the general path, which reads 0
// there and reports the first fault.
on_every_backend!(grid_stride_axpy_short_input_reports, |ctx| {
    let k = gs_axpy::kernel(ctx).unwrap();
    let n = 1000 + random_len(5000);
    let short = random_len(n - 1);
    let (hx, hw, hy) = (
        random_vec::<f32>(short),
        random_vec::<f32>(n),
        random_vec::<f32>(n),
    );
    let (x, w) = (ctx.upload(&hx).unwrap(), ctx.upload(&hw).unwrap());
    let mut y = ctx.upload(&hy).unwrap();
    let mut z = ctx.zeros::<u32>(n).unwrap();
    k.launch(
        ctx,
        Grid::new((2, 1, 1), (256, 1, 1)),
        (0.5, &x, &w, &mut y, &mut z),
    )
    .unwrap();
    assert_oob(
        ctx.default_stream().sync(),
        "gs_axpy",
        &["x"],
        GS_AXPY_X_LINE,
        ArrayAccess::Read,
    );
    let got = y.download().unwrap();
    for i in 0..n {
        let xi = hx.get(i).copied().unwrap_or(0.0);
        let mut t = 0.5 * xi + hy[i];
        if i > 0 {
            t += hw[i - 1];
        }
        assert_same_or_contracted(ctx, got[i] as f64, t as f64, 1e-6, 2e3, &format!("y[{i}]"));
    }
});

/// Taken, with loads at literal indices of a read-only array, which the
/// fast path reads once a chunk (`p[2]` only where `x[i]` is negative).
#[unigpu::kernel]
fn gs_params(p: &[f32], x: &[f32], y: &mut [f32]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < y.len() {
        let mut t = x[i] * p[0] + p[1];
        if x[i] < 0.0 {
            t = p[2];
        }
        y[i] = t;
        i += stride;
    }
}
const GS_PARAMS_P2_LINE: u32 = line!() - 6;

// Three elements in `p`: every result from them. Two, with no negative
// input: `p[2]` is never read, so no fault (the loop ran in its plain
// form). Two and some negatives: those read 0 and the fault names `p`.
on_every_backend!(
    grid_stride_constant_loads_match_the_host_and_report,
    |ctx| {
        #[allow(clippy::assertions_on_constants)]
        {
            assert!(gs_params::CPU_GRID_STRIDE);
        }
        let k = gs_params::kernel(ctx).unwrap();
        for (np, negatives) in [(3, true), (2, false), (2, true)] {
            let n = random_len(40_000) + 1000;
            let hp = random_vec::<f32>(np);
            let mut hx = random_vec::<f32>(n);
            if !negatives {
                hx.iter_mut().for_each(|v| *v = v.abs());
            } else {
                hx[random_len(n) - 1] = -1.0;
            }
            let (p, x) = (ctx.upload(&hp).unwrap(), ctx.upload(&hx).unwrap());
            let mut y = ctx.zeros::<f32>(n).unwrap();
            let groups = [1, 3, 40][random_len(3) - 1];
            k.launch(
                ctx,
                Grid::new((groups, 1, 1), (256, 1, 1)),
                (&p, &x, &mut y),
            )
            .unwrap();
            let synced = ctx.default_stream().sync();
            if np == 2 && negatives {
                assert_oob(
                    synced,
                    "gs_params",
                    &["p"],
                    GS_PARAMS_P2_LINE,
                    ArrayAccess::Read,
                );
            } else {
                synced.unwrap();
            }
            let got = y.download().unwrap();
            for i in 0..n {
                let want = if hx[i] < 0.0 {
                    hp.get(2).copied().unwrap_or(0.0)
                } else {
                    hx[i] * hp[0] + hp[1]
                };
                let what = format!("y[{i}] of {n}, p of {np}, {groups} workgroups");
                assert_same_or_contracted(ctx, got[i] as f64, want as f64, 1e-6, 2e3, &what);
            }
        }
    }
);

/// Widened on every GPU form (widen.rs): `i` only indexes the arrays.
#[unigpu::kernel]
fn gs_saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < y.len() {
        y[i] = a * x[i] + y[i];
        i += stride;
    }
}
const GS_SAXPY_X_LINE: u32 = line!() - 4;

// Lengths of any remainder by 4, and an `x` shorter than `y`: the widened
// part stops at the shorter length's last whole vector, and the loop
// after it gives the rest and reports the first index past `x`.
on_every_backend!(
    widened_saxpy_matches_the_host_and_reports_a_short_input,
    |ctx| {
        let k = gs_saxpy::kernel(ctx).unwrap();
        for short in [false, true] {
            let n = 4 * random_len(20_000) + random_len(4) - 1;
            let nx = if short { n - random_len(n / 2) } else { n };
            let (hx, hy) = (random_vec::<f32>(nx), random_vec::<f32>(n));
            let x = ctx.upload(&hx).unwrap();
            let mut y = ctx.upload(&hy).unwrap();
            let groups = [1, 3, 40][random_len(3) - 1];
            k.launch(
                ctx,
                Grid::new((groups, 1, 1), (256, 1, 1)),
                (0.5, &x, &mut y),
            )
            .unwrap();
            let synced = ctx.default_stream().sync();
            if short {
                assert_oob(
                    synced,
                    "gs_saxpy",
                    &["x"],
                    GS_SAXPY_X_LINE,
                    ArrayAccess::Read,
                );
            } else {
                synced.unwrap();
            }
            let got = y.download().unwrap();
            for i in 0..n {
                let xi = hx.get(i).copied().unwrap_or(0.0);
                let what = format!("y[{i}] of {n} (x has {nx}), {groups} workgroups");
                assert_same_or_contracted(
                    ctx,
                    got[i] as f64,
                    (0.5 * xi + hy[i]) as f64,
                    1e-6,
                    2e3,
                    &what,
                );
            }
        }
    }
);

/// Widened with two 8-byte lanes a vector (f64 and i64 share the width):
/// on the GPUs `vec2<f64>`/`vec2<i64>` and `ug_vec<double>`/`<long long>`.
#[unigpu::kernel]
fn gs_wide64(s: f64, x: &[f64], y: &mut [f64], n: &mut [i64]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < y.len() {
        y[i] = x[i] * s + y[i];
        n[i] = n[i] * 3 - 1;
        i += stride;
    }
}

on_every_backend!(widened_64_bit_loop_matches_the_host, |ctx| {
    let k = gs_wide64::kernel(ctx).unwrap();
    let n = 2 * random_len(10_000) + random_len(2) - 1;
    let (hx, hy, hn) = (
        random_vec::<f64>(n),
        random_vec::<f64>(n),
        random_vec::<i64>(n),
    );
    let (x, mut y, mut c) = (
        ctx.upload(&hx).unwrap(),
        ctx.upload(&hy).unwrap(),
        ctx.upload(&hn).unwrap(),
    );
    let groups = [1, 5, 64][random_len(3) - 1];
    k.launch(
        ctx,
        Grid::new((groups, 1, 1), (256, 1, 1)),
        (0.25, &x, &mut y, &mut c),
    )
    .unwrap();
    let (gy, gn) = (y.download().unwrap(), c.download().unwrap());
    for i in 0..n {
        let what = format!("y[{i}] of {n}, {groups} workgroups");
        assert_same_or_contracted(ctx, gy[i], hx[i] * 0.25 + hy[i], f64::EPSILON, 2e3, &what);
        assert_eq!(
            gn[i],
            hn[i].wrapping_mul(3).wrapping_sub(1),
            "n[{i}] of {n}"
        );
    }
});

// The grid-stride axpy on arrays that start 4 bytes past 16, in every
// combination: the CUDA form's widened part runs only when all its
// arrays are aligned, and the results are the same either way.
on_every_cuda_backend!(
    grid_stride_axpy_on_unaligned_arrays_matches_the_host,
    |ctx| {
        let k = gs_axpy::kernel(ctx).unwrap();
        for (shift_x, shift_y) in [(true, false), (false, true), (true, true)] {
            let n = 1000 + random_len(60_000);
            let (hx, hw, hy) = (
                random_vec::<f32>(n + 1),
                random_vec::<f32>(n),
                random_vec::<f32>(n + 1),
            );
            let (mut x0, w) = (ctx.upload(&hx).unwrap(), ctx.upload(&hw).unwrap());
            let mut y0 = ctx.upload(&hy).unwrap();
            let (x, ox) = if shift_x {
                (common::offset_by_one(ctx, &mut x0), 1)
            } else {
                (ctx.upload(&hx[..n]).unwrap(), 0)
            };
            let (mut y, oy) = if shift_y {
                (common::offset_by_one(ctx, &mut y0), 1)
            } else {
                (ctx.upload(&hy[..n]).unwrap(), 0)
            };
            let mut z = ctx.zeros::<u32>(n).unwrap();
            let a = -0.75f32;
            k.launch(
                ctx,
                Grid::new((7, 1, 1), (256, 1, 1)),
                (a, &x, &w, &mut y, &mut z),
            )
            .unwrap();
            let (gy, gz) = (y.download().unwrap(), z.download().unwrap());
            for i in 0..n {
                let mut t = a * hx[i + ox] + hy[i + oy];
                if i > 0 {
                    t += hw[i - 1];
                }
                let what = format!("y[{i}] of {n}, x shifted {shift_x}, y shifted {shift_y}");
                assert_same_or_contracted(ctx, gy[i] as f64, t as f64, 1e-6, 2e3, &what);
                assert_eq!(gz[i], i as u32 * 3 + 1, "z[{i}] of {n}");
            }
        }
    }
);

on_every_backend!(grid_stride_break_and_strided_writes_match_the_host, |ctx| {
    let (until, last) = (
        gs_until_negative::kernel(ctx).unwrap(),
        gs_last::kernel(ctx).unwrap(),
    );
    for groups in gs_grids(random_len(40_000)) {
        let n = random_len(40_000);
        let stride = groups as usize * 256;
        // Mostly positive, so sequences run a while before a negative.
        let hx: Vec<f32> = random_vec::<f32>(n).iter().map(|v| v + 900.0).collect();
        let x = ctx.upload(&hx).unwrap();
        let mut y = ctx.upload(&vec![-1.0f32; n]).unwrap();
        until
            .launch(ctx, Grid::new((groups, 1, 1), (256, 1, 1)), (&x, &mut y))
            .unwrap();
        let mut want = vec![-1.0f32; n];
        for g in 0..stride {
            let mut i = g;
            while i < n && hx[i] >= 0.0 {
                want[i] = hx[i];
                i += stride;
            }
        }
        let got = y.download().unwrap();
        for i in 0..n {
            assert_eq!(
                got[i].to_bits(),
                want[i].to_bits(),
                "y[{i}] of {n}, {groups} workgroups"
            );
        }
        let mut l = ctx.upload(&vec![-1.0f32; stride]).unwrap();
        last.launch(ctx, Grid::new((groups, 1, 1), (256, 1, 1)), (&x, &mut l))
            .unwrap();
        let mut want = vec![-1.0f32; stride];
        for i in 0..n {
            want[i % stride] = hx[i];
        }
        assert_eq!(
            l.download().unwrap(),
            want,
            "{n} elements, {groups} workgroups"
        );
    }
});

// ---- The CPU form's rows (docs/kernels.md, "Speed"): a grid-stride loop
// in a phase runs row by row over the workgroup's invocations. Checked
// bit for bit against a host that adds in each invocation's order, and
// through `seen`, which every index must reach once, from the right
// invocation.

/// Taken (`CPU_ROWS`) where `n <= x.len()`: `x` is then a plain slice in
/// each row; past its end the phase runs invocation by invocation.
#[unigpu::kernel(workgroup_size = 64)]
fn rows_sum(x: &[f32], w: &[f32], n: u32, partial: &mut [f32], seen: &mut [u32]) {
    let tile = shared::<f32, 64>();
    let l = local_id().x;
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    let mut v = 0.0f32;
    while i < n as usize {
        v += x[i] * w[i % 7];
        seen[i] += global_id().x as u32 + 1;
        i += stride;
    }
    tile[l] = v;
    barrier();
    let mut s = tile.len() / 2;
    while s > 0 {
        if l < s {
            tile[l] += tile[l + s];
        }
        barrier();
        s /= 2;
    }
    if l == 0 {
        partial[workgroup_id().x] = tile[0];
    }
}
const ROWS_SUM_X_LINE: u32 = line!() - 18;

/// Not taken: a kernel with a `return` (an invocation may end early).
#[unigpu::kernel(workgroup_size = 64)]
fn rows_sum_returns(x: &[f32], partial: &mut [f32]) {
    let tile = shared::<f32, 64>();
    let l = local_id().x;
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    let mut v = 0.0f32;
    while i < x.len() {
        v += x[i];
        i += stride;
    }
    tile[l] = v;
    barrier();
    if l >= 1 {
        return;
    }
    let mut t = 0.0f32;
    for j in 0..64usize {
        t += tile[j];
    }
    partial[workgroup_id().x] = t;
}

/// Not run together on the CPU (`CPU_TOGETHER`): how many rounds of a
/// loop around barriers a workgroup runs depends on which workgroup it is,
/// so each workgroup must decide for itself.
#[unigpu::kernel(workgroup_size = 64)]
fn group_rounds(x: &[u32], out: &mut [u32]) {
    let a = shared::<u32, 64>();
    let b = shared::<u32, 64>();
    let l = local_id().x;
    let i = global_id().x;
    if i < x.len() {
        a[l] = x[i];
    }
    barrier();
    let rounds = workgroup_id().x % 5;
    let mut r = 0usize;
    while r < rounds {
        b[l] = a[l] + a[(l + 1) % 64];
        barrier();
        a[l] = b[l] ^ (r as u32);
        barrier();
        r += 1;
    }
    if i < out.len() {
        out[i] = a[l];
    }
}

/// The host's `group_rounds`.
fn group_rounds_host(x: &[u32], groups: usize) -> Vec<u32> {
    let mut out = vec![0u32; x.len()];
    for g in 0..groups {
        let mut a: Vec<u32> = (0..64)
            .map(|l| x.get(g * 64 + l).copied().unwrap_or(0))
            .collect();
        for r in 0..g % 5 {
            let b: Vec<u32> = (0..64)
                .map(|l| a[l].wrapping_add(a[(l + 1) % 64]))
                .collect();
            a = b.iter().map(|v| v ^ r as u32).collect();
        }
        for (l, v) in a.iter().enumerate() {
            if let Some(o) = out.get_mut(g * 64 + l) {
                *o = *v;
            }
        }
    }
    out
}

#[allow(clippy::assertions_on_constants)]
#[test]
fn workgroups_that_decide_alike_run_together_on_the_cpu() {
    // Their conditions around barriers name sizes and lengths only.
    assert!(tree_sum::CPU_TOGETHER && rows_sum::CPU_TOGETHER);
    assert!(rows_sum_returns::CPU_TOGETHER);
    // A per-workgroup value from the workgroup's id bounds the loop.
    assert!(!group_rounds::CPU_TOGETHER);
    // No barrier, no shared array: not the phased form at all.
    assert!(!vector_add::CPU_TOGETHER);
}

// Every workgroup's own number of rounds, whether or not a task of the
// CPU backend holds several workgroups (it does from 16 of them on 2
// cores: `run_groups`).
on_every_backend!(group_rounds_match_the_host, |ctx| {
    let k = group_rounds::kernel(ctx).unwrap();
    for groups in [1usize, 7, 16 + random_len(200)] {
        let n = groups * 64 - random_len(63) + 1;
        let hx = random_vec::<u32>(n);
        let x = ctx.upload(&hx).unwrap();
        let mut out = ctx.upload(&vec![u32::MAX; n]).unwrap();
        k.launch(
            ctx,
            Grid::new((groups as u32, 1, 1), (64, 1, 1)),
            (&x, &mut out),
        )
        .unwrap();
        assert_eq!(
            out.download().unwrap(),
            group_rounds_host(&hx, groups),
            "{groups} workgroups, {n} elements"
        );
    }
});

/// The host's `rows_sum`: per workgroup, each invocation's sum in its
/// order, then the tree; and `seen`.
fn rows_sum_host(x: &[f32], w: &[f32], n: usize, groups: usize) -> (Vec<f32>, Vec<u32>) {
    let stride = groups * 64;
    let mut seen = vec![0u32; n];
    let partial = (0..groups)
        .map(|g| {
            let mut tile: Vec<f32> = (0..64)
                .map(|l| {
                    let (mut i, mut v) = (g * 64 + l, 0.0f32);
                    while i < n {
                        v += x.get(i).copied().unwrap_or(0.0) * w[i % 7];
                        seen[i] += (g * 64 + l) as u32 + 1;
                        i += stride;
                    }
                    v
                })
                .collect();
            let mut s = 32;
            while s > 0 {
                for l in 0..s {
                    tile[l] += tile[l + s];
                }
                s /= 2;
            }
            tile[0]
        })
        .collect();
    (partial, seen)
}

#[allow(clippy::assertions_on_constants)]
#[test]
fn rows_are_taken_only_without_return() {
    assert!(rows_sum::CPU_ROWS);
    assert!(!rows_sum_returns::CPU_ROWS);
    assert!(!rows_sum::CPU_GRID_STRIDE);
}

on_every_backend!(rows_sum_matches_the_host, |ctx| {
    let k = rows_sum::kernel(ctx).unwrap();
    for groups in [1u32, 3, random_len(300) as u32] {
        let len = random_len(50_000);
        let (hx, hw) = (random_vec::<f32>(len), random_vec::<f32>(7));
        let (x, w) = (ctx.upload(&hx).unwrap(), ctx.upload(&hw).unwrap());
        let mut partial = ctx.zeros::<f32>(groups as usize).unwrap();
        let mut seen = ctx.zeros::<u32>(len).unwrap();
        k.launch(
            ctx,
            Grid::new((groups, 1, 1), (64, 1, 1)),
            (&x, &w, len as u32, &mut partial, &mut seen),
        )
        .unwrap();
        let (want, want_seen) = rows_sum_host(&hx, &hw, len, groups as usize);
        let got = partial.download().unwrap();
        for g in 0..groups as usize {
            let what = format!("partial[{g}] of {groups}, {len} elements");
            assert_same_or_contracted(ctx, got[g] as f64, want[g] as f64, 1e-6, 1e9, &what);
        }
        assert_eq!(
            seen.download().unwrap(),
            want_seen,
            "{groups} workgroups, {len} elements"
        );
    }
});

// `n` past `x`'s end: the phase runs invocation by invocation, reads 0
// there and reports the first fault.
on_every_backend!(rows_sum_past_the_end_reports, |ctx| {
    let k = rows_sum::kernel(ctx).unwrap();
    let groups = 2 + random_len(20) as u32;
    let len = random_len(20_000);
    let n = len + 1 + random_len(500);
    let (hx, hw) = (random_vec::<f32>(len), random_vec::<f32>(7));
    let (x, w) = (ctx.upload(&hx).unwrap(), ctx.upload(&hw).unwrap());
    let mut partial = ctx.zeros::<f32>(groups as usize).unwrap();
    let mut seen = ctx.zeros::<u32>(n).unwrap();
    k.launch(
        ctx,
        Grid::new((groups, 1, 1), (64, 1, 1)),
        (&x, &w, n as u32, &mut partial, &mut seen),
    )
    .unwrap();
    assert_oob(
        ctx.default_stream().sync(),
        "rows_sum",
        &["x"],
        ROWS_SUM_X_LINE,
        ArrayAccess::Read,
    );
    let (want, want_seen) = rows_sum_host(&hx, &hw, n, groups as usize);
    let got = partial.download().unwrap();
    for g in 0..groups as usize {
        let what = format!("partial[{g}] of {groups}");
        assert_same_or_contracted(ctx, got[g] as f64, want[g] as f64, 1e-6, 1e9, &what);
    }
    assert_eq!(seen.download().unwrap(), want_seen);
});

on_every_backend!(rows_sum_with_return_matches_the_host, |ctx| {
    let k = rows_sum_returns::kernel(ctx).unwrap();
    let groups = 1 + random_len(50) as u32;
    let len = random_len(30_000);
    let hx = random_vec::<f32>(len);
    let x = ctx.upload(&hx).unwrap();
    let mut partial = ctx.zeros::<f32>(groups as usize).unwrap();
    k.launch(
        ctx,
        Grid::new((groups, 1, 1), (64, 1, 1)),
        (&x, &mut partial),
    )
    .unwrap();
    let stride = groups as usize * 64;
    let got = partial.download().unwrap();
    for g in 0..groups as usize {
        let mut t = 0.0f32;
        for l in 0..64 {
            let (mut i, mut v) = (g * 64 + l, 0.0f32);
            while i < len {
                v += hx[i];
                i += stride;
            }
            t += v;
        }
        assert_same_or_contracted(
            ctx,
            got[g] as f64,
            t as f64,
            1e-6,
            1e9,
            &format!("partial[{g}]"),
        );
    }
});

/// The CPU form holds `s` and `k` once per workgroup (every invocation
/// has the same value) and runs their updates once, between the
/// invocation loops: `s` is read before and after its update in one
/// phase, so an update run per invocation, or out of place, shows.
#[unigpu::kernel(workgroup_size = 32)]
fn uniform_steps(x: &[u32], out: &mut [u32]) {
    let tile = shared::<u32, 32>();
    let l = local_id().x;
    let g = global_id().x;
    let mut s = (workgroup_id().x * 3 + 1) as u32;
    let mut acc = 0u32;
    tile[l] = x[g % x.len()];
    barrier();
    let mut k = 0usize;
    while k < 5 {
        acc += s * tile[(l + k) % 32];
        s = s * 2 + 1;
        acc ^= s;
        barrier();
        k += 1;
    }
    out[g] = acc + s;
}

on_every_backend!(uniform_steps_match_the_host, |ctx| {
    let k = uniform_steps::kernel(ctx).unwrap();
    let groups = 1 + random_len(40);
    let n = groups * 32;
    let hx = random_vec::<u32>(1 + random_len(2000));
    let x = ctx.upload(&hx).unwrap();
    let mut out = ctx.zeros::<u32>(n).unwrap();
    k.launch(
        ctx,
        Grid::new((groups as u32, 1, 1), (32, 1, 1)),
        (&x, &mut out),
    )
    .unwrap();
    let got = out.download().unwrap();
    for g in 0..n {
        let (w, l) = (g / 32, g % 32);
        let tile = |j: usize| hx[(w * 32 + j) % hx.len()];
        let mut s = (w * 3 + 1) as u32;
        let mut acc = 0u32;
        for k in 0..5 {
            acc = acc.wrapping_add(s.wrapping_mul(tile((l + k) % 32)));
            s = s.wrapping_mul(2).wrapping_add(1);
            acc ^= s;
        }
        assert_eq!(got[g], acc.wrapping_add(s), "out[{g}] of {n}");
    }
});
