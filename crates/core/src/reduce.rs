//! The reductions collectives combine ranks' elements with.

/// How a reduction combines the ranks' elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// The sum divided by the number of ranks (integer types divide the
    /// integer sum, as NCCL does).
    Avg,
}
