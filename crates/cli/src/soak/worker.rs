//! One worker thread: random steps on one backend until the run ends,
//! each step seeded from the worker's generator so that a run's seed
//! replays every worker's sequence.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::steps::{self, OpKind, Outcome, Step};
use super::tally::{Ended, Failure, Tally};
use super::target::Target;

/// Counters the progress display reads while the workers run.
#[derive(Debug, Default)]
pub struct Live {
    pub steps: AtomicU64,
    pub failures: AtomicU64,
}

/// What one worker runs.
#[derive(Debug)]
pub struct Plan {
    pub target: Arc<Target>,
    /// 1..=threads (0 is the warm-up).
    pub worker: usize,
    /// The run's seed; the worker's own is derived from it, the backend
    /// and the worker number.
    pub seed: u64,
    pub kinds: Arc<[OpKind]>,
    pub deadline: Instant,
    /// Stop after this many steps (`--steps`), if the deadline is not first.
    pub max_steps: Option<u64>,
    pub inject_mismatch: bool,
    pub live: Arc<Live>,
    /// The step being run now, for the report of a worker that hangs.
    pub current: Arc<Mutex<Option<CurrentStep>>>,
}

/// The step a worker is in.
#[derive(Debug, Clone, Copy)]
pub struct CurrentStep {
    pub kind: OpKind,
    pub index: u64,
    pub seed: u64,
}

/// The generator of `worker` on `backend` for the run seeded `seed`:
/// SplitMix64 of the three, so that neighbouring workers' sequences are
/// unrelated.
pub fn worker_seed(seed: u64, backend: unigpu::Backend, worker: usize) -> u64 {
    let backend_index = unigpu::Backend::ALL
        .iter()
        .position(|b| *b == backend)
        .unwrap_or(0) as u64;
    let mut z = seed ^ (backend_index << 56) ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn run(plan: Plan) -> Tally {
    let mut rng = StdRng::seed_from_u64(worker_seed(plan.seed, plan.target.backend, plan.worker));
    let mut tally = Tally::default();
    let mut inject = plan.inject_mismatch;
    let mut index = 0u64;
    while Instant::now() < plan.deadline && plan.max_steps.is_none_or(|max| index < max) {
        let kind = plan.kinds[rng.random_range(0..plan.kinds.len())];
        let step_seed: u64 = rng.random();
        set(
            &plan.current,
            Some(CurrentStep {
                kind,
                index,
                seed: step_seed,
            }),
        );
        let (ended, injected) = run_step(&plan.target, kind, step_seed, inject);
        inject &= !injected;
        let failed = !matches!(
            ended,
            Ended::Outcome(Outcome::Passed | Outcome::Unsupported(_))
        );
        tally.record(kind, ended, |problem| Failure {
            backend: plan.target.backend.to_string(),
            kind: Some(kind),
            worker: plan.worker,
            step: index,
            step_seed,
            problem,
        });
        plan.live.steps.fetch_add(1, Ordering::Relaxed);
        if failed {
            plan.live.failures.fetch_add(1, Ordering::Relaxed);
        }
        index += 1;
    }
    set(&plan.current, None);
    tally
}

/// One step of every kind in `kinds`, in order, before the timed run:
/// the one-time costs (kernel compiles, the ops' modules, thread pools)
/// are paid before the "before" memory figures are taken.
pub fn warm_up(target: &Target, seed: u64, kinds: &[OpKind]) -> Tally {
    let mut rng = StdRng::seed_from_u64(worker_seed(seed, target.backend, 0));
    let mut tally = Tally::default();
    for (index, &kind) in kinds.iter().enumerate() {
        let step_seed: u64 = rng.random();
        let (ended, _) = run_step(target, kind, step_seed, false);
        tally.record(kind, ended, |problem| Failure {
            backend: target.backend.to_string(),
            kind: Some(kind),
            worker: 0,
            step: index as u64,
            step_seed,
            problem,
        });
    }
    tally
}

/// Runs one step, turning a panic into a failure rather than the end of
/// the worker; also says whether the step corrupted a result on purpose.
fn run_step(target: &Target, kind: OpKind, step_seed: u64, inject: bool) -> (Ended, bool) {
    let mut step = Step {
        target,
        rng: StdRng::seed_from_u64(step_seed),
        inject_mismatch: inject,
        injected: false,
    };
    let result = catch_unwind(AssertUnwindSafe(|| steps::run(kind, &mut step)));
    let ended = match result {
        Ok(Ok(outcome)) => Ended::Outcome(outcome),
        Ok(Err(e)) => Ended::Error(e.to_string()),
        Err(panic) => Ended::Panic(panic_text(panic.as_ref())),
    };
    (ended, step.injected)
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

fn set(current: &Mutex<Option<CurrentStep>>, step: Option<CurrentStep>) {
    // A poisoned lock only means another thread panicked holding it; the
    // value is still ours to replace.
    *current.lock().unwrap_or_else(|e| e.into_inner()) = step;
}
