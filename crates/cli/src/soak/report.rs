//! The soak's summary: a table per backend and op kind, the memory
//! figures, the failures, and the same as JSON (`--json`).

use std::fmt::Write as _;

use serde::Serialize;

use super::memory::{DeviceMemory, RssVerdict, mib};
use super::steps::OpKind;
use super::tally::{Counts, Failure, Tally};

/// One op kind's row.
#[derive(Debug, Clone, Serialize)]
pub struct KindRow {
    pub kind: OpKind,
    #[serde(flatten)]
    pub counts: Counts,
    /// Why the backend refused it (the first reason seen).
    pub unsupported_reason: Option<String>,
}

/// One backend: skipped with a reason, or its rows and memory.
#[derive(Debug, Clone, Serialize)]
pub struct BackendReport {
    pub backend: String,
    /// Why it did not run (it did not open here).
    pub skipped: Option<String>,
    pub device: Option<String>,
    pub kinds: Vec<KindRow>,
    /// Errors outside any step (a sync after the warm-up or the run).
    pub outside_errors: u64,
    pub total: Counts,
    /// Steps of the timed run (the warm-up is counted in the rows only).
    pub steps: u64,
    pub steps_per_second: f64,
    pub memory_before: Option<DeviceMemory>,
    pub memory_after: Option<DeviceMemory>,
    /// The allocator hands out as many bytes after as before (where it
    /// has figures).
    pub in_use_returned: bool,
}

impl BackendReport {
    pub fn skipped(backend: &str, reason: String) -> BackendReport {
        BackendReport {
            backend: backend.into(),
            skipped: Some(reason),
            device: None,
            kinds: Vec::new(),
            outside_errors: 0,
            total: Counts::default(),
            steps: 0,
            steps_per_second: 0.0,
            memory_before: None,
            memory_after: None,
            in_use_returned: true,
        }
    }

    pub fn rows(tally: &Tally) -> Vec<KindRow> {
        tally
            .counts
            .iter()
            .map(|(kind, counts)| KindRow {
                kind: *kind,
                counts: *counts,
                unsupported_reason: tally.unsupported_reasons.get(kind).cloned(),
            })
            .collect()
    }
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub passed: bool,
    /// Why it failed, one line each; empty when it passed.
    pub verdicts: Vec<String>,
    pub seed: u64,
    pub seconds: f64,
    pub elapsed_seconds: f64,
    pub threads: usize,
    pub ops: Vec<OpKind>,
    pub backends: Vec<BackendReport>,
    pub rss_before: Option<u64>,
    pub rss_after: Option<u64>,
    pub rss: RssVerdict,
    pub rss_samples: Vec<(f64, u64)>,
    pub failures: Vec<Failure>,
    /// Failures counted but not kept in detail.
    pub failures_not_listed: u64,
}

/// Failures printed in full; the JSON has up to a few hundred.
const PRINTED_FAILURES: usize = 20;

impl Summary {
    /// The table, memory figures, failures and verdict, as printed.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| backend | op | passed | unsupported | mismatches | errors |\n|---|---|---:|---:|---:|---:|"
        );
        for b in &self.backends {
            if let Some(reason) = &b.skipped {
                let _ = writeln!(
                    out,
                    "| {} | skipped: {} | | | | |",
                    b.backend,
                    one_line(reason)
                );
                continue;
            }
            for row in &b.kinds {
                let c = row.counts;
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} |",
                    b.backend, row.kind, c.passed, c.unsupported, c.mismatches, c.errors
                );
            }
            if b.outside_errors > 0 {
                let _ = writeln!(
                    out,
                    "| {} | (outside any step) | | | | {} |",
                    b.backend, b.outside_errors
                );
            }
            let c = b.total;
            let _ = writeln!(
                out,
                "| {} | **all** ({:.0} steps/s) | {} | {} | {} | {} |",
                b.backend, b.steps_per_second, c.passed, c.unsupported, c.mismatches, c.errors
            );
        }

        let _ = writeln!(
            out,
            "\nmemory (after warm-up → after the run, dropped and synced):"
        );
        for b in self.backends.iter().filter(|b| b.skipped.is_none()) {
            let (Some(before), Some(after)) = (&b.memory_before, &b.memory_after) else {
                continue;
            };
            let _ = writeln!(
                out,
                "  {}: allocator in use {} → {}{}; driver free {} → {}",
                b.backend,
                before.in_use,
                after.in_use,
                if before.in_use.bytes().is_none() {
                    " (no allocator of its own)"
                } else if b.in_use_returned {
                    " (returned)"
                } else {
                    " (NOT returned)"
                },
                before.driver_free,
                after.driver_free
            );
        }
        let r = &self.rss;
        let opt = |b: Option<u64>| b.map_or("n/a".to_string(), mib);
        let _ = writeln!(
            out,
            "  process RSS: {} before, {} after; median {} in the second quarter, {} in the last \
             (growth {}, bound {}), peak {}: {}",
            opt(self.rss_before),
            opt(self.rss_after),
            opt(r.second_quarter_median),
            opt(r.last_quarter_median),
            r.growth.map_or("n/a".to_string(), |g| {
                let sign = if g < 0 { "-" } else { "+" };
                format!("{sign}{}", mib(g.unsigned_abs()))
            }),
            mib(r.bound),
            opt(r.peak),
            match (r.judged, r.passed) {
                (false, _) => "not judged (runs of 60 s and more are)",
                (true, true) => "flat",
                (true, false) => "GROWING",
            }
        );

        let unsupported: Vec<String> = self
            .backends
            .iter()
            .flat_map(|b| {
                b.kinds.iter().filter_map(move |k| {
                    k.unsupported_reason
                        .as_ref()
                        .map(|why| format!("  {} {}: {}", b.backend, k.kind, one_line(why)))
                })
            })
            .collect();
        if !unsupported.is_empty() {
            let _ = writeln!(out, "\nunsupported (first reason each):");
            for line in unsupported {
                let _ = writeln!(out, "{line}");
            }
        }

        if !self.failures.is_empty() {
            let _ = writeln!(out, "\nfailures:");
            for f in self.failures.iter().take(PRINTED_FAILURES) {
                let _ = writeln!(out, "  {f}");
            }
            let more = (self.failures.len().saturating_sub(PRINTED_FAILURES)) as u64
                + self.failures_not_listed;
            if more > 0 {
                let _ = writeln!(out, "  ... and {more} more");
            }
        }
        let _ = writeln!(
            out,
            "\nseed {} ({} s, threads a backend: {}): {}",
            self.seed,
            self.seconds,
            self.threads,
            if self.passed { "PASSED" } else { "FAILED" }
        );
        for v in &self.verdicts {
            let _ = writeln!(out, "  {v}");
        }
        out
    }
}

/// A reason on one line, for a table cell.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why the run failed, one line each; empty when it passed.
pub fn verdicts(reports: &[BackendReport], rss: &RssVerdict, hung: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in reports.iter().filter(|r| r.skipped.is_none()) {
        let t = r.total;
        if t.failed() > 0 {
            out.push(format!(
                "{}: {} mismatches, {} errors",
                r.backend, t.mismatches, t.errors
            ));
        }
        if !r.in_use_returned {
            out.push(format!(
                "{}: the allocator hands out {} after the run, {} before",
                r.backend,
                r.memory_after
                    .as_ref()
                    .map_or("?".into(), |m| m.in_use.to_string()),
                r.memory_before
                    .as_ref()
                    .map_or("?".into(), |m| m.in_use.to_string()),
            ));
        }
    }
    if !rss.passed {
        out.push(format!(
            "resident memory grew by {} between the second and last quarter (bound {})",
            rss.growth.map_or("?".into(), |g| mib(g.unsigned_abs())),
            mib(rss.bound)
        ));
    }
    if hung {
        out.push("a worker did not finish its step (memory after the run not read)".into());
    }
    out
}
