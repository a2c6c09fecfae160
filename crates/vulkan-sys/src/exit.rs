//! Ending a process without the drivers' teardown.
//!
//! `exit` runs the `atexit` handlers and C++ static destructors of every
//! loaded library, the GPU drivers' included. NVIDIA's Vulkan driver can
//! deadlock there while a process still holds devices and their threads
//! (wgpu#8365); `unigpu soak` on a 4 × H100 host printed its verdict and
//! never ended (issue 25). A program that has written everything it means
//! to may end with [`exit_skipping_teardown`] instead: the kernel frees a
//! process's devices and memory when it ends.

use std::io::Write as _;

/// Flushes stdout and stderr, then ends the process with `code` at once
/// (`_exit`): no `atexit` handlers, no static destructors, no `Drop` of
/// anything still alive. Use it only when nothing is left to write.
pub fn exit_skipping_teardown(code: i32) -> ! {
    // Nothing is left to report a flush's failure to; the exit code stands.
    let _ = std::io::stdout().lock().flush();
    let _ = std::io::stderr().lock().flush();
    // SAFETY: `_exit` takes no pointers and ends the process at once; it is
    // async-signal-safe and valid from any thread in any state. What it
    // skips is what the caller asked to skip, and the buffered output was
    // flushed above.
    unsafe { libc::_exit(code) }
}
