//! `unigpu bench`: the figures the benchmark report compares with the
//! anchors (numpy on the CPU; raw CUDA, torch and CuPy on the GPU machine).
//!
//! Every figure comes from a [`Case`] in [`CASES`]; a case is one function
//! in one group's file (launch.rs, compile.rs, transfer.rs, axpy.rs,
//! matmul.rs, kernels.rs, pipeline.rs, ops_cpu.rs, vulkan.rs) plus one line
//! in [`CASES`]. The anchor each
//! figure is compared with is one line in [`anchors::ANCHORS`].
//! report.rs renders the figures as a markdown table (stdout by default),
//! JSON (`--json`), an SVG plot (`--plot`) or the `key value` lines that
//! bench/runners/run_gpu.sh, bench/runners/run_cpu.sh and bench/runners/ratios.py read (`--lines`).

mod anchors;
mod array_ops;
mod axpy;
mod compile;
mod figure;
mod graph;
mod kernel_defs;
mod kernels;
mod launch;
mod matmul;
mod memory;
mod ops_cpu;
mod pipeline;
mod report;
mod side;
mod transfer;
mod vulkan;
pub mod workload;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context as _, ensure};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use unigpu::{Backend, Context};

pub use figure::{Better, Out};
use report::{Report, Skipped};

/// `unigpu bench`'s flags.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The backend to measure (exactly this one, or an error). Default: the
    /// one `Context::default()` picks (config file, UNIGPU_BACKEND, then
    /// torch → cuda → vulkan → cpu).
    #[arg(long, value_parser = parse_backend)]
    backend: Option<Backend>,
    /// Only the `compile` case (bench/runners/run_gpu.sh and the `compile_disk`
    /// case run it in a new process to time the disk cache).
    #[arg(long)]
    compile_only: bool,
    /// Only the CPU-backend op cases that bench/runners/run_cpu.sh sets beside numpy's.
    #[arg(long, conflicts_with = "compile_only")]
    cpu_ops_only: bool,
    /// Only these cases, by name (comma-separated; see the `case` column of
    /// `--list`).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// List the cases with their groups and exit.
    #[arg(long)]
    list: bool,
    /// Timed repetitions of each CPU-op and transfer figure (the median is
    /// reported). bench/anchors/numpy_ops.py times 30.
    #[arg(long, default_value_t = ops_cpu::CPU_REPS, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Print the old `key value` lines (what bench/runners/*.sh and ratios.py read)
    /// instead of the markdown table.
    #[arg(long)]
    lines: bool,
    /// Also write the markdown table to this file.
    #[arg(long, value_name = "PATH")]
    md: Option<PathBuf>,
    /// Write every figure as JSON to this file, or to stdout with `-`
    /// (instead of the markdown table).
    #[arg(long, value_name = "PATH|-")]
    json: Option<PathBuf>,
    /// Draw the ratios to the anchors as a horizontal bar chart (SVG).
    #[arg(long, value_name = "PATH.svg")]
    plot: Option<PathBuf>,
    /// Anchor figures measured in the same run: the `key value` lines that
    /// floor.cu, torch_cupy_baseline.py, torch_ops.py and numpy_ops.py
    /// print (repeatable).
    #[arg(long, value_name = "FILE")]
    anchors: Vec<PathBuf>,
    /// On the CPU backend, run bench/anchors/numpy_ops.py (built into this binary)
    /// after the cases, for the numpy anchors.
    #[arg(long)]
    numpy: bool,
    /// The Python that `--numpy` runs.
    #[arg(long, default_value = "python3", requires = "numpy")]
    python: PathBuf,
    /// No progress bar (it is hidden anyway when stderr is not a terminal).
    #[arg(long, short)]
    quiet: bool,
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
        .map_err(|()| format!("unknown backend {s:?}; one of {}", Backend::quoted_names()))
}

/// What a case gets to measure with.
#[derive(Debug)]
pub struct Env {
    pub ctx: Context,
    /// `--backend`, passed on to the processes a case starts.
    pub backend_arg: Option<Backend>,
    /// Timed repetitions for the CPU-op and transfer cases.
    pub reps: usize,
}

/// One benchmark case: a function that measures one or more figures.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Unique; `--only` takes these.
    pub name: &'static str,
    /// The group the table and JSON file it under (usually its file's name).
    pub group: &'static str,
    /// `Some(reason)` where the case does not apply to this context's backend.
    pub skip: fn(&Context) -> Option<String>,
    /// Measures, putting each figure (and any `key value` info) into `out`.
    pub run: fn(&Env, &mut Out) -> anyhow::Result<()>,
}

/// Every case, in the order they run. To add a figure, write the function in
/// its group's file and add one line here (docs/benchmarks.md, "Adding a
/// figure"). Graph replay comes first and launch second: graph replay runs
/// about 35% slower per kernel once a process has launched many kernels on
/// two streams (bench/probes/graph_replay.cu shows it in raw CUDA too), and
/// floor.cu measures its graph after launches on one stream only; launch is
/// measured before the compile cases load NVRTC and a dozen modules.
pub const CASES: &[Case] = &[
    graph::CASE,
    launch::CASE,
    memory::ALLOC_CASE,
    memory::EVENT_CASE,
    compile::CASE,
    compile::DISK_CASE,
    compile::MACRO_CASE,
    compile::MACRO_DISK_CASE,
    transfer::CASE,
    axpy::CASE,
    matmul::F32_CASE,
    matmul::BF16_CASE,
    matmul::BMM_F32_CASE,
    matmul::BMM_BF16_CASE,
    matmul::TRANSPOSED_CASE,
    kernels::SAXPY,
    kernels::SUM,
    kernels::MATMUL,
    pipeline::CASE,
    array_ops::CASE,
    ops_cpu::RELU,
    ops_cpu::ADD,
    ops_cpu::SIGMOID,
    ops_cpu::SUM,
    ops_cpu::MAX,
    ops_cpu::DOT,
    ops_cpu::MATMUL_512,
    ops_cpu::MATMUL_1024,
    vulkan::AXPY,
    vulkan::MATMUL,
    vulkan::DISPATCH,
    vulkan::TRANSFER,
];

/// For [`Case::skip`]: cases that run on every backend.
pub fn any_backend(_: &Context) -> Option<String> {
    None
}

/// For [`Case::skip`]: cases that measure a CUDA backend (cuda or torch:
/// NVRTC, the CUDA driver).
pub fn gpu_only(ctx: &Context) -> Option<String> {
    (!matches!(ctx.backend(), Backend::Cuda | Backend::Torch)).then(|| {
        format!(
            "measures a CUDA backend (cuda or torch); this run is on {}",
            ctx.backend()
        )
    })
}

/// For [`Case::skip`]: cases that measure the CPU backend.
pub fn cpu_only(ctx: &Context) -> Option<String> {
    (ctx.backend() != Backend::Cpu)
        .then(|| format!("measures the CPU backend; this run is on {}", ctx.backend()))
}

/// The median of `v` (the upper one of an even count); NaN for none.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn selected(args: &BenchArgs) -> anyhow::Result<Vec<&'static Case>> {
    for name in &args.only {
        ensure!(
            CASES.iter().any(|c| c.name == name),
            "--only: no case is called {name:?} (`unigpu bench --list` lists them)"
        );
    }
    Ok(CASES
        .iter()
        .filter(|c| !args.compile_only || c.name == compile::CASE.name)
        .filter(|c| {
            !args.cpu_ops_only || c.group == ops_cpu::GROUP || c.group == array_ops::CASE.group
        })
        .filter(|c| args.only.is_empty() || args.only.iter().any(|n| n == c.name))
        .collect())
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.list {
        println!("| case | group |\n|---|---|");
        for c in CASES {
            println!("| {} | {} |", c.name, c.group);
        }
        return Ok(());
    }
    let json_to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    ensure!(
        !(args.lines && json_to_stdout),
        "--lines and --json - both want stdout; give --json a file"
    );
    let cases = selected(&args)?;
    ensure!(
        !cases.is_empty(),
        "these flags select no case (`unigpu bench --list` lists them)"
    );
    // Read the anchor files first, so a wrong path fails before the run.
    let mut anchor_values = anchors::Values::default();
    for path in &args.anchors {
        anchor_values.read_file(path)?;
    }
    let ctx = match args.backend {
        Some(b) => Context::new(b, 0),
        None => Context::default(),
    }
    .context("no context could be created for the benchmark")?;
    let backend = ctx.backend();
    let device = ctx.device_name().context("reading the device's name")?;
    if args.cpu_ops_only {
        ensure!(
            backend == Backend::Cpu,
            "--cpu-ops-only measures the CPU backend, but the context is on {backend}"
        );
    }
    let numpy = args.numpy && backend == Backend::Cpu;
    let env = Env {
        ctx,
        backend_arg: args.backend,
        reps: args.reps as usize,
    };

    let bar = progress_bar(args.quiet, cases.len() + usize::from(numpy));
    let mut out = Out::default();
    let mut skipped = Vec::new();
    for case in &cases {
        bar.set_message(case.name);
        if let Some(reason) = (case.skip)(&env.ctx) {
            skipped.push(Skipped {
                case: case.name.into(),
                group: case.group.into(),
                reason,
            });
        } else {
            out.group = case.group;
            (case.run)(&env, &mut out)
                .with_context(|| format!("bench case {:?} ({} backend)", case.name, backend))?;
        }
        bar.inc(1);
    }
    if args.numpy && !numpy {
        anchor_values.note(format!(
            "numpy: not run (the numpy anchors are for the CPU backend; this run is on {backend})"
        ));
    }
    if numpy {
        bar.set_message("numpy_ops.py");
        anchor_values.run_numpy(&args.python, env.reps);
        bar.inc(1);
    }
    bar.finish_and_clear();

    let report = Report {
        date: report::today(),
        backend: backend.name().into(),
        device,
        anchor_sources: anchor_values.sources.clone(),
        figures: anchors::attach(&out.measures, backend, &anchor_values),
        skipped,
        info: out.info.clone(),
        lines: out.lines.clone(),
    };
    emit(&args, &report)
}

fn progress_bar(quiet: bool, len: usize) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::hidden());
    if !quiet && std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} cases  {msg}") {
            bar.set_style(style);
        }
    }
    bar
}

fn emit(args: &BenchArgs, report: &Report) -> anyhow::Result<()> {
    let markdown = report.markdown();
    let mut stdout = std::io::stdout().lock();
    if let Some(path) = &args.md {
        std::fs::write(path, &markdown)
            .with_context(|| format!("writing the markdown table to {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        report
            .plot(path)
            .with_context(|| format!("drawing the plot to {}", path.display()))?;
    }
    let mut stdout_taken = false;
    if let Some(path) = &args.json {
        let json = report.json()?;
        if path.as_os_str() == "-" {
            writeln!(stdout, "{json}").context("writing the JSON to stdout")?;
            stdout_taken = true;
        } else {
            std::fs::write(path, json + "\n")
                .with_context(|| format!("writing the JSON to {}", path.display()))?;
        }
    }
    if args.lines {
        write!(stdout, "{}", report.lines()).context("writing to stdout")?;
    } else if !stdout_taken {
        write!(stdout, "{markdown}").context("writing to stdout")?;
    }
    Ok(())
}
