//! Memory before and after the run: each backend's allocator and driver
//! figures, and the process's resident memory sampled all through.

use std::time::Instant;

use serde::Serialize;
use unigpu::{Context, Error};

/// How far resident memory may grow between the second and the last
/// quarter of a run (the median sample of each), in bytes: 64 MiB.
///
/// Why these quarters: the first is the ramp, where allocator arenas,
/// wgpu's and lavapipe's pools and the stream threads fill up under the
/// workers' load (on lavapipe, 85 → 317 MiB over the first 16 s of a
/// 60 s run, flat after). A leak grows all through, so it shows between
/// the second quarter and the last, half a run apart.
///
/// Why this much: the samples catch the workers mid-step, holding the
/// arrays and host copies of whatever they run then (up to 1 Mi elements
/// of 8 bytes, several arrays and references each; on the CPU and
/// lavapipe backends device arrays are host memory too), and a ramp can
/// run on into the second quarter, so a healthy run's medians move: by
/// +4 to +34 MiB between those quarters in the 60 s cpu, vulkan and
/// cpu + vulkan runs of docs/reliability.md (+34: lavapipe's ramp ending
/// late). Why not more: a step allocates about 0.1–10 MiB, and a few
/// hundred steps a second leaking one small array each would pass this
/// within a minute. Shorter runs see slow leaks less; the figures are
/// printed either way.
pub const RSS_GROWTH_BOUND: u64 = 64 << 20;

/// The shortest run whose resident memory is judged, in seconds: the ramp
/// lasted 15–25 s on lavapipe, so in a shorter run it reaches into the
/// second quarter (a 20 s cpu + vulkan run's medians rose by 45 MiB
/// between the second quarter and the last, then flat in a longer one).
/// Shorter runs print the figures without a verdict.
pub const RSS_JUDGED_FROM: f64 = 60.0;

/// glibc's variable that fixes the size from which `malloc` maps memory
/// of its own (and `free` unmaps it).
const MMAP_THRESHOLD_VAR: &str = "MALLOC_MMAP_THRESHOLD_";
/// 64 KiB: every array's host copy and every CPU-backend array larger
/// than this is its own mapping, returned to the system when freed.
const MMAP_THRESHOLD: &str = "65536";

/// Runs this same command again with glibc's mmap threshold fixed (unless
/// it is set already), and returns the child's exit code; `None` in the
/// child itself.
///
/// Why: by default glibc raises the threshold to the size of the largest
/// mapped block freed so far (up to 32 MiB), after which blocks of up to
/// that size come from its heaps, and freed ones stay there, fragmented.
/// A soak frees blocks of every size from 0 to 8 MiB all the time: on the
/// CPU backend a healthy 60 s run's resident memory then grew from 84 to
/// 275 MiB (medians of its first and last quarter), and ended 170 MiB
/// above its start with every array dropped; the same run with the
/// threshold fixed grew by 15 MiB. Without the fix, the growth a leak
/// would add could not be told from the allocator's.
pub fn rerun_with_fixed_mmap_threshold() -> anyhow::Result<Option<i32>> {
    use anyhow::Context as _;
    if std::env::var_os(MMAP_THRESHOLD_VAR).is_some() {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("finding this program to run it again")?;
    let status = std::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(MMAP_THRESHOLD_VAR, MMAP_THRESHOLD)
        .status()
        .with_context(|| format!("running {} again", exe.display()))?;
    // A child ended by a signal has no code: a failure all the same.
    Ok(Some(status.code().unwrap_or(1)))
}

/// The allocator setting the resident figures were taken under.
pub fn allocator_note() -> String {
    let value = std::env::var(MMAP_THRESHOLD_VAR).unwrap_or_else(|_| "unset".into());
    format!(
        "{MMAP_THRESHOLD_VAR}={value}: glibc maps blocks from this size on and unmaps them when \
         freed, so resident memory follows what is live"
    )
}

/// A figure, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reading {
    Bytes(u64),
    Unavailable(String),
}

impl Reading {
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Reading::Bytes(b) => Some(*b),
            Reading::Unavailable(_) => None,
        }
    }
}

impl std::fmt::Display for Reading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reading::Bytes(b) => write!(f, "{}", mib(*b)),
            Reading::Unavailable(_) => f.write_str("n/a"),
        }
    }
}

/// `bytes` as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// One backend's memory figures at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceMemory {
    /// Bytes the backend's caching allocator hands out (`memory_stats`;
    /// cuda only: the others have no allocator of their own).
    pub in_use: Reading,
    /// The driver's free device memory (`memory_info`; system memory on
    /// the CPU backend, the heap budget on vulkan).
    pub driver_free: Reading,
}

/// Waits for all of `ctx`'s work, then gives its cached memory back.
/// Returns the first error on the way: an error the work raised, or
/// one kept from a drop (a sync returns it once), which the soak reports
/// as a failure.
pub fn settle(ctx: &Context) -> Option<Error> {
    let first = ctx.sync().err();
    // A kept error comes back once; a second sync must then succeed.
    let second = first.as_ref().and_then(|_| ctx.sync().err());
    let cache = match ctx.empty_cache() {
        Ok(_) | Err(Error::Unsupported { .. }) => None,
        Err(e) => Some(e),
    };
    first.or(second).or(cache)
}

pub fn read(ctx: &Context) -> DeviceMemory {
    DeviceMemory {
        in_use: match ctx.memory_stats() {
            Ok(s) => Reading::Bytes(s.in_use as u64),
            Err(e) => Reading::Unavailable(e.to_string()),
        },
        driver_free: match ctx.memory_info() {
            Ok(m) => Reading::Bytes(m.free as u64),
            Err(e) => Reading::Unavailable(e.to_string()),
        },
    }
}

/// The process's resident memory in bytes, from /proc/self/statm (its
/// second field, in pages of 4 KiB on every Linux this runs on: x86-64,
/// and arm64 with 4 KiB pages). `None` where there is no /proc.
pub fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Resident memory sampled while the workers run.
#[derive(Debug, Clone, Serialize)]
pub struct RssTrace {
    #[serde(skip)]
    start: Instant,
    /// (seconds since the workers started, bytes).
    pub samples: Vec<(f64, u64)>,
}

impl RssTrace {
    pub fn new(start: Instant) -> RssTrace {
        RssTrace {
            start,
            samples: Vec::new(),
        }
    }

    pub fn sample(&mut self) -> Option<u64> {
        let bytes = rss()?;
        self.samples
            .push((self.start.elapsed().as_secs_f64(), bytes));
        Some(bytes)
    }

    /// The median of the second quarter's samples against the last
    /// quarter's, over a run of `seconds`; judged from
    /// [`RSS_JUDGED_FROM`] seconds on.
    pub fn verdict(&self, seconds: f64) -> RssVerdict {
        // A run asked for 60 s ends a little after it.
        let judged = seconds >= RSS_JUDGED_FROM;
        let quarter = |from: f64, to: f64| {
            median(
                self.samples
                    .iter()
                    .filter(|(t, _)| *t >= from * seconds && *t <= to * seconds)
                    .map(|s| s.1)
                    .collect(),
            )
        };
        let (first, last) = (quarter(0.25, 0.5), quarter(0.75, 1.0));
        let growth = match (first, last) {
            (Some(f), Some(l)) => Some(l as i64 - f as i64),
            _ => None,
        };
        RssVerdict {
            second_quarter_median: first,
            last_quarter_median: last,
            growth,
            bound: RSS_GROWTH_BOUND,
            peak: self.samples.iter().map(|s| s.1).max(),
            judged,
            passed: !judged || growth.is_none_or(|g| g <= RSS_GROWTH_BOUND as i64),
        }
    }
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// Whether resident memory stayed flat.
#[derive(Debug, Clone, Serialize)]
pub struct RssVerdict {
    pub second_quarter_median: Option<u64>,
    pub last_quarter_median: Option<u64>,
    /// last − first, in bytes (negative: it shrank). `None` with too few
    /// samples in a quarter, which passes.
    pub growth: Option<i64>,
    pub bound: u64,
    pub peak: Option<u64>,
    /// Whether the run was long enough to judge ([`RSS_JUDGED_FROM`]).
    pub judged: bool,
    pub passed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(samples: &[(f64, u64)]) -> RssTrace {
        RssTrace {
            start: Instant::now(),
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn rss_is_read() {
        assert!(rss().is_some_and(|b| b > 0));
    }

    #[test]
    fn steady_growth_past_the_bound_fails_and_wandering_passes() {
        let mb = 1u64 << 20;
        // 4 MiB a second for 60 s: a leak.
        let leak: Vec<(f64, u64)> = (0..120)
            .map(|i| (i as f64 * 0.5, 200 * mb + i * 2 * mb))
            .collect();
        let v = trace(&leak).verdict(60.0);
        assert!(!v.passed, "{v:?}");
        assert!(v.growth.is_some_and(|g| g > RSS_GROWTH_BOUND as i64));
        // A ramp in the first quarter, then up and down by 40 MiB.
        let wander: Vec<(f64, u64)> = (0..120)
            .map(|i| {
                let ramp = i.min(30) * 8;
                (i as f64 * 0.5, 200 * mb + ramp * mb + (i % 7) * 6 * mb)
            })
            .collect();
        assert!(trace(&wander).verdict(60.0).passed);
        // Too short a run is not judged.
        let short = trace(&leak[..20]).verdict(10.0);
        assert!(!short.judged && short.passed, "{short:?}");
        // Up and down by 40 MiB, no trend.
        let wander: Vec<(f64, u64)> = (0..120)
            .map(|i| (i as f64 * 0.5, 200 * mb + (i % 7) * 6 * mb))
            .collect();
        assert!(trace(&wander).verdict(60.0).passed);
    }
}
