//! Graph replay: 100 empty kernels captured once, replayed 200 times, as
//! floor.cu and torch_cupy_baseline.py measure it (the cost per kernel,
//! the final sync included).

use std::time::Instant;

use unigpu::Grid;

use super::{Better, Case, Env, Out, any_backend, median};

pub const CASE: Case = Case {
    name: "graph",
    group: "graph",
    skip: any_backend,
    run: graph,
};

const KERNELS: usize = 100;
const REPLAYS: usize = 200;

fn graph(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    let k = super::launch::empty_kernel(ctx)?;
    let s = ctx.create_stream()?;
    let g = Grid::new((1, 1, 1), (1, 1, 1));
    let graph = s.capture(|s| (0..KERNELS).try_for_each(|_| s.launch(&k, g, ())))?;
    graph.launch(&s)?;
    s.sync()?;
    // Five rounds; the median round is reported.
    let (mut per_kernel, mut submit) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..REPLAYS {
            graph.launch(&s)?;
        }
        submit.push(t.elapsed().as_secs_f64() * 1e6 / REPLAYS as f64);
        s.sync()?;
        per_kernel.push(t.elapsed().as_secs_f64() * 1e6 / (REPLAYS * KERNELS) as f64);
    }
    out.figure(
        "unigpu_graph_per_kernel_us",
        format!(
            "graph replay of {KERNELS} empty kernels ({} nodes), per kernel",
            graph.len()
        ),
        "µs",
        Better::Lower,
        median(per_kernel),
    );
    // The host's part: what one `Graph::launch` call costs to submit.
    out.figure(
        "unigpu_graph_launch_submit_us",
        "graph launch, submit (per replay)",
        "µs",
        Better::Lower,
        median(submit),
    );
    Ok(())
}
