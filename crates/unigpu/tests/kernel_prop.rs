//! The property test of `#[unigpu::kernel]` (issue 26, item 6): random
//! kernels within the language, each run on every backend and checked,
//! element by element, against a host reference that the generator
//! (crates/kernel-proptest) wrote from the same random tree, without the
//! macro.
//!
//! The kernels are made when this test compiles, from
//! `UNIGPU_PROPTEST_SEED` (default 26, what CI runs) and
//! `UNIGPU_PROPTEST_KERNELS` (default 24); the inputs are random on every
//! run, from `UNIGPU_PROPTEST_DATA_SEED` when it is set. A failure prints
//! both seeds and the kernel's source. Other kernels:
//! `UNIGPU_PROPTEST_SEED=7 cargo test -p unigpu --test kernel_prop`
//! (docs/testing.md).

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use unigpu::{Context, GpuArray};

unigpu_kernel_proptest::random_kernels!();

/// One generated kernel.
#[derive(Debug)]
pub struct Case {
    pub name: &'static str,
    pub workgroup: usize,
    /// Whether it computes in f32 (see [`contracts`]).
    pub floats: bool,
    /// Whether it uses shared memory and barriers.
    pub shared: bool,
    /// The kernel's Rust source, printed when it fails.
    pub source: &'static str,
    /// Its WGSL (printed with `UNIGPU_PROPTEST_VERBOSE`).
    pub wgsl: &'static str,
    pub launch: fn(&Context, &mut Device) -> unigpu::Result<()>,
    #[allow(clippy::type_complexity)]
    /// The generator's reference; it also marks, in the last slice, the
    /// elements whose computation met an infinity, a NaN or a subnormal.
    pub reference: fn(
        &[i32],
        &[u32],
        &[f32],
        i32,
        &mut [i32],
        &mut [u32],
        &mut [f32],
        &mut [u32],
        &mut [bool],
    ),
}

#[derive(Debug)]
/// Every kernel has the same parameters: three inputs, a scalar, three
/// outputs (one element per invocation) and the global atomics' array.
pub struct Device {
    pub n: usize,
    pub a: GpuArray<i32>,
    pub b: GpuArray<u32>,
    pub f: GpuArray<f32>,
    pub s: i32,
    pub oi: GpuArray<i32>,
    pub ou: GpuArray<u32>,
    pub of: GpuArray<f32>,
    pub acc: GpuArray<u32>,
}

/// Whether `ctx` is a Vulkan adapter that contracts `a * b + c` into one
/// fma (NVIDIA's) where the backend cannot forbid it (no SPIR-V
/// passthrough: `unigpu info` says "float contraction: possible"): there
/// a float kernel has no one answer, and only the integer kernels are
/// checked. With passthrough every `+`, `-`, `*` is `NoContraction`.
fn contracts(ctx: &Context) -> bool {
    ctx.backend() == unigpu::Backend::Vulkan
        && common::detail(ctx, "fma f32").is_some_and(|v| v == "fused")
        && !common::detail(ctx, "float contraction").is_some_and(|v| v.starts_with("forbidden"))
}

fn edge_i32(rng: &mut StdRng) -> i32 {
    match rng.random_range(0..10) {
        0 => *[i32::MIN, i32::MAX, 0, -1, 1, 31, 32, 33]
            .get(rng.random_range(0..8))
            .unwrap(),
        1..=3 => rng.random_range(-40..40),
        _ => rng.random(),
    }
}

fn edge_u32(rng: &mut StdRng) -> u32 {
    match rng.random_range(0..10) {
        0 => *[0, 1, u32::MAX, 1 << 31, 31, 32, 33]
            .get(rng.random_range(0..7))
            .unwrap(),
        1..=3 => rng.random_range(0..80),
        _ => rng.random(),
    }
}

/// Floats from 1e-3 to 1e3 in magnitude, zeros of both signs, and now and
/// then an infinity or a NaN: no subnormals, which a Vulkan driver may
/// flush (lavapipe does), and which random expressions of this depth do
/// not reach from these magnitudes.
fn edge_f32(rng: &mut StdRng) -> f32 {
    match rng.random_range(0..40) {
        0 => f32::NAN,
        1 => f32::INFINITY,
        2 => -0.0,
        3 | 4 => 0.0,
        5..=10 => rng.random_range(-8i32..8) as f32 * 0.25,
        _ => {
            let m = 10f32.powf(rng.random_range(-3.0..3.0));
            if rng.random() { m } else { -m }
        }
    }
}

fn same_f32(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

/// Runs `case` once on `ctx` with inputs from `seed`; the first
/// mismatching element of each output, if any.
fn check(ctx: &Context, case: &Case, seed: u64) -> Result<usize, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = rng.random_range(1..=1500);
    let ha: Vec<i32> = (0..rng.random_range(1..=700))
        .map(|_| edge_i32(&mut rng))
        .collect();
    let hb: Vec<u32> = (0..rng.random_range(1..=700))
        .map(|_| edge_u32(&mut rng))
        .collect();
    let hf: Vec<f32> = (0..rng.random_range(1..=700))
        .map(|_| edge_f32(&mut rng))
        .collect();
    let s = rng.random_range(-10..12);
    // Outputs start as a pattern, so an element never written shows.
    let (mut oi, mut ou, mut of) = (
        vec![0x5a5a_5a5ai32; n],
        vec![0xa5a5_a5a5u32; n],
        vec![-7.5f32; n],
    );
    let mut acc: Vec<u32> = (0..16).map(|_| edge_u32(&mut rng)).collect();
    let up = |e: unigpu::Error| format!("{}: {e}", case.name);
    let mut d = Device {
        n,
        a: ctx.upload(&ha).map_err(up)?,
        b: ctx.upload(&hb).map_err(up)?,
        f: ctx.upload(&hf).map_err(up)?,
        s,
        oi: ctx.upload(&oi).map_err(up)?,
        ou: ctx.upload(&ou).map_err(up)?,
        of: ctx.upload(&of).map_err(up)?,
        acc: ctx.upload(&acc).map_err(up)?,
    };
    (case.launch)(ctx, &mut d).map_err(up)?;
    let got = (
        d.oi.download().map_err(up)?,
        d.ou.download().map_err(up)?,
        d.of.download().map_err(up)?,
        d.acc.download().map_err(up)?,
    );
    let mut odd = vec![false; n];
    (case.reference)(
        &ha, &hb, &hf, s, &mut oi, &mut ou, &mut of, &mut acc, &mut odd,
    );
    // WGSL leaves a computation that meets an infinity, a NaN or a
    // subnormal indeterminate (lavapipe flushes subnormals, and its
    // fast-math folds `0 * inf`): on vulkan such elements are left out,
    // and with them the atomics' array. Everywhere else, every element.
    if ctx.backend() != unigpu::Backend::Vulkan {
        odd.fill(false);
    }
    let kept = |i: &usize| !odd[*i];
    let mut wrong = Vec::new();
    if let Some(i) = (0..n).filter(kept).find(|&i| got.0[i] != oi[i]) {
        wrong.push(format!("oi[{i}] = {} (want {})", got.0[i], oi[i]));
    }
    if let Some(i) = (0..n).filter(kept).find(|&i| got.1[i] != ou[i]) {
        wrong.push(format!("ou[{i}] = {} (want {})", got.1[i], ou[i]));
    }
    if let Some(i) = (0..n).filter(kept).find(|&i| !same_f32(got.2[i], of[i])) {
        wrong.push(format!("of[{i}] = {:e} (want {:e})", got.2[i], of[i]));
    }
    let any_odd = odd.iter().any(|o| *o);
    if let Some(i) = (0..16).filter(|_| !any_odd).find(|&i| got.3[i] != acc[i]) {
        wrong.push(format!("acc[{i}] = {} (want {})", got.3[i], acc[i]));
    }
    if wrong.is_empty() {
        Ok(odd.iter().filter(|o| !**o).count())
    } else {
        Err(format!(
            "{} (workgroup {}, {} invocations, |a| {}, |b| {}, |f| {}, s {s}): {}\n{}",
            case.name,
            case.workgroup,
            n,
            ha.len(),
            hb.len(),
            hf.len(),
            wrong.join(", "),
            case.source
        ))
    }
}

on_every_backend!(random_kernels_match_the_generators_reference, |ctx| {
    let data_seed: u64 = match std::env::var("UNIGPU_PROPTEST_DATA_SEED") {
        Ok(v) => v.parse().expect("UNIGPU_PROPTEST_DATA_SEED is a u64"),
        Err(_) => rand::rng().random(),
    };
    let skip_floats = contracts(ctx);
    // Kernels by name (`k7` or `k3,k7`), to look at a failure alone.
    let only = std::env::var("UNIGPU_PROPTEST_ONLY").ok();
    // Mesa 22.3's lavapipe (CI's, Debian 12) writes outside its heap
    // blocks while compiling some of these kernels (valgrind: an invalid
    // write inside vkCreateComputePipelines, with and without barriers,
    // seen 2026-11-27), and the process then dies at random (SIGABRT,
    // SIGSEGV) or goes on with a corrupted heap. No output of such a run
    // can be trusted, so on lavapipe the kernels run only when asked for
    // (UNIGPU_PROPTEST_LAVAPIPE=1; docs/testing.md); any other adapter
    // runs them all.
    let lavapipe = ctx.backend() == unigpu::Backend::Vulkan
        && ctx
            .device_info()
            .is_ok_and(|i| i.name.starts_with("llvmpipe"));
    if lavapipe && std::env::var_os("UNIGPU_PROPTEST_LAVAPIPE").is_none() {
        eprintln!(
            "lavapipe: the random kernels are not run (its compiler corrupts the heap on some; \
             UNIGPU_PROPTEST_LAVAPIPE=1 runs them)"
        );
        return;
    }
    // WGSL lets a Vulkan driver round `/` within 2.5 ulp and `sqrt` within
    // 1 (NVIDIA's does: docs/kernels.md's ulp table), and `powi` of a
    // negative power ends in a division: a float kernel using them has no
    // one answer there, so on vulkan only the float kernels without them
    // are checked (bit for bit: + - * round once each, contraction
    // forbidden).
    let wgsl_rounded = |case: &Case| {
        ctx.backend() == unigpu::Backend::Vulkan
            && case.floats
            && [" / ", "sqrt", "powi"]
                .iter()
                .any(|op| case.source.contains(op))
    };
    let mut failures = Vec::new();
    let (mut ran, mut elements, mut rounded) = (0, 0, 0);
    for (i, case) in generated::CASES.iter().enumerate() {
        if wgsl_rounded(case) {
            rounded += 1;
            continue;
        }
        if skip_floats && case.floats
            || only
                .as_ref()
                .is_some_and(|o| !o.split(',').any(|o| o == case.name))
        {
            continue;
        }
        if std::env::var_os("UNIGPU_PROPTEST_VERBOSE").is_some() {
            eprintln!("{}:\n{}\n{}", case.name, case.source, case.wgsl);
        }
        ran += 1;
        match check(ctx, case, data_seed.wrapping_add(i as u64)) {
            Ok(n) => elements += n,
            Err(e) => failures.push(e),
        }
    }
    let shared = generated::CASES.iter().filter(|c| c.shared).count();
    eprintln!(
        "{:?}: {ran} of {} random kernels ({shared} with shared memory and barriers) checked, \
         {elements} elements compared{}; UNIGPU_PROPTEST_SEED={} UNIGPU_PROPTEST_DATA_SEED={data_seed}",
        ctx.backend(),
        generated::CASES.len(),
        if skip_floats {
            " (the f32 ones left out: this adapter contracts a * b + c)".to_string()
        } else if rounded > 0 {
            format!(
                " ({rounded} f32 ones with /, sqrt or powi left out: WGSL rounds them within a bound)"
            )
        } else {
            String::new()
        },
        SEED,
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} random kernels differ from their reference on {:?} \
         (UNIGPU_PROPTEST_SEED={} UNIGPU_PROPTEST_DATA_SEED={data_seed}):\n{}",
        failures.len(),
        ctx.backend(),
        SEED,
        failures.join("\n")
    );
});
