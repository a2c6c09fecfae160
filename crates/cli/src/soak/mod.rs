//! `unigpu soak`: random mixes of uploads, built-in ops, user kernels,
//! streams and events, graph replays, pipelines and DLPack exchanges from
//! several threads on every backend that opens, for a bounded time; every
//! result checked against the host, memory read before, during and after.
//! Issue 15 item 6; docs/reliability.md ("Soak") says what it promises.
//!
//! - `steps/`: one kind of work per file, each returning what it found.
//! - `worker.rs`: a thread's loop of random, seeded steps; `running.rs`
//!   starts, watches and joins every backend's workers; `progress.rs`
//!   shows it.
//! - `target.rs`: a backend's context, kernels and rounding facts.
//! - `check.rs`, `tolerance.rs`, `values.rs`: comparisons, bounds, inputs.
//! - `memory.rs`: allocator, driver and resident memory figures.
//! - `tally.rs`, `report.rs`: counts, failures, the table and JSON.

mod check;
mod memory;
mod progress;
mod report;
mod running;
mod steps;
mod tally;
mod target;
mod tolerance;
mod values;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rand::Rng;
use unigpu::Backend;

use memory::RssTrace;
use report::{BackendReport, Summary};
use running::Running;
use steps::OpKind;
use tally::{Failure, Problem};
use target::Target;

/// `unigpu soak`'s flags.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// How long the workers run, in seconds.
    #[arg(long, default_value_t = 60.0, value_parser = parse_seconds)]
    seconds: f64,
    /// Worker threads per backend.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// cpu, cuda, torch, vulkan (comma-separated), or all. Every backend
    /// named must open. With all, a backend this machine has no hardware
    /// for is skipped (with the reason), and one it has hardware for (a
    /// CUDA device for cuda, and for torch in a torch build; a Vulkan
    /// adapter that is not a software one for vulkan) fails the run if it
    /// does not open.
    #[arg(long, default_value = "all", value_parser = parse_backends)]
    backend: Backends,
    /// Backends that must open (comma-separated), whatever this machine
    /// seems to have: the run fails, naming each one and why it did not
    /// open, before any work. E.g. --require cuda,vulkan on a GPU machine.
    #[arg(long, value_name = "BACKENDS", value_delimiter = ',', value_parser = parse_backend)]
    require: Vec<Backend>,
    /// The run's seed (default: a random one, printed). Each worker's steps
    /// follow from it, the backend and the worker's number.
    #[arg(long)]
    seed: Option<u64>,
    /// Only these kinds of step (comma-separated; default: all of them).
    #[arg(long, value_delimiter = ',', value_parser = parse_kind)]
    ops: Vec<OpKind>,
    /// Stop each worker after this many steps (with the same seed and
    /// threads, a run then replays the same steps; --seconds still bounds it).
    #[arg(long)]
    steps: Option<u64>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Corrupt one element of one transfer per worker before checking it,
    /// to show that the checks catch a wrong result (the run must fail).
    #[arg(long, hide = true)]
    inject_mismatch: bool,
}

/// Which backends to soak.
#[derive(Debug, Clone)]
enum Backends {
    All,
    /// Named ones, each of which must open.
    Named(Vec<Backend>),
}

fn parse_backends(s: &str) -> Result<Backends, String> {
    if s == "all" {
        return Ok(Backends::All);
    }
    let mut named = Vec::new();
    for name in s.split(',') {
        let b = parse_backend(name).map_err(|e| format!("{e}, \"all\""))?;
        if !named.contains(&b) {
            named.push(b);
        }
    }
    Ok(Backends::Named(named))
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
        .map_err(|()| format!("unknown backend {s:?}; one of {}", Backend::quoted_names()))
}

fn parse_kind(s: &str) -> Result<OpKind, String> {
    OpKind::parse(s).ok_or_else(|| format!("unknown op kind {s:?}; one of {}", OpKind::names()))
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds in (0, 86400]")),
    }
}

/// Runs the soak and ends the process with its verdict's exit code, as
/// soon as the verdict, the error if any and the JSON are written.
///
/// Why not return to `main` and exit from there: `exit` runs the drivers'
/// teardown (`atexit` handlers and C++ static destructors of libcuda,
/// libtorch and the Vulkan driver), while the Vulkan devices unigpu keeps
/// for the process and their pollers are still there. On the 4 × H100
/// machine that teardown did not end: `PASSED` was printed after 60 s and
/// the process was still running at 150 s (issue 25; wgpu#8365 reports
/// the same deadlock of NVIDIA's Vulkan driver at exit). Nothing is left to
/// do at that point (every array and context is dropped, the output is
/// flushed, the JSON file is written and closed), and the kernel frees
/// the devices of a process that ends, so the soak ends without it.
pub fn main(args: SoakArgs) -> ! {
    let code = match run(args) {
        Ok(()) => 0,
        Err(e) => {
            // As `main` returning the error would print it.
            eprintln!("Error: {e:?}");
            1
        }
    };
    unigpu_vulkan_sys::exit_skipping_teardown(code)
}

fn run(args: SoakArgs) -> anyhow::Result<()> {
    if let Some(code) = memory::rerun_with_fixed_mmap_threshold()? {
        // The child ran the soak and printed everything; its verdict is ours.
        std::process::exit(code);
    }
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    let kinds: Arc<[OpKind]> = if args.ops.is_empty() {
        OpKind::ALL.into()
    } else {
        args.ops.clone().into()
    };
    let threads = usize::from(args.threads);
    println!(
        "unigpu soak: seed {seed}, {} s, threads a backend: {threads}, ops: {}",
        args.seconds,
        kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("  replay: unigpu soak --seed {seed} (same --backend, --threads and --ops)");
    println!("  {}", memory::allocator_note());

    let (targets, mut reports) = open_targets(&args.backend, &args.require)?;

    // Warm-up, then the "before" figures.
    let mut runs = Vec::new();
    for target in targets {
        let tally = worker::warm_up(&target, seed, &kinds);
        runs.push(Running::new(target, tally));
    }
    let mut before = Vec::new();
    for r in &mut runs {
        if let Some(e) = memory::settle(&r.target.ctx) {
            r.tally
                .record_failure(end_failure(&r.target, "warm-up sync", e));
        }
        before.push(memory::read(&r.target.ctx));
    }
    let rss_before = memory::rss();

    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.seconds);
    for r in &mut runs {
        r.start(threads, &kinds, seed, deadline, &args)?;
    }
    let mut rss = RssTrace::new(start);
    running::watch(&runs, &mut rss, start, args.seconds, args.quiet);
    let elapsed = start.elapsed().as_secs_f64();

    // Join the workers that finished; a worker still in its step is hung.
    let mut hung = false;
    for r in &mut runs {
        hung |= r.join();
    }

    // After: everything the workers made is dropped; sync and read.
    for (r, before) in runs.iter_mut().zip(before) {
        let after = if hung {
            None
        } else {
            if let Some(e) = memory::settle(&r.target.ctx) {
                r.tally
                    .record_failure(end_failure(&r.target, "final sync", e));
            }
            Some(memory::read(&r.target.ctx))
        };
        let in_use_returned = match (
            before.in_use.bytes(),
            after.as_ref().and_then(|a| a.in_use.bytes()),
        ) {
            (Some(b), Some(a)) => a == b,
            _ => true,
        };
        let steps = r.live.steps.load(std::sync::atomic::Ordering::Relaxed);
        reports.push(BackendReport {
            backend: r.target.backend.to_string(),
            skipped: None,
            device: r.target.ctx.device_name().ok(),
            kinds: BackendReport::rows(&r.tally),
            outside_errors: r.tally.outside_errors,
            total: r.tally.total(),
            steps,
            steps_per_second: steps as f64 / elapsed.max(1e-9),
            memory_before: Some(before),
            memory_after: after,
            in_use_returned,
        });
    }
    let rss_after = memory::rss();
    reports.sort_by_key(|r| backend_order(&r.backend));

    let rss_verdict = rss.verdict(elapsed);
    let mut failures = Vec::new();
    let mut failures_not_listed = 0;
    for r in runs {
        failures_not_listed += r.tally.failures_dropped;
        failures.extend(r.tally.failures);
    }
    let verdicts = report::verdicts(&reports, &rss_verdict, hung);
    let summary = Summary {
        passed: verdicts.is_empty(),
        verdicts,
        seed,
        seconds: args.seconds,
        elapsed_seconds: elapsed,
        threads,
        ops: kinds.to_vec(),
        backends: reports,
        rss_before,
        rss_after,
        rss: rss_verdict,
        rss_samples: rss.samples.clone(),
        failures,
        failures_not_listed,
    };
    print!("\n{}", summary.render());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("writing the summary to {}", path.display()))?;
    }
    if !summary.passed {
        bail!("soak failed (seed {seed}): {}", summary.verdicts.join("; "));
    }
    Ok(())
}

/// Opens every backend asked for: the targets, and a report for each one
/// skipped. A backend named in `--backend` or `--require` must open, and
/// with `--backend all` so must every backend this machine has hardware
/// for ([`unigpu::hardware_here`]): a GPU machine whose cuda or vulkan
/// does not open fails rather than pass on the CPU alone. Every backend is
/// tried before failing, so the message names all that did not open.
fn open_targets(
    which: &Backends,
    require: &[Backend],
) -> anyhow::Result<(Vec<Target>, Vec<BackendReport>)> {
    let backends: Vec<Backend> = match which {
        Backends::All => Backend::ALL.to_vec(),
        Backends::Named(named) => named.clone(),
    };
    if let Some(b) = require.iter().find(|b| !backends.contains(b)) {
        bail!("--require {b}: --backend does not include {b}, so it would not be soaked");
    }
    let (mut targets, mut skipped, mut not_opened) = (Vec::new(), Vec::new(), Vec::new());
    for backend in backends {
        match Target::open(backend) {
            Ok(t) => {
                let device = t.ctx.device_name().unwrap_or_else(|e| format!("({e})"));
                match &t.kernels {
                    Ok(_) => println!("  {backend}: {device}"),
                    Err(e) => println!("  {backend}: {device}; its kernels did not build: {e}"),
                }
                targets.push(t);
            }
            Err(e) => match must_open(which, require, backend) {
                Some(why) => {
                    println!("  {backend}: did not open ({e})");
                    not_opened.push(format!("{backend} ({why}) did not open: {e}"));
                }
                None => {
                    println!("  {backend}: skipped ({e})");
                    skipped.push(BackendReport::skipped(backend.name(), e.to_string()));
                }
            },
        }
    }
    if !not_opened.is_empty() {
        bail!(
            "{}; nothing was soaked (--backend names the backends to soak)",
            not_opened.join("; ")
        );
    }
    if targets.is_empty() {
        bail!("no backend opened, so nothing was soaked");
    }
    Ok((targets, skipped))
}

/// Why `backend` must open, or `None` where it may be skipped: only under
/// `--backend all`, not required, on a machine without its hardware.
fn must_open(which: &Backends, require: &[Backend], backend: Backend) -> Option<String> {
    if require.contains(&backend) {
        return Some("named by --require".into());
    }
    match which {
        Backends::Named(_) => Some("named by --backend".into()),
        Backends::All => unigpu::hardware_here(backend)
            .map(|hw| format!("--backend all, and this machine has {hw}")),
    }
}

/// An error a sync returned outside any step.
fn end_failure(target: &Target, when: &str, e: unigpu::Error) -> Failure {
    Failure {
        backend: target.backend.to_string(),
        kind: None,
        worker: 0,
        step: 0,
        step_seed: 0,
        problem: Problem::Error {
            message: format!("{when}: {e}"),
        },
    }
}

fn backend_order(name: &str) -> usize {
    Backend::ALL
        .iter()
        .position(|b| b.name() == name)
        .unwrap_or(usize::MAX)
}
