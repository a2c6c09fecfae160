//! What the run shows while it goes: a time-based progress bar on a
//! terminal, a status line every 15 s otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::memory::mib;
use super::running::Running;

/// How often a status line is printed when stderr is not a terminal.
pub const LOG_EVERY: Duration = Duration::from_secs(15);

/// The status: steps per backend, failures, resident memory.
pub fn status_line(runs: &[Running], rss: Option<u64>, finishing: bool) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let steps: Vec<String> = runs
        .iter()
        .map(|r| format!("{} {}", r.target.backend, r.live.steps.load(Relaxed)))
        .collect();
    let failed: u64 = runs.iter().map(|r| r.live.failures.load(Relaxed)).sum();
    format!(
        "steps: {}; {failed} failed; RSS {}{}",
        steps.join(", "),
        rss.map_or("n/a".into(), mib),
        if finishing {
            "; finishing the last steps"
        } else {
            ""
        }
    )
}

pub fn bar(quiet: bool, seconds: f64) -> ProgressBar {
    let bar =
        ProgressBar::with_draw_target(Some(seconds.ceil() as u64), ProgressDrawTarget::hidden());
    if !quiet && std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} s  {msg}") {
            bar.set_style(style);
        }
    }
    bar
}
