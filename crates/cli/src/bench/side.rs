//! Which context a shared case measures: the run's own, or vulkan beside
//! it (vulkan.rs). axpy.rs, matmul.rs, launch.rs and transfer.rs measure
//! through an [`On`], so one function gives both sets of figures; the
//! vulkan set keeps the `unigpu_vulkan_` names that bench/runners/ratios.py,
//! docs/benchmarks.md and the results in bench/results/ use.

use std::fmt::Display;

use unigpu::{Backend, Context};

use super::Env;

/// The run's own context, or vulkan adapter 0 beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Run,
    Vulkan,
}

/// A context to measure, and how to name its figures.
#[derive(Debug, Clone, Copy)]
pub struct On<'a> {
    pub ctx: &'a Context,
    pub side: Side,
    /// The smaller sizes: the CPU backend, or a software Vulkan adapter
    /// (lavapipe), where the GPU sizes would take minutes.
    pub small: bool,
}

impl<'a> On<'a> {
    /// The run's own context (`--backend`, or `Context::default()`).
    pub fn run(env: &'a Env) -> On<'a> {
        On {
            ctx: &env.ctx,
            side: Side::Run,
            small: env.ctx.backend() == Backend::Cpu,
        }
    }

    /// A vulkan context beside the run's.
    pub fn vulkan(ctx: &'a Context, software: bool) -> On<'a> {
        On {
            ctx,
            side: Side::Vulkan,
            small: software,
        }
    }

    /// A figure's key: `unigpu_{rest}`, or `unigpu_vulkan_{rest}` beside.
    pub fn key(&self, rest: &str) -> String {
        match self.side {
            Side::Run => format!("unigpu_{rest}"),
            Side::Vulkan => format!("unigpu_vulkan_{rest}"),
        }
    }

    /// A figure's label (or an error's text), `vulkan ` in front beside.
    pub fn label(&self, rest: impl Display) -> String {
        match self.side {
            Side::Run => rest.to_string(),
            Side::Vulkan => format!("vulkan {rest}"),
        }
    }
}
