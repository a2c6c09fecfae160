//! Re-running a test of this test binary in a child process.
//!
//! The child is the same executable asked for one test by its exact name
//! (`--include-ignored`, so GPU tests run too), on one thread, printing
//! to its captured stdout. The calling test tells itself apart by an
//! environment variable it sets for the child.

use std::process::{Command, ExitStatus};

/// A command that runs test `name` of this test binary, alone; add
/// environment variables, then run it (or use [`rerun`]).
pub fn test_command(name: &str) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        name,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd
}

/// Runs test `name` of this test binary in a child process with `env` set
/// and waits for it.
pub fn rerun(name: &str, env: &[(&str, &str)]) -> ChildRun {
    let mut cmd = test_command(name);
    for (k, v) in env {
        cmd.env(k, v);
    }
    ChildRun::of(&mut cmd)
}

/// How a child run ended and what it printed.
#[derive(Debug)]
pub struct ChildRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl ChildRun {
    /// Runs `cmd` to its end, capturing both streams.
    pub fn of(cmd: &mut Command) -> ChildRun {
        let out = cmd.output().expect("running the child process");
        ChildRun {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Panics, showing both streams, unless the child exited with 0.
    #[track_caller]
    pub fn assert_success(&self) -> &ChildRun {
        assert!(
            self.status.success(),
            "the child failed ({}):\n{}\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panics unless the child printed each of `markers` (what its checks
    /// print once they held: a child that skipped them prints none),
    /// whatever its exit status.
    #[track_caller]
    pub fn assert_printed(&self, markers: &[&str]) -> &ChildRun {
        let missing: Vec<&&str> = markers
            .iter()
            .filter(|m| !self.stdout.contains(**m))
            .collect();
        assert!(
            missing.is_empty(),
            "the child ({}) did not print {missing:?}:\n{}\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panics unless the child exited with 0 and printed each of `markers`.
    #[track_caller]
    pub fn assert_ran(&self, markers: &[&str]) -> &ChildRun {
        self.assert_success().assert_printed(markers)
    }

    /// The rest of the first stdout line that starts with `prefix`.
    #[track_caller]
    pub fn value(&self, prefix: &str) -> &str {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{}", self.stdout))
    }
}
