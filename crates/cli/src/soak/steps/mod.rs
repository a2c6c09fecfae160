//! The soak's steps: one kind of work each, with random sizes and element
//! types, every result checked against the host. A step returns what it
//! found; an `Err` is a call that should have worked and did not.

mod dlpack;
mod elementwise;
mod graph;
mod kernel;
mod matmul;
mod pipeline;
mod reduction;
mod streams;
mod transfer;

use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;
use unigpu::{Error, Stream};

use super::check::Difference;
use super::target::Target;

/// The kinds of step, one file each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Transfer,
    Elementwise,
    Reduction,
    Matmul,
    Kernel,
    Streams,
    Graph,
    Pipeline,
    Dlpack,
}

impl OpKind {
    pub const ALL: [OpKind; 9] = [
        OpKind::Transfer,
        OpKind::Elementwise,
        OpKind::Reduction,
        OpKind::Matmul,
        OpKind::Kernel,
        OpKind::Streams,
        OpKind::Graph,
        OpKind::Pipeline,
        OpKind::Dlpack,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Transfer => "transfer",
            OpKind::Elementwise => "elementwise",
            OpKind::Reduction => "reduction",
            OpKind::Matmul => "matmul",
            OpKind::Kernel => "kernel",
            OpKind::Streams => "streams",
            OpKind::Graph => "graph",
            OpKind::Pipeline => "pipeline",
            OpKind::Dlpack => "dlpack",
        }
    }

    pub fn parse(s: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn names() -> String {
        OpKind::ALL.map(OpKind::name).join(", ")
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// A result that is not the host's.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    /// The op and element type (`axpy f16`, `graph replay 2 of 3 bf16`).
    pub what: String,
    /// The sizes the step drew (`n=4099`, `m=33 k=65 n=17`).
    pub sizes: String,
    pub difference: Difference,
}

/// What one step found.
#[derive(Debug)]
pub enum Outcome {
    /// Every result matched the host's.
    Passed,
    /// The backend refused the work in a way its docs allow (graph
    /// capture, DLPack on vulkan, f64 on an adapter without it); the text
    /// is its reason.
    Unsupported(String),
    Mismatch(Mismatch),
}

pub type StepResult = unigpu::Result<Outcome>;

/// Everything one step draws from and works on.
#[derive(Debug)]
pub struct Step<'a> {
    pub target: &'a Target,
    /// Seeded from the worker's generator: the step's sizes, types and
    /// values all come from here.
    pub rng: StdRng,
    /// Corrupt one element of a transfer's result before checking it
    /// (`--inject-mismatch`: shows that the checks catch a wrong result).
    pub inject_mismatch: bool,
    /// Set by the step that corrupted a result.
    pub injected: bool,
}

impl Step<'_> {
    /// The stream to work on: the default one, or a new one (streams are
    /// made and dropped all through the run).
    pub fn any_stream(&mut self) -> unigpu::Result<Stream> {
        if self.rng.random_bool(0.5) {
            Ok(self.target.ctx.default_stream().clone())
        } else {
            self.target.ctx.create_stream()
        }
    }
}

/// Runs one step of `kind`.
pub fn run(kind: OpKind, step: &mut Step) -> StepResult {
    match kind {
        OpKind::Transfer => transfer::run(step),
        OpKind::Elementwise => elementwise::run(step),
        OpKind::Reduction => reduction::run(step),
        OpKind::Matmul => matmul::run(step),
        OpKind::Kernel => kernel::run(step),
        OpKind::Streams => streams::run(step),
        OpKind::Graph => graph::run(step),
        OpKind::Pipeline => pipeline::run(step),
        OpKind::Dlpack => dlpack::run(step),
    }
}

/// Whether `e` is the backend saying it cannot do this.
pub fn is_unsupported(e: &Error) -> bool {
    matches!(e.root(), Error::Unsupported { .. })
}

/// `body`'s result, with an `Unsupported` error counted as a refusal
/// where `may_refuse` says the backend is allowed one.
pub fn refusable(may_refuse: bool, body: impl FnOnce() -> StepResult) -> StepResult {
    match body() {
        Err(e) if may_refuse && is_unsupported(&e) => Ok(Outcome::Unsupported(e.to_string())),
        other => other,
    }
}

/// `Passed`, or the mismatch `difference` describes.
pub fn verdict(difference: Option<Difference>, what: impl FnOnce() -> (String, String)) -> Outcome {
    match difference {
        None => Outcome::Passed,
        Some(difference) => {
            let (what, sizes) = what();
            Outcome::Mismatch(Mismatch {
                what,
                sizes,
                difference,
            })
        }
    }
}
