//! What the steps found, counted per op kind, and the failures in detail.

use std::collections::BTreeMap;

use serde::Serialize;

use super::steps::{Mismatch, OpKind, Outcome};

/// How many steps of one kind ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Ran, and every result matched the host's.
    pub passed: u64,
    /// Refused by the backend in a way its docs allow.
    pub unsupported: u64,
    pub mismatches: u64,
    /// Calls that should have worked and returned an error (or panicked).
    pub errors: u64,
}

impl Counts {
    pub fn failed(&self) -> u64 {
        self.mismatches + self.errors
    }

    fn add(&mut self, other: &Counts) {
        self.passed += other.passed;
        self.unsupported += other.unsupported;
        self.mismatches += other.mismatches;
        self.errors += other.errors;
    }
}

/// What went wrong in one step.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Problem {
    Mismatch(Mismatch),
    /// An `Err` from a call that should have worked, or an error the
    /// final sync returned.
    Error {
        message: String,
    },
    /// A panic inside the step (a bug: unigpu promises errors, not panics).
    Panic {
        message: String,
    },
    /// A step still running long after the run's end.
    Hung {
        message: String,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Mismatch(m) => {
                write!(f, "mismatch in {} ({}): {}", m.what, m.sizes, m.difference)
            }
            Problem::Error { message } => write!(f, "error: {message}"),
            Problem::Panic { message } => write!(f, "panic: {message}"),
            Problem::Hung { message } => write!(f, "hung: {message}"),
        }
    }
}

/// One failed step, with what it takes to replay it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub backend: String,
    /// `None`: outside any step (a sync after the warm-up or the run, a
    /// worker's thread).
    pub kind: Option<OpKind>,
    /// 0: the warm-up before the timed run; 1..=threads: the workers.
    pub worker: usize,
    /// The step's index in its worker's sequence.
    pub step: u64,
    /// The seed the step drew its sizes, types and values from.
    pub step_seed: u64,
    pub problem: Problem,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            Some(kind) => write!(
                f,
                "{} {kind} (worker {}, step {}, step seed {:#018x}): {}",
                self.backend, self.worker, self.step, self.step_seed, self.problem
            ),
            None => write!(f, "{} (outside any step): {}", self.backend, self.problem),
        }
    }
}

/// Failures kept in detail per tally; the counts keep the rest.
const KEPT_FAILURES: usize = 50;

/// Everything one worker (or one backend, merged) found.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub counts: BTreeMap<OpKind, Counts>,
    /// The first reason each kind was refused for.
    pub unsupported_reasons: BTreeMap<OpKind, String>,
    pub failures: Vec<Failure>,
    /// Failures beyond those kept in detail.
    pub failures_dropped: u64,
    /// Errors outside any step (a final sync's, a worker thread's).
    pub outside_errors: u64,
}

/// How one step ended, for the tally.
#[derive(Debug)]
pub enum Ended {
    Outcome(Outcome),
    Error(String),
    Panic(String),
}

impl Tally {
    /// Counts one step; a failed one is kept through `failure` (which
    /// fills in where it happened).
    pub fn record(&mut self, kind: OpKind, ended: Ended, failure: impl FnOnce(Problem) -> Failure) {
        let counts = self.counts.entry(kind).or_default();
        let problem = match ended {
            Ended::Outcome(Outcome::Passed) => {
                counts.passed += 1;
                return;
            }
            Ended::Outcome(Outcome::Unsupported(reason)) => {
                counts.unsupported += 1;
                self.unsupported_reasons.entry(kind).or_insert(reason);
                return;
            }
            Ended::Outcome(Outcome::Mismatch(m)) => {
                counts.mismatches += 1;
                Problem::Mismatch(m)
            }
            Ended::Error(message) => {
                counts.errors += 1;
                Problem::Error { message }
            }
            Ended::Panic(message) => {
                counts.errors += 1;
                Problem::Panic { message }
            }
        };
        self.keep(failure(problem));
    }

    /// Keeps a failure found outside the step loop (a sync's error, a
    /// hung worker); it counts as an error of its kind, if it has one.
    pub fn record_failure(&mut self, failure: Failure) {
        match failure.kind {
            Some(kind) => self.counts.entry(kind).or_default().errors += 1,
            None => self.outside_errors += 1,
        }
        self.keep(failure);
    }

    fn keep(&mut self, failure: Failure) {
        if self.failures.len() < KEPT_FAILURES {
            self.failures.push(failure);
        } else {
            self.failures_dropped += 1;
        }
    }

    pub fn merge(&mut self, other: Tally) {
        for (kind, counts) in &other.counts {
            self.counts.entry(*kind).or_default().add(counts);
        }
        for (kind, reason) in other.unsupported_reasons {
            self.unsupported_reasons.entry(kind).or_insert(reason);
        }
        let room = (KEPT_FAILURES * 4).saturating_sub(self.failures.len());
        let extra = other.failures.len().saturating_sub(room) as u64;
        self.failures.extend(other.failures.into_iter().take(room));
        self.failures_dropped += other.failures_dropped + extra;
        self.outside_errors += other.outside_errors;
    }

    /// Every step's counts, and the errors outside any step.
    pub fn total(&self) -> Counts {
        let mut all = Counts {
            errors: self.outside_errors,
            ..Counts::default()
        };
        for c in self.counts.values() {
            all.add(c);
        }
        all
    }
}
