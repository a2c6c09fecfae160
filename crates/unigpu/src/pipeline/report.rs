//! `PipelineReport`: how much of the overlap a pipelined run got.

use std::fmt;

use super::timeline::Timeline;

/// The overlap figures of a pipelined run, against the sequential run of
/// the same batches (docs/pipelines.md#the-overlap-formula).
///
/// With `s_u`, `s_c`, `s_d` the three stages' times summed over the
/// batches of the sequential run (so nothing else ran beside them):
/// - `ideal_speedup = (s_u + s_c + s_d) / max(s_u, s_c, s_d)`: what a
///   pipeline gets when every stage is busy all the time, the limit for
///   many batches;
/// - `achieved_speedup = sequential_ms / wall_ms`;
/// - `overlap_efficiency = achieved_speedup / ideal_speedup`.
///
/// A finite run cannot reach the limit: the first batch's upload and the
/// last batch's download have nothing beside them. With `n` batches of
/// per-batch stage sum `S` and slowest stage `M`, a perfect pipeline takes
/// `S + (n - 1) M`, so `ideal_speedup_for_batches = n S / (S + (n - 1) M)`
/// and `efficiency_for_batches` is measured against that. When the
/// pipelined run moved each batch in `pieces` pieces, `n` counts pieces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PipelineReport {
    pub batches: usize,
    /// Pieces each batch was split into for the pipelined run (1: whole
    /// batches, as the sequential run moves them).
    pub pieces: usize,
    /// Upload, compute, download: each summed over the sequential run's
    /// batches, from its timed events.
    pub stage_ms: [f64; 3],
    /// Host wall time of the sequential run.
    pub sequential_ms: f64,
    /// Host wall time of the pipelined run.
    pub wall_ms: f64,
    pub ideal_speedup: f64,
    pub ideal_speedup_for_batches: f64,
    pub achieved_speedup: f64,
    pub overlap_efficiency: f64,
    pub efficiency_for_batches: f64,
}

impl PipelineReport {
    /// The figures from a sequential run's timeline and the wall time of a
    /// pipelined run of the same batches.
    pub fn new(sequential: &Timeline, pipelined_wall_ms: f64) -> PipelineReport {
        PipelineReport::with_pieces(sequential, pipelined_wall_ms, 1)
    }

    /// [`PipelineReport::new`] for a pipelined run that moved each batch
    /// of the sequential run in `pieces` equal pieces.
    pub fn with_pieces(
        sequential: &Timeline,
        pipelined_wall_ms: f64,
        pieces: usize,
    ) -> PipelineReport {
        let stage_ms = sequential.stage_ms();
        let pieces = pieces.max(1);
        let n = (sequential.batches() * pieces) as f64;
        let sum: f64 = stage_ms.iter().sum();
        let slowest = stage_ms.iter().copied().fold(0.0, f64::max);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let ideal = ratio(sum, slowest);
        // Per batch: S = sum / n, M = slowest / n; n S / (S + (n-1) M).
        let ideal_n = ratio(sum, (sum + (n - 1.0) * slowest) / n.max(1.0));
        let achieved = ratio(sequential.wall_ms(), pipelined_wall_ms);
        PipelineReport {
            batches: sequential.batches(),
            pieces,
            stage_ms,
            sequential_ms: sequential.wall_ms(),
            wall_ms: pipelined_wall_ms,
            ideal_speedup: ideal,
            ideal_speedup_for_batches: ideal_n,
            achieved_speedup: achieved,
            overlap_efficiency: ratio(achieved, ideal),
            efficiency_for_batches: ratio(achieved, ideal_n),
        }
    }
}

/// `name value` lines, the shape of bench/anchors/torch_cupy_baseline.py's
/// output, with per-batch stage times as it prints them.
impl fmt::Display for PipelineReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_batch = |ms: f64| ms / self.batches.max(1) as f64;
        let [up, comp, down] = self.stage_ms.map(per_batch);
        writeln!(f, "pipe_batches {}", self.batches)?;
        writeln!(f, "pipe_pieces_per_batch {}", self.pieces)?;
        writeln!(f, "pipe_stage_upload_ms {up:.3}")?;
        writeln!(f, "pipe_stage_compute_ms {comp:.3}")?;
        writeln!(f, "pipe_stage_download_ms {down:.3}")?;
        writeln!(f, "pipe_ideal_speedup {:.3}", self.ideal_speedup)?;
        writeln!(
            f,
            "pipe_ideal_speedup_for_batches {:.3}",
            self.ideal_speedup_for_batches
        )?;
        writeln!(f, "pipe_sequential_ms {:.3}", self.sequential_ms)?;
        writeln!(f, "pipe_pipelined_ms {:.3}", self.wall_ms)?;
        writeln!(f, "pipe_speedup {:.3}", self.achieved_speedup)?;
        writeln!(f, "pipe_overlap_efficiency {:.3}", self.overlap_efficiency)?;
        write!(
            f,
            "pipe_efficiency_for_batches {:.3}",
            self.efficiency_for_batches
        )
    }
}
