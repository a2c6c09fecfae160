//! The per-call costs behind every array and every stream handoff:
//! allocating and freeing an array, and recording an event.

use std::time::Instant;

use super::{Better, Case, Env, Out, any_backend, median};

pub const ALLOC_CASE: Case = Case {
    name: "alloc_free",
    group: "memory",
    skip: any_backend,
    run: alloc_free,
};

pub const EVENT_CASE: Case = Case {
    name: "event_record",
    group: "events",
    skip: any_backend,
    run: event_record,
};

/// Per-call µs of `op`, as the median of five rounds of about 50 ms each
/// (one round can land on a noisy moment of a shared host).
fn per_call(mut op: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let t = Instant::now();
    for _ in 0..100 {
        op()?;
    }
    let each = t.elapsed().as_secs_f64() / 100.0;
    let n = ((0.05 / each) as usize).clamp(100, 200_000);
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            op()?;
        }
        rounds.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    Ok(median(rounds))
}

fn alloc_free(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let ctx = &env.ctx;
    // Allocation without initialising, then the drop: what an op's
    // temporary costs (torch.empty + del, cuMemAllocAsync + cuMemFreeAsync).
    let us = per_call(|| {
        drop(ctx.alloc::<u8>(1 << 20)?);
        Ok(())
    })?;
    ctx.sync()?;
    out.figure(
        "unigpu_alloc_free_1MiB_us_median",
        "alloc + free 1 MiB",
        "µs",
        Better::Lower,
        us,
    );
    Ok(())
}

fn event_record(env: &Env, out: &mut Out) -> anyhow::Result<()> {
    let s = env.ctx.create_stream()?;
    let untimed = per_call(|| {
        drop(s.record()?);
        Ok(())
    })?;
    s.sync()?;
    let timed = per_call(|| {
        drop(s.record_timed()?);
        Ok(())
    })?;
    s.sync()?;
    out.figure(
        "unigpu_event_record_us_median",
        "Stream::record (untimed event, from the pool)",
        "µs",
        Better::Lower,
        untimed,
    );
    out.figure(
        "unigpu_event_record_timed_us_median",
        "Stream::record_timed",
        "µs",
        Better::Lower,
        timed,
    );
    Ok(())
}
