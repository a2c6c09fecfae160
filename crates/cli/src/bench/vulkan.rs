//! The vulkan backend beside the run's own backend, in the same process:
//! axpy bandwidth, an f32 matmul, dispatch overhead and transfer rates,
//! each anchored to the same figure of the run's backend (cuda and cuBLAS
//! on the GPU machine, the CPU backend where Vulkan is Mesa's lavapipe).
//! Skipped, with the reason, where no Vulkan adapter opens, and when the
//! run itself is on vulkan (the other cases measure it then). Each case
//! is the run's own (axpy.rs, matmul.rs, launch.rs, transfer.rs) on a
//! vulkan context, under the `unigpu_vulkan_` names.

use unigpu::{Backend, Context};

use super::side::On;
use super::{Case, Out, axpy, launch, matmul, transfer};

pub const AXPY: Case = Case {
    name: "vulkan_axpy",
    group: "vulkan",
    skip: unavailable,
    run: |_, out| on_vulkan(out, axpy::axpy),
};

pub const MATMUL: Case = Case {
    name: "vulkan_matmul_f32",
    group: "vulkan",
    skip: unavailable,
    run: |_, out| on_vulkan(out, |on, out| matmul::matmul::<f32>(on, out, "f32")),
};

pub const DISPATCH: Case = Case {
    name: "vulkan_dispatch",
    group: "vulkan",
    skip: unavailable,
    run: |_, out| on_vulkan(out, launch::launch),
};

pub const TRANSFER: Case = Case {
    name: "vulkan_transfer",
    group: "vulkan",
    skip: unavailable,
    run: |env, out| on_vulkan(out, |on, out| transfer::transfer(on, env.reps, out)),
};

fn unavailable(ctx: &Context) -> Option<String> {
    if ctx.backend() == Backend::Vulkan {
        return Some("this run is on vulkan: the other cases measure it".into());
    }
    Context::new(Backend::Vulkan, 0)
        .err()
        .map(|e| e.to_string())
}

/// Runs `case` on vulkan adapter 0 (a software one gets the smaller sizes).
fn on_vulkan(
    out: &mut Out,
    case: impl FnOnce(&On, &mut Out) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let ctx = Context::new(Backend::Vulkan, 0)?;
    let info = ctx.device_info()?;
    let software = info
        .details
        .iter()
        .any(|(k, v)| k == "type" && v.starts_with("software"));
    out.info("unigpu_vulkan_adapter", info.name.replace(' ', "_"));
    case(&On::vulkan(&ctx, software), out)
}
