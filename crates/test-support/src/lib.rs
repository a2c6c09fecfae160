//! What the workspace's tests share, written once (a dev-dependency only).
//!
//! - [`child`]: re-run one test of the calling test binary in a new
//!   process, with environment variables set, and read what it printed —
//!   for what a process reads once (a driver override, a cache directory)
//!   or cannot survive (a GPU fault poisons CUDA for the process).
//! - [`c_program`]: build a crate's staticlib with cargo, compile a C
//!   program against it, and find valgrind for the memory check.
//!
//! Rules: nothing here depends on another crate of the workspace, so any
//! crate's tests may use it; helpers panic with everything the child or
//! compiler printed, since they run only inside tests.

pub mod c_program;
pub mod child;
