//! Accesses the macro proves in bounds (crates/kernel-macros/src/inbounds.rs)
//! lose their check on the GPU forms; these kernels hold that to account on
//! every backend: the proven ones give the host reference, and the near
//! misses beside them (one past a range, a condition whose variable changed)
//! still report their out-of-bounds access at the next sync, naming the
//! line. A launch with another block than the declared workgroup size is
//! refused even through the plain `Kernel` (the proofs count on it).

mod common;

use common::{random_len, random_vec};
use unigpu::{ArrayAccess, Error, Grid};

#[track_caller]
fn assert_oob(r: unigpu::Result<()>, kernel: &str, array: &str, line: u32, access: ArrayAccess) {
    match r {
        Err(Error::KernelOutOfBounds {
            kernel: k,
            array: a,
            file,
            line: l,
            access: x,
        }) => assert_eq!(
            (k.as_str(), a.as_str(), file.as_str(), l, x),
            (kernel, array, file!(), line, access)
        ),
        other => panic!("expected `{kernel}`'s out-of-bounds report, got {other:?}"),
    }
}

/// A 16-wide transpose through a shared tile, and each element's row of
/// its tile summed with weights: every shared index is proven (local ids
/// below 16, `j` below 16), the global ones are not.
#[unigpu::kernel(workgroup_size = (16, 16))]
fn tile_transpose(x: &[f32], out: &mut [f32], sums: &mut [f32], n: u32) {
    let t = shared::<f32, 256>();
    let lx = local_id().x;
    let ly = local_id().y;
    let w = n as usize;
    let col = global_id().x;
    let row = global_id().y;
    let mut v = 0.0f32;
    if row < w && col < w {
        v = x[row * w + col];
    }
    t[ly * 16 + lx] = v;
    barrier();
    let mut acc = 0.0f32;
    for j in 0..16usize {
        acc += t[ly * 16 + j] * (j as f32);
    }
    if row < w && col < w {
        sums[row * w + col] = acc;
    }
    let tcol = workgroup_id().y * 16 + lx;
    let trow = workgroup_id().x * 16 + ly;
    if trow < w && tcol < w {
        out[trow * w + tcol] = t[lx * 16 + ly];
    }
}

on_every_backend!(proven_shared_indices_give_the_reference, |ctx| {
    let k = tile_transpose::kernel(ctx).unwrap();
    let n = random_len(70).max(1);
    let hx = random_vec::<f32>(n * n);
    let x = ctx.upload(&hx).unwrap();
    let mut out = ctx.upload(&vec![f32::NAN; n * n]).unwrap();
    let mut sums = ctx.upload(&vec![f32::NAN; n * n]).unwrap();
    let groups = n.div_ceil(16) as u32;
    let grid = Grid::new((groups, groups, 1), (16, 16, 1));
    k.launch(ctx, grid, (&x, &mut out, &mut sums, n as u32))
        .unwrap();
    let (got, got_sums) = (out.download().unwrap(), sums.download().unwrap());
    // Zeros past the edge, as the kernel's tile holds.
    let at = |r: usize, c: usize| if r < n && c < n { hx[r * n + c] } else { 0.0 };
    for r in 0..n {
        for c in 0..n {
            let i = r * n + c;
            assert_eq!(
                got[i].to_bits(),
                hx[c * n + r].to_bits(),
                "transpose ({r}, {c}) of {n}"
            );
            let base = c / 16 * 16;
            let mut acc = 0.0f32;
            for j in 0..16 {
                acc += at(r, base + j) * j as f32;
            }
            assert_eq!(
                got_sums[i].to_bits(),
                acc.to_bits(),
                "row sum ({r}, {c}) of {n}"
            );
        }
    }
});

/// One past the proven range: `l * 16 + j` reaches 256 for `l == 15`.
const ONE_PAST_LINE: u32 = line!() + 9;
#[unigpu::kernel(workgroup_size = 16)]
fn one_past(out: &mut [f32]) {
    let t = shared::<f32, 256>();
    let l = local_id().x;
    t[l] = 1.0;
    barrier();
    let mut acc = 0.0f32;
    for j in 0..17usize {
        acc += t[l * 16 + j];
    }
    out[global_id().x] = acc;
}

on_every_backend!(one_past_a_proven_range_is_still_reported, |ctx| {
    let k = one_past::kernel(ctx).unwrap();
    let mut out = ctx.zeros::<f32>(16).unwrap();
    k.launch(ctx, Grid::new((1, 1, 1), (16, 1, 1)), (&mut out,))
        .unwrap();
    assert_oob(
        ctx.sync(),
        "one_past",
        "t",
        ONE_PAST_LINE,
        ArrayAccess::Read,
    );
    // The read past the end gave zero; t[0..16] are 1, the rest 0.
    let got = out.download().unwrap();
    for (l, g) in got.iter().enumerate() {
        let want = (0..17).filter(|j| l * 16 + j < 16).count() as f32;
        assert_eq!(*g, want, "invocation {l}");
    }
});

/// `i < y.len()` proves `y[i]` until `i` changes: the store after the
/// step is checked, and the last invocation's reaches past the end. (Its
/// only unproven access: the WGSL form indexes parameter arrays directly
/// only when all their accesses are proven, so a proof kept too long would
/// show there too.)
const AFTER_STEP_LINE: u32 = line!() + 7;
#[unigpu::kernel(workgroup_size = 64)]
fn after_step(y: &mut [u32]) {
    let mut i = global_id().x;
    if i < y.len() {
        y[i] = y[i] + 1;
        i += 1;
        y[i] = 7;
    }
}

on_every_backend!(a_store_after_its_variable_changed_is_still_checked, |ctx| {
    let k = after_step::kernel(ctx).unwrap();
    let n = random_len(3000).max(2);
    let hy: Vec<u32> = random_vec::<u32>(n)
        .iter()
        .map(|v| v % 1000 + 100)
        .collect();
    let mut y = ctx.upload(&hy).unwrap();
    // One invocation per element, so exactly one store lands past the end.
    let grid = Grid::for_elems_with_block(n, 64);
    k.launch(ctx, grid, (&mut y,)).unwrap();
    assert_oob(
        ctx.sync(),
        "after_step",
        "y",
        AFTER_STEP_LINE,
        ArrayAccess::Write,
    );
    // Element i > 0 is written by i (its value + 1, read before or after
    // i - 1 wrote 7) and by i - 1 (7), in an order no backend promises.
    let got = y.download().unwrap();
    assert_eq!(got[0], hy[0] + 1);
    for i in 1..n {
        let ok = [hy[i] + 1, 7, 8];
        assert!(
            ok.contains(&got[i]),
            "element {i}: {} not one of {ok:?}",
            got[i]
        );
    }
});

on_every_backend!(
    another_block_is_refused_even_through_the_plain_kernel,
    |ctx| {
        let k = one_past::kernel(ctx).unwrap();
        let plain: &unigpu::Kernel = &k;
        let mut out = ctx.zeros::<f32>(64).unwrap();
        let err = ctx
            .launch(plain, Grid::new((1, 1, 1), (64, 1, 1)), (&mut out,))
            .expect_err("a block of 64 for a kernel declared with 16");
        let text = err.to_string();
        assert!(
            text.contains("one_past") && text.contains("workgroup_size"),
            "{text}"
        );
        // Nothing ran: the array is untouched and the stream is clean.
        ctx.sync().unwrap();
        assert!(out.download().unwrap().iter().all(|v| *v == 0.0));
    }
);

/// A window (`8 < x.len() && i < x.len() - 8`) proves `x[i]` to
/// `x[i + 8]`; `x[i + 9]` is one past it and keeps its check, and the
/// last invocation inside the window reads one past the end. (`out[i]` is
/// proven too, so a proof one wider would leave the WGSL form no check.)
const PAST_WINDOW_LINE: u32 = line!() + 6;
#[unigpu::kernel(workgroup_size = 64)]
fn past_window(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if 8 < x.len() && i < x.len() - 8 && i < out.len() {
        let a = x[i] + x[i + 8];
        out[i] = a + x[i + 9];
    }
}

on_every_backend!(one_past_a_window_is_still_reported, |ctx| {
    let k = past_window::kernel(ctx).unwrap();
    let n = random_len(3000).max(10);
    let hx = random_vec::<f32>(n);
    let x = ctx.upload(&hx).unwrap();
    let mut out = ctx.zeros::<f32>(n).unwrap();
    k.launch(ctx, Grid::for_elems_with_block(n, 64), (&x, &mut out))
        .unwrap();
    assert_oob(
        ctx.sync(),
        "past_window",
        "x",
        PAST_WINDOW_LINE,
        ArrayAccess::Read,
    );
    // The read past the end gave zero.
    let got = out.download().unwrap();
    for i in 0..n {
        let want = if i + 8 < n {
            hx[i] + hx[i + 8] + hx.get(i + 9).copied().unwrap_or(0.0)
        } else {
            0.0
        };
        assert_eq!(got[i], want, "element {i} of {n}");
    }
});

/// Without `8 < x.len()`, `x.len() - 8` wraps for a short `x` and the
/// condition proves nothing: every access keeps its check.
const UNGUARDED_WINDOW_LINE: u32 = line!() + 5;
#[unigpu::kernel(workgroup_size = 64)]
fn unguarded_window(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < x.len() - 8 {
        out[i] = x[i + 8];
    }
}

on_every_backend!(a_window_without_its_guard_proves_nothing, |ctx| {
    let k = unguarded_window::kernel(ctx).unwrap();
    let n = random_len(7);
    let x = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let mut out = ctx.zeros::<f32>(64).unwrap();
    k.launch(ctx, Grid::new((1, 1, 1), (64, 1, 1)), (&x, &mut out))
        .unwrap();
    assert_oob(
        ctx.sync(),
        "unguarded_window",
        "x",
        UNGUARDED_WINDOW_LINE,
        ArrayAccess::Read,
    );
});
