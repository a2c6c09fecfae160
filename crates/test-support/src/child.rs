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

    /// What follows `prefix` on the first stdout line that holds it, to
    /// the end of that line. (Not only at a line's start: on one test
    /// thread libtest prints `test NAME ... ` before the test's own output,
    /// on the same line.)
    #[track_caller]
    pub fn value(&self, prefix: &str) -> &str {
        self.stdout
            .lines()
            .find_map(|l| l.find(prefix).map(|at| &l[at + prefix.len()..]))
            .unwrap_or_else(|| panic!("no `{prefix}` in:\n{}", self.stdout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stdout: &str) -> ChildRun {
        let status = Command::new("true").status().expect("running `true`");
        ChildRun {
            status,
            stdout: stdout.into(),
            stderr: String::new(),
        }
    }

    #[test]
    fn a_value_is_found_at_a_line_start_and_after_libtests_test_line() {
        assert_eq!(run("a\norigin=DiskCache\n").value("origin="), "DiskCache");
        let one_thread = "running 1 test\ntest disk_cache_x ... origin=Compiled\nok\n";
        assert_eq!(run(one_thread).value("origin="), "Compiled");
    }

    #[test]
    fn markers_are_asked_for_whatever_the_status() {
        run("checks-ran\n").assert_ran(&["checks-ran"]);
        let missing = std::panic::catch_unwind(|| {
            run("something else\n").assert_printed(&["checks-ran"]);
        });
        assert!(missing.is_err());
    }
}
