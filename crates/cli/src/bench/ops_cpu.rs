//! The CPU backend's element-wise ops, reductions and matmul, as
//! `unigpu_cpu_<op>_<size>_ms` beside the `numpy_cpu_*` figures of
//! bench/anchors/numpy_ops.py (same sizes, f32, the same inputs, the same timing:
//! the median of `--reps` calls, 30 by default, after 3 warm-up calls).

use std::time::Instant;

use unigpu::{Context, GpuArray};

use super::{Better, Case, Env, Out, cpu_only, median};

pub const GROUP: &str = "ops_cpu";

/// Repetitions per figure; bench/anchors/numpy_ops.py uses the same count.
pub const CPU_REPS: u32 = 30;

/// Elements of the element-wise and reduction inputs.
const N: usize = 4 << 20;

const fn case(name: &'static str, run: fn(&Env, &mut Out) -> anyhow::Result<()>) -> Case {
    Case {
        name,
        group: GROUP,
        skip: cpu_only,
        run,
    }
}

pub const RELU: Case = case("cpu_relu", |env, out| {
    let (a, _, mut y) = inputs(&env.ctx)?;
    let ops = env.ctx.ops();
    let t = time(env, || Ok(ops.relu(&a, &mut y)?))?;
    out.figure(
        "unigpu_cpu_relu_4Mi_ms",
        "relu 4 Mi f32",
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
});

pub const ADD: Case = case("cpu_add", |env, out| {
    let (a, b, mut y) = inputs(&env.ctx)?;
    let ops = env.ctx.ops();
    let t = time(env, || Ok(ops.add(&a, &b, &mut y)?))?;
    out.figure(
        "unigpu_cpu_add_4Mi_ms",
        "add 4 Mi f32",
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
});

pub const SIGMOID: Case = case("cpu_sigmoid", |env, out| {
    let (a, _, mut y) = inputs(&env.ctx)?;
    let ops = env.ctx.ops();
    let t = time(env, || Ok(ops.sigmoid(&a, &mut y)?))?;
    out.figure(
        "unigpu_cpu_sigmoid_4Mi_ms",
        "sigmoid 4 Mi f32",
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
});

pub const SUM: Case = case("cpu_sum", |env, out| {
    let (a, _, _) = inputs(&env.ctx)?;
    let ops = env.ctx.ops();
    let t = time(env, || ops.sum(&a).map(drop).map_err(Into::into))?;
    out.figure(
        "unigpu_cpu_sum_4Mi_ms",
        "sum 4 Mi f32",
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
});

pub const MAX: Case = case("cpu_max", |env, out| {
    let (a, _, _) = inputs(&env.ctx)?;
    let ops = env.ctx.ops();
    let t = time(env, || ops.max(&a).map(drop).map_err(Into::into))?;
    out.figure(
        "unigpu_cpu_max_4Mi_ms",
        "max 4 Mi f32",
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
});

pub const DOT: Case = case("cpu_dot", |env, out| {
    let (a, b, _) = inputs(&env.ctx)?;
    let ops = env.ctx.ops();
    let t = time(env, || ops.dot(&a, &b).map(drop).map_err(Into::into))?;
    out.figure(
        "unigpu_cpu_dot_4Mi_ms",
        "dot 4 Mi f32",
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
});

pub const MATMUL_512: Case = case("cpu_matmul_512", |env, out| matmul(env, out, 512));

pub const MATMUL_1024: Case = case("cpu_matmul_1024", |env, out| matmul(env, out, 1024));

fn matmul(env: &Env, out: &mut Out, n: usize) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let (ha, hb) = host_inputs();
    let (a, b) = (ctx.upload(&ha[..n * n])?, ctx.upload(&hb[..n * n])?);
    let mut c = ctx.zeros::<f32>(n * n)?;
    let ops = ctx.ops();
    let t = time(env, || Ok(ops.matmul(&a, &b, &mut c, (n, n, n))?))?;
    out.figure(
        format!("unigpu_cpu_matmul_{n}_ms"),
        format!("matmul {n}³ f32"),
        "ms",
        Better::Lower,
        t,
    );
    Ok(())
}

/// Two signed inputs, so relu has both branches to take and max a sign to
/// see; numpy_ops.py builds the same ones.
fn host_inputs() -> (Vec<f32>, Vec<f32>) {
    let wave = |i: usize, k: usize| ((i * k) % 2001) as f32 * 1e-3 - 1.0;
    (
        (0..N).map(|i| wave(i, 7919)).collect(),
        (0..N).map(|i| wave(i, 104_729)).collect(),
    )
}

type Inputs = (GpuArray<f32>, GpuArray<f32>, GpuArray<f32>);

/// The inputs on `ctx`, and an output of the same length.
fn inputs(ctx: &Context) -> anyhow::Result<Inputs> {
    let (ha, hb) = host_inputs();
    Ok((ctx.upload(&ha)?, ctx.upload(&hb)?, ctx.zeros::<f32>(N)?))
}

/// The median wall time of `op` in ms, each call waited for (a reduction
/// returns its value; element-wise ops and matmul through `ctx.sync()`),
/// after three warm-up calls: the figure numpy's timing loop gives.
fn time(env: &Env, mut op: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    for _ in 0..3 {
        op()?;
        env.ctx.sync()?;
    }
    let mut times = Vec::with_capacity(env.reps);
    for _ in 0..env.reps {
        let t = Instant::now();
        op()?;
        env.ctx.sync()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}
