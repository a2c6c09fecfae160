//! Work on two new streams ordered by events. Stream 1 is held back by a
//! short gate, uploads and marks that it has run; stream 2 waits for its
//! event, notes whether the mark is there, then copies (and, for floats,
//! doubles) an array of its own; stream 1 waits for stream 2's event and
//! notes whether stream 2 finished. Stream 2's arrays are its own, so
//! nothing but the event orders it: a `wait` that did nothing would be
//! hidden by the arrays' own ordering if it touched stream 1's. A host
//! function on stream 1 must have run by its sync, and timed events must
//! time the work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rand::Rng;
use unigpu::{GpuArray, Stream};

use super::{Outcome, Step, StepResult, verdict};
use crate::soak::check::{Difference, first_bit_difference, first_unequal};
use crate::soak::values::{SoakElement, SoakFloat, any_bits, length, small};

pub fn run(step: &mut Step) -> StepResult {
    match step.rng.random_range(0..6) {
        0 => doubled::<f32>(step),
        1 => doubled::<unigpu::f16>(step),
        2 => doubled::<unigpu::bf16>(step),
        3 => carried::<u8>(step),
        4 => carried::<i64>(step),
        _ => carried::<f64>(step),
    }
}

/// Any bit pattern, copied through: every bit must come back.
fn carried<T: SoakElement>(step: &mut Step) -> StepResult {
    let n = length(&mut step.rng);
    let host = any_bits::<T>(&mut step.rng, n);
    let (got, broken) = choreography(step, &host, |_, _| Ok(()))?;
    if let Some(outcome) = broken {
        return Ok(outcome);
    }
    Ok(verdict(first_bit_difference(&host, &got), || {
        (
            format!("two streams and events {}", T::DTYPE),
            format!("n={n}"),
        )
    }))
}

/// Small floats, doubled on stream 2 after the copy (exact).
fn doubled<T: SoakFloat>(step: &mut Step) -> StepResult {
    let n = length(&mut step.rng);
    let host = small::<T>(&mut step.rng, n);
    let ctx = step.target.ctx.clone();
    let two = T::from_f64(2.0);
    let (got, broken) = choreography(step, &host, |s, b| ctx.ops_on(s).scale(two, b))?;
    if let Some(outcome) = broken {
        return Ok(outcome);
    }
    let expected: Vec<T> = host
        .iter()
        .map(|x| T::from_acc(two.to_acc() * x.to_acc()))
        .collect();
    Ok(verdict(first_unequal(&expected, &got), || {
        (
            format!("two streams, events and scale {}", T::DTYPE),
            format!("n={n}"),
        )
    }))
}

/// How long the gate holds stream 1 unless stream 2's first host function
/// opens it first (which only a stream 2 that did not wait can do). Long
/// enough for a stream 2 that runs at once to get there; the gate opens by
/// itself, so nothing the host thread does can block on it.
const HOLD: Duration = Duration::from_millis(5);

/// The two-stream work around `on_second` (run on stream 2 after its
/// copy): the downloaded result, and a mismatch where a promise of the
/// stream API itself broke (stream 2 running before the event it waits
/// for, a host function not run by the sync, an event pending after its
/// sync, a negative time).
fn choreography<T: SoakElement>(
    step: &mut Step,
    host: &[T],
    on_second: impl FnOnce(&Stream, &mut GpuArray<T>) -> unigpu::Result<()>,
) -> unigpu::Result<(Vec<T>, Option<Outcome>)> {
    let ctx = &step.target.ctx;
    let n = host.len();
    let timed = step.rng.random_bool(0.3);
    let (first, second) = (ctx.create_stream()?, ctx.create_stream()?);
    let mut a = ctx.alloc::<T>(n)?;
    // Stream 2's source, ready before any of this.
    let own = ctx.upload(host)?;
    let mut b = ctx.alloc::<T>(n)?;
    ctx.sync()?;
    let start = if timed {
        Some(first.record_timed()?)
    } else {
        None
    };
    let (open, gate) = mpsc::channel::<()>();
    first.host_fn(move || {
        let _ = gate.recv_timeout(HOLD);
    })?;
    first.upload(host, &mut a)?;
    let produced = Arc::new(AtomicBool::new(false));
    let mark = Arc::clone(&produced);
    first.host_fn(move || mark.store(true, Ordering::SeqCst))?;
    let uploaded = first.record()?;
    second.wait(&uploaded)?;
    let saw_first = Arc::new(AtomicBool::new(false));
    let (seen, look) = (Arc::clone(&saw_first), Arc::clone(&produced));
    second.host_fn(move || {
        seen.store(look.load(Ordering::SeqCst), Ordering::SeqCst);
        let _ = open.send(());
    })?;
    second.copy(&own, &mut b)?;
    on_second(&second, &mut b)?;
    let finished = Arc::new(AtomicBool::new(false));
    let fin = Arc::clone(&finished);
    second.host_fn(move || fin.store(true, Ordering::SeqCst))?;
    let done = second.record()?;
    first.wait(&done)?;
    let (ran, saw_second) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (flag, seen2, look2) = (
        Arc::clone(&ran),
        Arc::clone(&saw_second),
        Arc::clone(&finished),
    );
    first.host_fn(move || {
        seen2.store(look2.load(Ordering::SeqCst), Ordering::SeqCst);
        flag.store(true, Ordering::SeqCst);
    })?;
    let uploaded_back = first.download(&a)?;
    let end = if timed {
        Some(first.record_timed()?)
    } else {
        None
    };
    first.sync()?;
    done.sync()?;
    let got = second.download(&b)?;

    let broken = |what: &str, got: String| {
        verdict(Some(not_as_promised(got)), || {
            (format!("{what} {}", T::DTYPE), format!("n={n}"))
        })
    };
    if !ran.load(Ordering::SeqCst) {
        let outcome = broken("host_fn", "not run by its stream's sync".into());
        return Ok((got, Some(outcome)));
    }
    if !saw_first.load(Ordering::SeqCst) {
        let outcome = broken(
            "Stream::wait",
            "stream 2 ran before the event it waits for".into(),
        );
        return Ok((got, Some(outcome)));
    }
    if !saw_second.load(Ordering::SeqCst) {
        let outcome = broken(
            "Stream::wait",
            "stream 1 ran before the event it waits for".into(),
        );
        return Ok((got, Some(outcome)));
    }
    if let Some(difference) = first_bit_difference(host, &uploaded_back) {
        let outcome = verdict(Some(difference), || {
            (format!("stream 1's upload {}", T::DTYPE), format!("n={n}"))
        });
        return Ok((got, Some(outcome)));
    }
    if !done.query()? {
        let outcome = broken("event", "pending after its sync".into());
        return Ok((got, Some(outcome)));
    }
    if let (Some(start), Some(end)) = (start, end) {
        let ms = start.elapsed_ms(&end)?;
        if !(ms.is_finite() && ms >= 0.0) {
            let outcome = broken("timed events", format!("{ms} ms between them"));
            return Ok((got, Some(outcome)));
        }
    }
    Ok((got, None))
}

/// A promise of the stream API that did not hold, as a difference at no
/// particular element.
fn not_as_promised(got: String) -> Difference {
    Difference {
        index: 0,
        len: 0,
        expected: "what the stream API promises".into(),
        got,
        tolerance: None,
    }
}
