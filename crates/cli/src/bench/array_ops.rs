//! Issue 28's ops (item 7): every element-wise op, the reductions over an
//! axis, softmax and the normal generator, f32, as bandwidth (GB/s of the
//! bytes the op must move) on a GPU and as time on the CPU, beside the
//! same op at the same size from torch (bench/anchors/torch_ops.py,
//! `torch_op_<op>_f32_GBps`) or numpy (bench/anchors/numpy_ops.py,
//! `numpy_cpu_op_<op>_ms`). Our figures are `unigpu_op_<op>_f32_GBps` and
//! `unigpu_cpu_op_<op>_ms`; anchors.rs pairs the two families by name.

use std::time::Instant;

use anyhow::ensure;
use unigpu::random::Generator;
use unigpu::{Backend, Context, GpuArray, Ops};

use super::{Better, Case, Env, Out, any_backend, median};

pub const CASE: Case = Case {
    name: "array_ops",
    group: "array_ops",
    skip: any_backend,
    run: run_all,
};

/// GPU: 2^24 f32 (64 MiB an operand), as torch_ops.py; the CPU: 4 Mi, as
/// numpy_ops.py (and ops_cpu.rs).
const GPU_N: usize = 1 << 24;
const CPU_N: usize = 4 << 20;
/// Rows of the reductions' and softmax's input: `n / ROW` rows of `ROW`.
const ROW: usize = 1024;
/// Timed calls a GPU figure averages over (after one warm-up call).
const GPU_REPS: usize = 20;

/// What an op reads and writes, in bytes an element.
#[derive(Clone, Copy)]
struct Traffic(usize);

/// The operands: `a`, `b` in [0.5, 1.5) (so log, sqrt and pow are finite),
/// their `lt` mask, an output, and the 2-D view of `a` the row ops take.
struct Inputs {
    a: GpuArray<f32>,
    b: GpuArray<f32>,
    mask: GpuArray<u8>,
    y: GpuArray<f32>,
}

fn run_all(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let cpu = ctx.backend() == Backend::Cpu;
    let n = if cpu { CPU_N } else { GPU_N };
    let ha: Vec<f32> = (0..n)
        .map(|i| 0.5 + ((i * 7919) % 2001) as f32 * 5e-4)
        .collect();
    let hb: Vec<f32> = (0..n)
        .map(|i| 0.5 + ((i * 104_729) % 2001) as f32 * 5e-4)
        .collect();
    let mut inputs = Inputs {
        a: ctx.upload(&ha)?,
        b: ctx.upload(&hb)?,
        mask: ctx.zeros::<u8>(n)?,
        y: ctx.zeros::<f32>(n)?,
    };
    let ops = ctx.ops();
    ops.lt(&inputs.a, &inputs.b, &mut inputs.mask)?;
    // One check that the ops compute what they name, so a figure is never
    // of a wrong result: exp's first elements against the host's.
    ops.exp(&inputs.a, &mut inputs.y)?;
    let got = inputs.y.download()?;
    ensure!(
        got.iter()
            .zip(&ha)
            .take(4096)
            .all(|(g, x)| (g - x.exp()).abs() <= 1e-5 * x.exp()),
        "exp gave a wrong result on {}",
        ctx.backend()
    );
    out.info(
        if cpu {
            "unigpu_cpu_op_n"
        } else {
            "unigpu_op_n"
        },
        n,
    );
    let unary = Traffic(8);
    let binary = Traffic(12);
    type OpFn = fn(&Ops<'_>, &mut Inputs) -> unigpu::Result<()>;
    #[rustfmt::skip]
    let table: &[(&str, Traffic, OpFn)] = &[
        ("neg", unary, |o, i| o.neg(&i.a, &mut i.y)),
        ("abs", unary, |o, i| o.abs(&i.a, &mut i.y)),
        ("floor", unary, |o, i| o.floor(&i.a, &mut i.y)),
        ("ceil", unary, |o, i| o.ceil(&i.a, &mut i.y)),
        ("round", unary, |o, i| o.round(&i.a, &mut i.y)),
        ("clamp", unary, |o, i| o.clamp(&i.a, 0.75, 1.25, &mut i.y)),
        ("exp", unary, |o, i| o.exp(&i.a, &mut i.y)),
        ("log", unary, |o, i| o.log(&i.a, &mut i.y)),
        ("sqrt", unary, |o, i| o.sqrt(&i.a, &mut i.y)),
        ("rsqrt", unary, |o, i| o.rsqrt(&i.a, &mut i.y)),
        ("sin", unary, |o, i| o.sin(&i.a, &mut i.y)),
        ("cos", unary, |o, i| o.cos(&i.a, &mut i.y)),
        ("tanh", unary, |o, i| o.tanh(&i.a, &mut i.y)),
        ("sigmoid", unary, |o, i| o.sigmoid(&i.a, &mut i.y)),
        ("relu", unary, |o, i| o.relu(&i.a, &mut i.y)),
        ("gelu", unary, |o, i| o.gelu(&i.a, &mut i.y)),
        ("silu", unary, |o, i| o.silu(&i.a, &mut i.y)),
        ("pow_scalar", unary, |o, i| o.pow_scalar(&i.a, 2.5, &mut i.y)),
        ("add", binary, |o, i| o.add(&i.a, &i.b, &mut i.y)),
        ("sub", binary, |o, i| o.sub(&i.a, &i.b, &mut i.y)),
        ("mul", binary, |o, i| o.mul(&i.a, &i.b, &mut i.y)),
        ("div", binary, |o, i| o.div(&i.a, &i.b, &mut i.y)),
        ("minimum", binary, |o, i| o.minimum(&i.a, &i.b, &mut i.y)),
        ("maximum", binary, |o, i| o.maximum(&i.a, &i.b, &mut i.y)),
        ("pow", binary, |o, i| o.pow(&i.a, &i.b, &mut i.y)),
        // Reads two f32, writes a u8.
        ("lt", Traffic(9), |o, i| o.lt(&i.a, &i.b, &mut i.mask)),
        // Reads a u8 and two f32, writes an f32.
        ("where", Traffic(13), |o, i| o.where_(&i.mask, &i.a, &i.b, &mut i.y)),
        // The row ops read every element once (and softmax writes each).
        ("sum_rows", Traffic(4), |o, i| o.sum_axes(&rows(&i.a), Some(&[1]), false).map(drop)),
        ("mean_rows", Traffic(4), |o, i| o.mean_axes(&rows(&i.a), Some(&[1]), false).map(drop)),
        ("max_rows", Traffic(4), |o, i| o.max_axes(&rows(&i.a), Some(&[1]), false).map(drop)),
        ("argmax_rows", Traffic(4), |o, i| o.argmax(&rows(&i.a), Some(1), false).map(drop)),
        ("softmax_rows", unary, |o, i| o.softmax(&rows(&i.a), 1, &mut rows_mut(&mut i.y))),
        ("log_softmax_rows", unary, |o, i| o.log_softmax(&rows(&i.a), 1, &mut rows_mut(&mut i.y))),
    ];
    for &(name, Traffic(bytes), op) in table {
        let measure = || op(&ops, &mut inputs);
        figure(env, out, name, bytes * n, measure_op(env, measure)?);
    }
    // The normal generator writes n f32 (torch.randn's figure).
    let mut generator = Generator::new(7);
    let y = &mut inputs.y;
    let t = measure_op(env, || generator.normal_into(y, 0.0, 1.0))?;
    figure(env, out, "randn", 4 * n, t);
    Ok(())
}

/// `a` as `n / ROW` rows of `ROW`: a view, no copy.
fn rows(a: &GpuArray<f32>) -> unigpu::ArrayView<'_, f32> {
    a.view()
        .reshape([a.len() / ROW, ROW])
        .expect("n is a multiple of ROW")
}

fn rows_mut(y: &mut GpuArray<f32>) -> unigpu::ArrayViewMut<'_, f32> {
    let n = y.len();
    y.view_mut()
        .reshape([n / ROW, ROW])
        .expect("n is a multiple of ROW")
}

/// The time of one call in ms: on a GPU the mean of [`GPU_REPS`] calls
/// between timed events (as axpy.rs and torch_ops.py), on the CPU the
/// median of `--reps` calls each waited for (as ops_cpu.rs and
/// numpy_ops.py); one warm-up call first (it builds the kernel).
fn measure_op(env: &Env, mut op: impl FnMut() -> unigpu::Result<()>) -> anyhow::Result<f64> {
    let ctx: &Context = &env.ctx;
    op()?;
    ctx.sync()?;
    if ctx.backend() == Backend::Cpu {
        let mut times = Vec::with_capacity(env.reps);
        for _ in 0..env.reps {
            let t = Instant::now();
            op()?;
            ctx.sync()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        return Ok(median(times));
    }
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..GPU_REPS {
        op()?;
    }
    let end = s.record_timed()?;
    Ok(f64::from(start.elapsed_ms(&end)?) / GPU_REPS as f64)
}

fn figure(env: &Env, out: &mut Out, name: &str, bytes: usize, ms: f64) {
    if env.ctx.backend() == Backend::Cpu {
        out.figure(
            format!("unigpu_cpu_op_{name}_ms"),
            format!("{name} 4 Mi f32"),
            "ms",
            Better::Lower,
            ms,
        );
    } else {
        out.figure(
            format!("unigpu_op_{name}_f32_GBps"),
            format!("{name} f32 2^24"),
            "GB/s",
            Better::Higher,
            bytes as f64 / (ms * 1e-3) / 1e9,
        );
    }
}
