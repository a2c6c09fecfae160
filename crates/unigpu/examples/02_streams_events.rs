//! Two streams ordered by an event, timed with events.
//!
//!     cargo run -p unigpu --example 02_streams_events

use unigpu::Context;

fn main() -> unigpu::Result<()> {
    let ctx = Context::default()?;
    let n = 4 << 20;
    let host: Vec<u32> = (0..n as u32).collect();

    let (upload, compute) = (ctx.create_stream()?, ctx.create_stream()?);
    let mut staged = ctx.alloc::<u32>(n)?;
    let mut result = ctx.alloc::<u32>(n)?;

    let start = upload.record_timed()?; // timed: elapsed_ms measures it
    upload.upload(&host, &mut staged)?;
    let uploaded = upload.record_timed()?;

    // `compute` waits for the upload, not for anything else on `upload`.
    compute.wait(&uploaded)?;
    compute.copy(&staged, &mut result)?;
    let copied = compute.record_timed()?;
    compute.host_fn(|| println!("host function: the copy is done"))?;

    println!("idle right after enqueueing? {}", compute.is_idle()?);
    compute.sync()?;
    assert_eq!(compute.download(&result)?, host);
    println!(
        "upload {:.3} ms, upload+copy {:.3} ms on {}",
        start.elapsed_ms(&uploaded)?,
        start.elapsed_ms(&copied)?,
        ctx.backend()
    );
    Ok(())
}
