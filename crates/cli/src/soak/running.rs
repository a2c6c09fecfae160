//! The workers of every backend while they run: started together,
//! watched (progress, resident memory samples), joined; a worker still in
//! its step long after the end is reported as hung.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::SoakArgs;
use super::memory::RssTrace;
use super::progress::{self, LOG_EVERY};
use super::steps::OpKind;
use super::tally::{Failure, Problem, Tally};
use super::target::Target;
use super::worker::{self, CurrentStep, Live, Plan};

/// How long after the end a step may still be running before its worker
/// counts as hung: the slowest step (a 1 Mi-element op on lavapipe, or in
/// a debug build) takes seconds, not minutes.
pub const HANG_GRACE: Duration = Duration::from_secs(120);
/// How often resident memory is sampled.
const RSS_EVERY: Duration = Duration::from_millis(500);

/// One backend's workers while they run.
pub struct Running {
    pub target: Arc<Target>,
    /// The counters the progress display reads.
    pub live: Arc<Live>,
    workers: Vec<Worker>,
    /// The warm-up's, then every joined worker's, findings.
    pub tally: Tally,
}

/// A worker's thread, and the step it is in.
struct Worker {
    number: usize,
    current: Arc<Mutex<Option<CurrentStep>>>,
    thread: JoinHandle<Tally>,
}

impl Running {
    pub fn new(target: Target, warm_up: Tally) -> Running {
        Running {
            target: Arc::new(target),
            live: Arc::default(),
            workers: Vec::new(),
            tally: warm_up,
        }
    }

    /// Starts `threads` workers on this backend.
    pub fn start(
        &mut self,
        threads: usize,
        kinds: &Arc<[OpKind]>,
        seed: u64,
        deadline: Instant,
        args: &SoakArgs,
    ) -> anyhow::Result<()> {
        for w in 1..=threads {
            let current = Arc::new(Mutex::new(None));
            let plan = Plan {
                target: Arc::clone(&self.target),
                worker: w,
                seed,
                kinds: Arc::clone(kinds),
                deadline,
                max_steps: args.steps,
                inject_mismatch: args.inject_mismatch,
                live: Arc::clone(&self.live),
                current: Arc::clone(&current),
            };
            let handle = std::thread::Builder::new()
                .name(format!("soak-{}-{w}", self.target.backend))
                .spawn(move || worker::run(plan))
                .context("starting a worker thread")?;
            self.workers.push(Worker {
                number: w,
                current,
                thread: handle,
            });
        }
        Ok(())
    }

    /// Joins the workers that finished, merging their tallies; a worker
    /// still in a step is reported as hung (and left). True if one was.
    pub fn join(&mut self) -> bool {
        let mut hung = false;
        for Worker {
            number: w,
            current,
            thread: handle,
        } in std::mem::take(&mut self.workers)
        {
            if !handle.is_finished() {
                hung = true;
                let step = *current.lock().unwrap_or_else(|e| e.into_inner());
                self.tally.record_failure(Failure {
                    backend: self.target.backend.to_string(),
                    kind: step.map(|s| s.kind),
                    worker: w,
                    step: step.map_or(0, |s| s.index),
                    step_seed: step.map_or(0, |s| s.seed),
                    problem: Problem::Hung {
                        message: format!(
                            "the step was still running {} s after the run's end",
                            HANG_GRACE.as_secs()
                        ),
                    },
                });
                continue;
            }
            match handle.join() {
                Ok(tally) => self.tally.merge(tally),
                // run_step catches a step's panics; this is one outside.
                Err(_) => self.tally.record_failure(Failure {
                    backend: self.target.backend.to_string(),
                    kind: None,
                    worker: w,
                    step: 0,
                    step_seed: 0,
                    problem: Problem::Panic {
                        message: format!("worker {w} panicked outside a step"),
                    },
                }),
            }
        }
        hung
    }

    pub fn all_finished(&self) -> bool {
        self.workers.iter().all(|w| w.thread.is_finished())
    }
}

/// Waits for the workers, drawing progress and sampling resident memory,
/// until all are done or the grace after the deadline is over.
pub fn watch(runs: &[Running], rss: &mut RssTrace, start: Instant, seconds: f64, quiet: bool) {
    let bar = progress::bar(quiet, seconds);
    let on_terminal = !bar.is_hidden();
    let end = start + Duration::from_secs_f64(seconds) + HANG_GRACE;
    let mut last_rss = rss.sample();
    let (mut next_rss, mut next_log) = (start + RSS_EVERY, start + LOG_EVERY);
    loop {
        let done = runs.iter().all(Running::all_finished);
        if done || Instant::now() >= end {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        let now = Instant::now();
        if now >= next_rss {
            last_rss = rss.sample().or(last_rss);
            next_rss += RSS_EVERY;
        }
        let elapsed = now.duration_since(start).as_secs_f64();
        let status = progress::status_line(runs, last_rss, elapsed > seconds);
        if on_terminal {
            bar.set_position(elapsed.min(seconds) as u64);
            bar.set_message(status);
        } else if !quiet && now >= next_log {
            eprintln!("[{elapsed:.0} s] {status}");
            next_log += LOG_EVERY;
        }
    }
    rss.sample();
    bar.finish_and_clear();
}
